"""SpeakerRights (order 17): the model is told what the person it answers may not do here.

In a group (or wherever one memory is shared) the tools refuse a member what
`permissions.*` keeps for administrators; told beforehand, the model says so instead of
trying and apologising. A speaker who may do everything gets no line. The line goes
with the newest user message (`turn_notes`), not into the system prompt, whose beginning
stays the same from turn to turn. A scheduled task's turn carries the id of whoever set
it, so it has their rights.

Each right is named only when the turn offers a tool it concerns: a turn without tools (the
model server drops them, or the window leaves no room) gets no line about tools the model
cannot call. What a turn offers changes only with the window or the server's check, not
from turn to turn.
"""

from __future__ import annotations

from collections.abc import Callable

from mnemobot.bot.turn.permissions import EDIT_MEMORY, Permissions
from mnemobot.memory.store.scope_paths import all_chats_share
from mnemobot.systems.core.context import TurnContext

# (permission, what it lets one do, the tools that do it), in the order the line names them.
_RIGHTS = (
    (EDIT_MEMORY, "erase or rewrite what its memory and files hold", {"memory", "files"}),
    ("schedule", "schedule or cancel reminders and tasks", {"schedule"}),
)


class SpeakerRights:
    name = "SpeakerRights"
    order = 17

    def __init__(
        self, permissions: Permissions, offered_names: Callable[[TurnContext], frozenset[str]]
    ) -> None:
        self.permissions = permissions
        # The tools the turn offers (`ToolRegistry.offered_names`; this runs before
        # ToolOffering records them).
        self.offered_names = offered_names

    def enabled(self, ctx: TurnContext) -> bool:
        return ctx.chat.is_group or all_chats_share(ctx.config.memory.scope)

    async def process(self, ctx: TurnContext) -> None:
        offered = self.offered_names(ctx)
        may_not = [
            action
            for permission, action, tools in _RIGHTS
            if offered & tools and not await self.permissions.may(ctx.chat, permission)
        ]
        if not may_not:
            # Nothing is refused: nothing to say, and the request stays as it was.
            return
        who = ctx.chat.user_name or "The person who asked for this turn"
        ctx.turn_notes.append(
            f"{who} may add to this chat's memory and files, but may not "
            f"{'; nor '.join(may_not)}: such tool calls are refused, so say who may instead."
        )
