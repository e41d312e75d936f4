"""What the model is offered in a chat right now, as /tools, /status and /reminders say it.

The offer is the one a turn of that chat would get now (`ToolRegistry.offer`, with the
config narrowed to the model's known window and the MCP servers its user may use); when
the window leaves a built-in tool out, what it would take to have it back is said too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mnemobot.base.counts import counted
from mnemobot.bot.i18n import words_for
from mnemobot.bot.tools.offer import ToolOffer, first_sentence
from mnemobot.bot.tools.registry import ToolRegistry
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.model.windows import ModelWindow
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.core.tool_runner import Tool

ToolSetsFor = Callable[[ChatRef, RuntimeConfig], Awaitable[frozenset[str]]]
WindowOf = Callable[[RuntimeConfig], ModelWindow | None]

# /tools lists each tool on a line of its own up to this many; past it a set's tools are
# named on one line, all sets' names within MAX_NAMES_CHARS (then "and N more"), so the
# list stays within three Telegram messages (4,096 characters each).
MAX_TOOL_LINES = 30
MAX_NAMES_CHARS = 8_000
# How /tools and /reminders name what the schedule tool gives.
REMINDERS = "Reminders and scheduled tasks are"
# Windows suggested to bring every built-in tool back: llama.cpp and Ollama take any size;
# a power of two is what people type.
_SUGGESTED_WINDOWS = (4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True, slots=True)
class ChatOffer:
    offer: ToolOffer
    # The offered tools, in the order the model gets them.
    tools: list[Tool]
    config: RuntimeConfig
    window: ModelWindow | None
    # The tool sets (MCP servers) the chat's user may use there.
    allowed: frozenset[str]


def larger_window_hint(window: ModelWindow | None, tokens: int) -> str:
    """How to give the model a window of `tokens`, in the words of the server that said
    its window (`ModelWindow.detail`)."""
    detail = window.detail if window is not None else ""
    if detail.startswith("/props"):
        return f"start llama-server with -c {tokens}"
    if detail.startswith(("/api/ps", "/api/show")):
        return f"give the model num_ctx {tokens} (e.g. OLLAMA_CONTEXT_LENGTH={tokens} ollama serve)"
    if detail.startswith("/api/v0/models"):
        return f"load the model in LM Studio with a context length of {tokens}"
    if "max_model_len" in detail:
        return f"start vLLM with --max-model-len {tokens}"
    return f"a model server started with a larger window, e.g. llama-server -c {tokens}"


class ChatTools:
    def __init__(
        self,
        registry: ToolRegistry,
        config: Callable[[], RuntimeConfig],
        window_of: WindowOf,
        tool_sets_for: ToolSetsFor,
    ) -> None:
        self.registry = registry
        self.config = config
        self.window_of = window_of
        self.tool_sets_for = tool_sets_for

    async def offer(self, chat: ChatRef, *, built_in_only: bool = False) -> ChatOffer:
        """`built_in_only`: leave the MCP servers out (whether a built-in tool is offered
        does not depend on them: it goes first)."""
        config = self.config()
        window = self.window_of(config)
        if window is not None:
            config = config.for_context_window(window.tokens)
        allowed = frozenset() if built_in_only else await self.tool_sets_for(chat, config)
        offer = self.registry.offer(config, allowed)
        by_name = {tool.name: tool for tool in self.registry.tools_offered(allowed)}
        tools = [by_name[name] for name in offer.names if name in by_name]
        return ChatOffer(offer, tools, config, window, allowed)

    async def status_lines(self, chat: ChatRef) -> list[str]:
        """`Tools: 12 of 304 offered; MCP server big: 296 of 300 left out (…)`."""
        words = words_for(chat.language)
        offer = (await self.offer(chat)).offer
        if offer.trimmed:
            # What was left out and why, as the operator who tunes it reads it in the log.
            return [words.gettext("Tools: {summary}", summary=offer.summary())]
        return [
            words.gettext(
                "Tools: {count} of {available} offered",
                count=words.number(len(offer.names)),
                available=words.number(offer.available),
            )
        ]

    async def missing_text(self, chat: ChatRef, name: str, what: str) -> str | None:
        """Why the model goes without the tool `name` in this chat and what would bring it
        back (`what`: "Reminders are"); None when it has it (or there is no such tool)."""
        return self.missing(await self.offer(chat, built_in_only=True), name, what)

    def missing(self, found: ChatOffer, name: str, what: str) -> str | None:
        if name not in self.registry.names or found.offer.offers(name):
            return None
        window = found.window
        said = f" of {window.describe()}" if window is not None else ""
        tokens = self.window_for_all_tools(self.config())
        return (
            f"{what} unavailable with this model's context window{said}: the {name} tool "
            f"does not fit beside the conversation. A window of {tokens:,} tokens or more "
            f"makes it work: {larger_window_hint(window, tokens)}."
        )

    def window_for_all_tools(self, config: RuntimeConfig) -> int:
        """The smallest suggested window whose share for tools takes every built-in tool in
        full."""
        needed = self.registry.built_in_tokens()
        for tokens in _SUGGESTED_WINDOWS:
            narrowed = config.for_context_window(tokens)
            if self.registry.offer(narrowed, frozenset()).tokens >= needed:
                return tokens
        return _SUGGESTED_WINDOWS[-1]

    def listing(self, found: ChatOffer, source: Callable[[Tool], str | None]) -> list[str]:
        """/tools' lines: each offered tool (`source`: the label of its set, None for a
        built-in one), then what was left out and why."""
        offer = found.offer
        head = "Tools I can use in this chat"
        if offer.trimmed:
            head += f" ({len(offer.names)} of {offer.available}: {offer.why()})"
        lines = [f"{head}:"]
        each_on_a_line = len(found.tools) <= MAX_TOOL_LINES
        grouped: dict[str, list[str]] = {}
        for tool in found.tools:
            label = source(tool)
            if each_on_a_line or label is None:
                where = label or "built-in"
                lines.append(f"- {tool.name} ({where}): {first_sentence(tool.description, 120)}")
            else:
                grouped.setdefault(label, []).append(tool.name)
        room = MAX_NAMES_CHARS
        for label, names in grouped.items():
            named, room = _names_within(names, room)
            lines.append(f"- {label} ({counted(len(names), 'tool')}): {named}")
        for gone in offer.left_out:
            lines.append(f"- {gone.label}: {gone.count} of {gone.of} left out for want of room")
        if not found.tools:
            lines.append("- none: the model's context window leaves no room for tools")
        if reminders := self.missing(found, "schedule", REMINDERS):
            lines.append(reminders)
        return lines


def _names_within(names: list[str], room: int) -> tuple[str, int]:
    """`names` joined within `room` characters, and the room left."""
    shown: list[str] = []
    for name in names:
        if len(name) + 2 > room:
            return f"{', '.join(shown)} and {len(names) - len(shown)} more", 0
        shown.append(name)
        room -= len(name) + 2
    return ", ".join(shown), room
