"""Which tools go with a turn's requests, and in what form, when not all of them fit.

Tool definitions go with every request; together they may take at most a third of the
model's input limit (MAX_TOOL_SCHEMA_SHARE; of the real window's once it is known). Within
that, in this order:

1. the built-in tools (ours, and plugins' outside any tool set), in full;
2. then MCP servers' tools: servers in the order of `mcp.servers`, each server's tools in
   the order it lists them; each that still fits is offered, the others are left out.

When the built-in tools do not fit in full, no MCP tool is offered, and only those a turn
most likely needs (FIRST_IN_A_SMALL_WINDOW) go, in short form (their one-line `brief`,
schemas without prose or defaults), in that order while they fit a tenth of the input
limit (SHORT_TOOL_SHARE); possibly none. Every request carries them: more would take the
little room the conversation has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from mnemobot.base.tokens import estimate_tokens
from mnemobot.bot.i18n import Words, words_for
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import Tool

# Tool definitions go with every request: on a small local model a conversation that fits
# beats tools that crowd it out, so they take at most this share of the input limit.
MAX_TOOL_SCHEMA_SHARE = 1 / 3
# The share of the input limit the short forms may take. Measured with the 26-turn chat of
# paragraph-long messages in tests/test_context_window.py on a 2,048-token window (1,536
# input): schedule and memory in short form (~260 tokens) made it compact on 25 turns of
# 26, each compaction a model call; schedule alone (~120, what a tenth leaves room for) on
# at most every other turn, as with no tools. At 4,096 tokens both fit.
SHORT_TOOL_SHARE = 1 / 10
# In a window too small for every built-in tool in full, only these go, in this order: a
# reminder the model only pretends to set, or a fact it cannot keep, is what users notice.
FIRST_IN_A_SMALL_WINDOW = ("schedule", "memory")
# Schema keys that only explain (the model reads the tool's brief instead); the arguments
# are still validated against the full schema when the tool runs.
_PROSE_KEYS = frozenset({"description", "title", "default", "examples", "additionalProperties"})


@dataclass(frozen=True, slots=True)
class ToolForm:
    """A tool's definition as the model gets it, and its estimated prompt tokens."""

    schema: dict[str, Any]
    tokens: int

    @classmethod
    def of(cls, schema: dict[str, Any]) -> ToolForm:
        return cls(schema, estimate_tokens(orjson.dumps(schema).decode()))


def _without_prose(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_prose(item) for item in node]
    if not isinstance(node, dict):
        return node
    variants = node.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and {"type": "null"} in variants:
        # `str | None` with a null default: the model need not be told it may send null.
        kept = next(v for v in variants if v != {"type": "null"})
        return _without_prose({**{k: v for k, v in node.items() if k != "anyOf"}, **kept})
    short: dict[str, Any] = {}
    for key, value in node.items():
        if key in _PROSE_KEYS:
            continue
        if key == "properties" and isinstance(value, dict):
            short[key] = {name: _without_prose(field) for name, field in value.items()}
        else:
            short[key] = _without_prose(value)
    return short


def first_sentence(text: str, limit: int = 160) -> str:
    first = text.strip().split("\n", 1)[0]
    cut = first.find(". ")
    if 0 < cut < limit:
        first = first[: cut + 1]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def short_form(tool: Tool, schema: dict[str, Any]) -> ToolForm:
    """`schema` (the tool's full definition) with a one-line description and no prose."""
    function = schema["function"]
    return ToolForm.of(
        {
            "type": "function",
            "function": {
                "name": function["name"],
                "description": tool.brief or first_sentence(function["description"]),
                "parameters": _without_prose(function["parameters"]),
            },
        }
    )


# The log's words, and /status's and /tools' in a chat without a catalog.
ENGLISH = words_for(None)
# How the MCP servers' tool sets are named (`ToolRegistry.order_sets`).
MCP_SERVER_LABEL = "MCP server "


def set_label(words: Words, label: str) -> str:
    """A tool set's label in `words`: "MCP server big" is "MCP-сервер big" in Russian."""
    if label.startswith(MCP_SERVER_LABEL):
        return words.gettext("MCP server {name}", name=label.removeprefix(MCP_SERVER_LABEL))
    return label


@dataclass(frozen=True, slots=True)
class OfferableTool:
    """A registered tool with its definition in full and, for a built-in one, in short."""

    tool: Tool
    full: ToolForm
    short: ToolForm


@dataclass(frozen=True, slots=True)
class LeftOut:
    """How many of a tool set's tools (None: the built-in ones) a turn goes without."""

    tool_set: str | None
    label: str
    count: int
    of: int

    def shown(self, words: Words = ENGLISH) -> str:
        """The label in `words`: "built-in tools", "MCP server big"."""
        if self.tool_set is None:
            return words.gettext("built-in tools")
        return set_label(words, self.label)


