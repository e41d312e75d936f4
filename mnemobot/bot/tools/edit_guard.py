"""Who may have the tools erase or rewrite a chat's memory and files.

Decided above the tools (`bot.turn.permissions`, `permissions.editMemory`) and handed to
them as a callable, so a group's memory has one rule whichever door is used: `/forget_me`,
the memory tool or the files tool. Adding stays open to everyone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot.systems.core.tool_runner import ToolError

# Why the user of a chat may not erase or rewrite its memory and files; None: they may.
EditRefusal = Callable[[ChatRef], Awaitable[str | None]]


async def check_may_edit(refusal: EditRefusal | None, ctx: TurnContext, what: str) -> None:
    """Raise the ToolError the model is told when the turn's speaker may not `what`
    ("forget memory items"): nothing was changed, and the reply should say why."""
    if refusal is None:
        return
    reason = await refusal(ctx.chat)
    if reason is not None:
        raise ToolError(
            f"refused, nothing changed: the person you are answering may not {what} here. "
            f"{reason} Tell them so; they may ask an administrator."
        )
