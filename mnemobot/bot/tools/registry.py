"""ToolRegistry: JSON-schema'd tools whose arguments are validated by pydantic models.

Schemas are built once, when a tool is registered: pydantic's `model_json_schema()` costs
about a millisecond per tool, and the schemas go out with every LLM request.

A tool may belong to a named tool set (an MCP server's tools): such a tool is offered, and
run, only in a turn whose `allowed_tool_sets` names its set, and a set's tools can be
replaced as a whole while the bot runs (a server restarted or reconfigured).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, replace
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


@dataclass(frozen=True, slots=True)
class _Offer:
    """The schemas of a group of tools, and their estimated prompt tokens."""

    schemas: tuple[dict[str, Any], ...] = ()
    tokens: int = 0

    def plus(self, schema: dict[str, Any]) -> _Offer:
        return _Offer(
            (*self.schemas, schema), self.tokens + estimate_tokens(orjson.dumps(schema).decode())
        )


class ToolRegistry:
    """Implements the pipeline's ToolRunner: schemas for the model, validated execution."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        # Offers are replaced, never changed in place: a request already holding one
        # keeps a consistent view while a tool set is swapped.
        self._offers: dict[str | None, _Offer] = {None: _Offer()}
        self._schemas: list[dict[str, Any]] = []
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        schema = checked_schema(tool)
        self._tools[tool.name] = tool
        self._offers[tool.tool_set] = self._offers.get(tool.tool_set, _Offer()).plus(schema)
        if tool.tool_set is None:
            self._schemas = list(self._offers[None].schemas)

    def replace_set(self, tool_set: str, tools: list[Tool]) -> list[str]:
        """Make `tools` the whole of `tool_set` (empty: remove it); returns the names left
        out because another tool has them or the model would reject them."""
        kept: list[Tool] = []
        refused: list[str] = []
        for tool in tools:
            other = self._tools.get(tool.name)
            clash = other is not None and other.tool_set != tool_set
            try:
                checked_schema(tool)
            except ValueError:
                clash = True
            if clash or any(k.name == tool.name for k in kept):
                refused.append(tool.name)
            else:
                kept.append(replace(tool, tool_set=tool_set))
        for name in [n for n, t in self._tools.items() if t.tool_set == tool_set]:
            del self._tools[name]
        self._offers.pop(tool_set, None)
        for tool in kept:
            self.register(tool)
        return refused

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools_offered(self, allowed_tool_sets: frozenset[str]) -> list[Tool]:
        """The tools a turn allowed these sets is offered, built-in ones first."""
        return [
            tool
            for tool in self._tools.values()
            if tool.tool_set is None or tool.tool_set in allowed_tool_sets
        ]

    def _offered(self, ctx: TurnContext) -> tuple[list[dict[str, Any]], int]:
        base = self._offers[None]
        sets = [self._offers[s] for s in sorted(ctx.allowed_tool_sets) if s in self._offers]
        if not sets:
            return self._schemas, base.tokens
        schemas = [*base.schemas]
        for offer in sets:
            schemas += offer.schemas
        return schemas, base.tokens + sum(offer.tokens for offer in sets)

    def schemas(self, ctx: TurnContext) -> list[dict[str, Any]]:
        """The tools for the model, built at registration; callers must not modify them."""
        schemas, tokens = self._offered(ctx)
        return schemas if self.fits(tokens, ctx) else []

    def schema_tokens(self, ctx: TurnContext) -> int:
        """Estimated prompt tokens of `schemas(ctx)`, also computed at registration."""
        _, tokens = self._offered(ctx)
        return tokens if self.fits(tokens, ctx) else 0

    @staticmethod
    def fits(tokens: int, ctx: TurnContext) -> bool:
        """Whether tool definitions of `tokens` go with this turn's requests."""
        return tokens <= ctx.config.llm.max_input_tokens * MAX_TOOL_SCHEMA_SHARE

    def status_line(self, name: str, arguments: str) -> str:
        tool = self._tools.get(name)
        if tool is None:
            return f"⚙️ {name}…"
        try:
            parsed = orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError:
            parsed = {}
        try:
            return tool.status_line(parsed if isinstance(parsed, dict) else {})
        except Exception:  # a plugin's status function must not end the turn
            return f"⚙️ {name}…"

    async def run(self, name: str, arguments: str, ctx: TurnContext) -> str:
        tool = self._tools.get(name)
        if tool is not None and tool.tool_set not in (None, *ctx.allowed_tool_sets):
            tool = None  # not offered here: as if it did not exist
        if tool is None:
            offered = sorted(t.name for t in self.tools_offered(ctx.allowed_tool_sets))
            raise ToolError(f"unknown tool {name!r}; available tools: {', '.join(offered)}")
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
