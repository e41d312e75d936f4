"""What a tool would have done, asked for on a model server that drops tools: the reply
says it was not done.

Such a server is never offered the tools (`tool_support`), so a request for a reminder
(`schedule.reminder_asks`) or to forget (`tools.forget_asks`) gets the model's words alone,
which may read as done. The reply to the request carries one line that says it was not,
and what the operator can do.
"""

from __future__ import annotations

from collections.abc import Callable

from mnemobot.bot.i18n import words_for
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.systems.core.context import TurnContext


class DroppedToolNote:
    """A pipeline system, after the tool loop: a turn whose words `asks` for what a dropped
    tool does ends with `note`, in the chat's language (`reply_notes`)."""

    order = 40

    def __init__(
        self,
        name: str,
        asks: Callable[[str], bool],
        note: str,
        dropped_by_server: Callable[[RuntimeConfig], bool],
    ) -> None:
        """`note`: the line's English words (marked with `N_` where they are written);
        `dropped_by_server` is read at each turn: the server's check may turn tools off
        after start."""
        self.name = name
        self.asks = asks
        self.note = note
        self.dropped_by_server = dropped_by_server

    def enabled(self, ctx: TurnContext) -> bool:
        scheduled = ctx.user_message is not None and ctx.user_message.get("scheduled")
        return ctx.reply is not None and not scheduled

    async def process(self, ctx: TurnContext) -> None:
        if self.dropped_by_server(ctx.config) and self.asks(ctx.user_text):
            ctx.reply_notes.append(words_for(ctx.chat.language).gettext(self.note))
