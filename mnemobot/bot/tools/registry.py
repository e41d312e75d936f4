"""ToolRegistry: JSON-schema'd tools whose arguments are validated by pydantic models.

Schemas are built once, when a tool is registered: pydantic's `model_json_schema()` costs
about a millisecond per tool, and the schemas go out with every LLM request.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import orjson
from pydantic import ValidationError

from mnemobot.memory.tokens import estimate_tokens
from mnemobot.systems.context import TurnContext
from mnemobot.systems.plugins import as_list, load_plugins
from mnemobot.systems.services import Services
from mnemobot.systems.tool_runner import Tool, ToolError

TOOL_ENTRY_POINT_GROUP = "mnemobot.tools"

# What OpenAI-compatible servers accept as a function name; one bad name would make
# every request of every chat fail, so it is refused at registration.
TOOL_NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def checked_schema(tool: Tool) -> dict[str, Any]:
    """The tool's schema, or ValueError when its name would make the model reject requests."""
    if not TOOL_NAME_PATTERN.fullmatch(tool.name):
        raise ValueError(f"tool name {tool.name!r} is not 1-64 letters, digits, '_' or '-'")
    return tool.schema()


def describe_arguments_error(error: ValidationError) -> str:
    problems = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


# Tool definitions go with every request. When they would take more than this share of the
# model's input limit (its real context window, once learned), the turn goes without tools:
# on a small local model a conversation that fits beats tools that crowd it out.
MAX_TOOL_SCHEMA_SHARE = 1 / 3


class ToolRegistry:
    """Implements the pipeline's ToolRunner: schemas for the model, validated execution."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] = []
        self._schema_tokens = 0
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        schema = checked_schema(tool)
        self._tools[tool.name] = tool
        # A new list, never an in-place append: a request already holding the old list
        # keeps a consistent view.
        self._schemas = [*self._schemas, schema]
        self._schema_tokens += estimate_tokens(orjson.dumps(schema).decode())

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self, ctx: TurnContext) -> list[dict[str, Any]]:
        """The tools for the model, built at registration; callers must not modify them."""
        return self._schemas if self._fit(ctx) else []

    def schema_tokens(self, ctx: TurnContext) -> int:
        """Estimated prompt tokens of `schemas(ctx)`, also computed at registration."""
        return self._schema_tokens if self._fit(ctx) else 0

    def _fit(self, ctx: TurnContext) -> bool:
        return self._schema_tokens <= ctx.config.llm.max_input_tokens * MAX_TOOL_SCHEMA_SHARE

    async def run(self, name: str, arguments: str, ctx: TurnContext) -> str:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"unknown tool {name!r}; available tools: {', '.join(self.names)}")
        try:
            raw = orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError as exc:
            raise ToolError(f"arguments are not valid JSON ({exc}); send a JSON object") from None
        if not isinstance(raw, dict):
            raise ToolError("the arguments must be a JSON object")
        try:
            parsed = tool.arguments.model_validate(raw)
        except ValidationError as exc:
            raise ToolError(f"invalid arguments: {describe_arguments_error(exc)}") from None
        result = tool.handler(parsed, ctx)
        if inspect.isawaitable(result):
            result = await result
        return str(result)


def load_entry_point_tools(registry: ToolRegistry, services: Services) -> list[str]:
    """Register the tools of the `mnemobot.tools` entry-point group; returns the plugins.

    An entry point names `factory(services) -> Tool` (or a list of Tools), a zero-argument
    factory, or a Tool itself. A plugin's tools go in all together or not at all.
    """

    def install(made: object) -> None:
        tools: list[Tool] = []
        for tool in as_list(made):
            if not isinstance(tool, Tool):
                raise TypeError(f"got {tool!r}, not a mnemobot.plugin.Tool")
            tools.append(tool)
        names = [tool.name for tool in tools]
        clashes = sorted({n for n in names if n in registry.names or names.count(n) > 1})
        if clashes:
            raise ValueError(f"tool name(s) already taken: {', '.join(clashes)}")
        for tool in tools:
            checked_schema(tool)  # a bad tool fails here, before any of the plugin's is in
        for tool in tools:
            registry.register(tool)

    return load_plugins(TOOL_ENTRY_POINT_GROUP, services, install)