@dataclass(frozen=True, slots=True)
class ToolOffer:
    """The tools a turn's requests carry, and what was left out for want of room."""

    schemas: tuple[dict[str, Any], ...]
    names: tuple[str, ...]
    tokens: int
    # Tokens tool definitions may take: a third of the input limit.
    budget: int
    input_limit: int
    # How many tools this turn could use were there room for all.
    available: int
    # The built-in tools go in short form.
    short: bool
    left_out: tuple[LeftOut, ...] = ()
    # The model server drops tools (`tool_support`): none is offered, whatever the room.
    dropped_by_server: bool = False

    @property
    def trimmed(self) -> bool:
        return bool(self.left_out) or self.short

    def offers(self, name: str) -> bool:
        return name in self.names

    def why(self, words: Words = ENGLISH) -> str:
        """Why not all fit, in `words` (the log's: English)."""
        values = {"budget": words.number(self.budget), "limit": words.number(self.input_limit)}
        if self.short:
            return words.gettext(
                "tools may take {budget} tokens, a tenth of the model's input limit of {limit}",
                **values,
            )
        return words.gettext(
            "tools may take {budget} tokens, a third of the model's input limit of {limit}",
            **values,
        )

    def summary(self, words: Words = ENGLISH) -> str:
        """`12 of 304 offered; MCP server big: 296 of 300 left out (…)` for /status, logs."""
        text = words.gettext(
            "{count} of {available} offered",
            count=words.number(len(self.names)),
            available=words.number(self.available),
        )
        if self.short:
            text += words.gettext(", the built-in ones in short form")
        parts = [
            words.gettext(
                "{label}: {count} of {of} left out",
                label=gone.shown(words),
                count=words.number(gone.count),
                of=words.number(gone.of),
            )
            for gone in self.left_out
        ]
        if parts:
            text += f"; {'; '.join(parts)}"
        if self.trimmed:
            text += f" ({self.why(words)})"
        return text


def no_offer(available: int, input_limit: int) -> ToolOffer:
    """The offer of a turn whose model server drops tools: none of the `available`."""
    return ToolOffer((), (), 0, 0, input_limit, available, False, (), dropped_by_server=True)


def choose_offer(
    built_in: Sequence[OfferableTool],
    tool_sets: Iterable[tuple[str, str, Sequence[OfferableTool]]],
    input_limit: int,
) -> ToolOffer:
    """The offer within a third of `input_limit`; `tool_sets`: (set, label, its tools) in
    the order they are offered in (see the module docstring)."""
    budget = int(input_limit * MAX_TOOL_SCHEMA_SHARE)
    sets = list(tool_sets)
    available = len(built_in) + sum(len(tools) for _, _, tools in sets)
    full_tokens = sum(entry.full.tokens for entry in built_in)
    chosen: list[ToolForm]
    left_out: list[LeftOut] = []
    if full_tokens <= budget:
        chosen, used = [entry.full for entry in built_in], full_tokens
        for tool_set, label, tools in sets:
            missed = 0
            for entry in tools:
                if used + entry.full.tokens <= budget:
                    chosen.append(entry.full)
                    used += entry.full.tokens
                else:
                    missed += 1
            if missed:
                left_out.append(LeftOut(tool_set, label, missed, len(tools)))
        return _offer(chosen, budget, input_limit, available, False, left_out)
    budget = int(input_limit * SHORT_TOOL_SHARE)
    picked = _short_ones_that_fit(built_in, budget)
    chosen = [entry.short for entry in built_in if entry.tool.name in picked]
    if len(picked) < len(built_in):
        left_out.append(LeftOut(None, "built-in tools", len(built_in) - len(picked), len(built_in)))
    left_out += [LeftOut(s, label, len(tools), len(tools)) for s, label, tools in sets if tools]
    return _offer(chosen, budget, input_limit, available, True, left_out)


def _short_ones_that_fit(built_in: Sequence[OfferableTool], budget: int) -> set[str]:
    by_name = {entry.tool.name: entry for entry in built_in}
    picked: set[str] = set()
    used = 0
    for name in FIRST_IN_A_SMALL_WINDOW:
        entry = by_name.get(name)
        if entry is None or used + entry.short.tokens > budget:
            break
        picked.add(name)
        used += entry.short.tokens
    return picked


def _offer(
    chosen: list[ToolForm],
    budget: int,
    input_limit: int,
    available: int,
    short: bool,
    left_out: list[LeftOut],
) -> ToolOffer:
    return ToolOffer(
        schemas=tuple(form.schema for form in chosen),
        names=tuple(form.schema["function"]["name"] for form in chosen),
        tokens=sum(form.tokens for form in chosen),
        budget=budget,
        input_limit=input_limit,
        available=available,
        short=short,
        left_out=tuple(left_out),
    )


class ToolOffering:
    """A pipeline system (after the window and the MCP access are known, before compaction
    counts the tools and the prompt is built): records which tools this turn offers, so
    the prompt speaks of a tool only when the model has it."""

    name = "ToolOffering"
    order = 17

    def __init__(self, offered_names: Callable[[TurnContext], frozenset[str]]) -> None:
        self.offered_names = offered_names

    def enabled(self, ctx: TurnContext) -> bool:
        return True

    async def process(self, ctx: TurnContext) -> None:
        ctx.offered_tools = self.offered_names(ctx)
