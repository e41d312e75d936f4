"""What the ToolLoop needs from the tool registry, as a protocol the bot layer implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mnemobot.systems.context import TurnContext


class ToolError(Exception):
    """A tool failed in a way the model should be told about; the message goes to the model."""


class ToolRunner(Protocol):
    def schemas(self, ctx: TurnContext) -> list[dict[str, Any]]:
        """OpenAI `tools` entries for this turn; sent with every request, so keep it cheap."""
        ...

    def schema_tokens(self, ctx: TurnContext) -> int:
        """Estimated prompt tokens of `schemas(ctx)`, for the compaction threshold."""
        ...

    async def run(self, name: str, arguments: str, ctx: TurnContext) -> str:
        """Run one tool call; raise ToolError for anything the model should see as an error."""
        ...
