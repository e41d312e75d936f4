"""ToolRegistry: JSON-schema'd tools whose arguments are validated by pydantic models.

Schemas are built once, when a tool is registered: pydantic's `model_json_schema()` costs
about a millisecond per tool, and the schemas go out with every LLM request.

A tool may belong to a named tool set (an MCP server's tools): such a tool is offered, and
run, only in a turn whose `allowed_tool_sets` names its set, and a set's tools can be
replaced as a whole while the bot runs (a server restarted or reconfigured). Which of them
fit the model's window, and in what form, is `bot.tools.offer`'s rule; each trimming is
logged once.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
from pydantic import ValidationError

from mnemobot.bot.i18n import N_, words_for
from mnemobot.bot.tools.offer import (
    FIRST_IN_A_SMALL_WINDOW,
    OfferableTool,
    ToolForm,
    ToolOffer,
    choose_offer,
    no_offer,
    short_form,
)
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.plugins import as_list, load_plugins
from mnemobot.systems.core.services import Services
from mnemobot.systems.core.tool_runner import Tool, ToolError

log = logging.getLogger(__name__)

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


# Offers worked out per (tools, sets, input limit); a turn asks for its offer several times
# and the pairs in use are few, so a small memo is plenty.
_MEMO_SIZE = 64


class ToolRegistry:
    """Implements the pipeline's ToolRunner: schemas for the model, validated execution."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        # Each tool set's tools in the order they came (None: the built-in ones); replaced,
        # never changed in place: a request already holding an offer keeps a consistent view.
        self._sets: dict[str | None, tuple[OfferableTool, ...]] = {None: ()}
        # The tool sets in the order they are offered in (an MCP server's place in the
        # config), with what logs and /status call them.
        self._set_order: dict[str, str] = {}
        self._version = 0
        self._memo: dict[tuple[int, tuple[str, ...], int], ToolOffer] = {}
        # The trimming decisions logged already: each is logged once, not every turn.
        self._logged: set[tuple[object, ...]] = set()
        # Whether the model server of a config's model drops tools (`tool_support`): then
        # none is offered. Wired by the composition root; never, until it is.
        self.dropped_by_server: Callable[[RuntimeConfig], bool] = lambda config: False
        # Whether the start-up check of the server's tools has not answered yet (then
        # /status says the tools offered may yet be turned off).
        self.checking_server: Callable[[], bool] = lambda: False
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        schema = checked_schema(tool)
        self._tools[tool.name] = tool
        entry = OfferableTool(tool, ToolForm.of(schema), short_form(tool, schema))
        self._sets[tool.tool_set] = (*self._sets.get(tool.tool_set, ()), entry)
        self._changed()

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
        self._sets.pop(tool_set, None)
        for tool in kept:
            self.register(tool)
        self._changed()
        return refused

    def order_sets(self, sets: list[tuple[str, str]]) -> None:
        """(tool set, what to call it) in the order their tools are offered in while there is
        room; sets not named come after, by name."""
        self._set_order = dict(sets)
        self._changed()

    def _changed(self) -> None:
        self._version += 1
        self._memo.clear()

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools_offered(self, allowed_tool_sets: frozenset[str]) -> list[Tool]:
        """Every tool a turn allowed these sets may use (room or not), built-in ones first."""
        return [
            tool
            for tool in self._tools.values()
            if tool.tool_set is None or tool.tool_set in allowed_tool_sets
        ]

    def built_in_tokens(self) -> int:
        """Estimated prompt tokens of every built-in tool in full."""
        return sum(entry.full.tokens for entry in self._sets[None])

    def offer(self, config: RuntimeConfig, allowed_tool_sets: frozenset[str]) -> ToolOffer:
        """The tools a turn with this config (narrowed to the model's window) and these sets
        offers the model: see `bot.tools.offer`."""
        order = list(self._set_order)
        sets = sorted(
            (s for s in allowed_tool_sets if s in self._sets),
            key=lambda s: (order.index(s) if s in order else len(order), s),
        )
        input_limit = config.llm.max_input_tokens
        if self.dropped_by_server(config):
            available = len(self._sets[None]) + sum(len(self._sets[s]) for s in sets)
            return no_offer(available, input_limit)
        key = (self._version, tuple(sets), input_limit)
        found = self._memo.get(key)
        if found is None:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            labelled = [(s, self._set_order.get(s, f"tool set {s}"), self._sets[s]) for s in sets]
            found = self._memo[key] = choose_offer(self._sets[None], labelled, input_limit)
            self._log_once(found)
        return found

    def _log_once(self, offer: ToolOffer) -> None:
        if not offer.trimmed:
            return
        decision = (offer.names, offer.left_out, offer.short)
        if decision in self._logged:
            return
        if len(self._logged) >= _MEMO_SIZE:
            self._logged.clear()
        self._logged.add(decision)
        missing = [n for n in FIRST_IN_A_SMALL_WINDOW if n in self._tools and n not in offer.names]
        if missing:
            log.warning(
                "tools: %s; without %s: a larger context window brings them back",
                offer.summary(),
                " and ".join(missing),
            )
        else:
            log.info("tools: %s", offer.summary())

    def schemas(self, ctx: TurnContext) -> list[dict[str, Any]]:
        """The tools for the model, built at registration; callers must not modify them."""
        return list(self.offer(ctx.config, ctx.allowed_tool_sets).schemas)

    def schema_tokens(self, ctx: TurnContext) -> int:
        """Estimated prompt tokens of `schemas(ctx)`, also computed at registration."""
        return self.offer(ctx.config, ctx.allowed_tool_sets).tokens

    def offered_names(self, ctx: TurnContext) -> frozenset[str]:
        return frozenset(self.offer(ctx.config, ctx.allowed_tool_sets).names)

    def status_line(self, name: str, arguments: str, language: str | None = None) -> str:
        """The tool's status line in the reader's words: ours are in the catalogs (a
        plugin's own line, in no catalog, is shown as it wrote it)."""
        words = words_for(language)
        plain = words.gettext(N_("⚙️ {name}…"), name=name)
        tool = self._tools.get(name)
        if tool is None:
            return plain
        try:
            parsed = orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError:
            parsed = {}
        try:
            status = tool.status
            line = (
                status(parsed if isinstance(parsed, dict) else {}) if callable(status) else status
            )
        except Exception:  # a plugin's status function must not end the turn
            return plain
        return words.gettext(line) if line else plain

    async def run(self, name: str, arguments: str, ctx: TurnContext) -> str:
        tool = self._tools.get(name)
        if tool is not None and tool.tool_set not in (None, *ctx.allowed_tool_sets):
            tool = None  # not offered here: as if it did not exist
        if tool is None:
            offered = sorted(self.offer(ctx.config, ctx.allowed_tool_sets).names)
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
