"""SpeakerRights (order 17): the model is told what the person it answers may not do here.

In a group (or wherever one memory is shared) the tools refuse a member what
`permissions.*` keeps for administrators; told beforehand, the model says so instead of
trying and apologising. A speaker who may do everything gets no line. The line goes
with the newest user message (`turn_notes`), not into the system prompt, whose beginning
stays the same from turn to turn. A scheduled task's turn carries the id of whoever set
it, so it has their rights.
"""

from __future__ import annotations

from mnemobot.bot.turn.permissions import EDIT_MEMORY, Permissions
from mnemobot.memory.store.scope_paths import all_chats_share
from mnemobot.systems.core.context import TurnContext

# (permission, what it lets one do), in the order the line names them.
_RIGHTS = (
    (EDIT_MEMORY, "erase or rewrite what its memory and files hold"),
    ("schedule", "schedule or cancel reminders and tasks"),
)


class SpeakerRights:
    name = "SpeakerRights"
    order = 17

    def __init__(self, permissions: Permissions) -> None:
        self.permissions = permissions

    def enabled(self, ctx: TurnContext) -> bool:
        return ctx.chat.is_group or all_chats_share(ctx.config.memory.scope)

    async def process(self, ctx: TurnContext) -> None:
        may_not = [
            action
            for permission, action in _RIGHTS
            if not await self.permissions.may(ctx.chat, permission)
        ]
        if not may_not:
            # Nothing is refused: nothing to say, and the request stays as it was.
            return
        who = ctx.chat.user_name or "The person who asked for this turn"
        ctx.turn_notes.append(
            f"{who} may add to this chat's memory and files, but may not "
            f"{'; nor '.join(may_not)}: such tool calls are refused, so say who may instead."
        )
