"""Tools as the pipeline sees them: a `Tool` (what the model is offered and what runs when
it calls it), `ToolError`, and the `ToolRunner` protocol the ToolLoop runs tools through
(the bot's tool registry implements it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from mnemobot.systems.core.context import TurnContext

ToolHandler = Callable[[Any, "TurnContext"], Awaitable[str] | str]


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the model may call.

    `name`: 1-64 letters, digits, `_` or `-` (what OpenAI-compatible servers accept);
    `description`: what the model reads to decide when to call it; `arguments`: a pydantic
    model of the JSON arguments, validated before the handler runs (its JSON schema is what
    the model sees); `handler(arguments, ctx)`: the parsed arguments and the turn, returns
    the text the model gets back, plain or async. Raise `ToolError` for anything the model
    should be told; run blocking work with `asyncio.to_thread`.

    `parameters`: the JSON schema the model sees when it is not `arguments`' own (a tool
    whose own server checks the arguments, such as an MCP server's: pair it with
    `AnyArguments`). `tool_set`: None for a tool offered in every turn; else the set it
    belongs to, offered only in turns that allow it (`TurnContext.allowed_tool_sets`).
    `status`: the one short line a user sees while it runs ("🔎 searching memory…"), or a
    function of the call's JSON arguments (a dict, empty when they do not parse) giving
    it; empty: a plain one naming the tool. `brief`: a one-line description the model gets
    instead of `description` when the context window is too small for every tool in full
    (empty: the description's first sentence).
    """

    name: str
    description: str
    arguments: type[BaseModel]
    handler: ToolHandler
    parameters: dict[str, Any] | None = None
    tool_set: str | None = None
    status: str | Callable[[dict[str, Any]], str] = ""
    brief: str = ""

    def schema(self) -> dict[str, Any]:
        if self.parameters is not None:
            parameters = dict(self.parameters)
        else:
            parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }


class AnyArguments(BaseModel):
    """Arguments passed on as they came (`model_dump()`), for a tool whose own server
    checks them against the schema it published (`Tool.parameters`)."""

    model_config = ConfigDict(extra="allow")


class ToolError(Exception):
    """A tool failed in a way the model should be told about; the message goes to the model."""


# How the model reads a failed call's result: a ToolError's message after it, and a tool may
# return such a line itself ("error: give text: ...").
ERROR_RESULT_PREFIX = "error:"


def is_error_result(result: str) -> bool:
    """Whether a tool call's result says the call failed (`ERROR_RESULT_PREFIX`)."""
    return result.startswith(ERROR_RESULT_PREFIX)


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

    def status_line(self, name: str, arguments: str, language: str | None = None) -> str:
        """What a user is shown while the tool `name` runs with these JSON `arguments`
        (see `Tool.status`), in the words of a reader of `language` (None: unknown); cheap,
        and never raises."""
        ...
