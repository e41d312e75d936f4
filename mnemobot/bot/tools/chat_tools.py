"""What the model is offered in a chat right now, as /tools, /status and /reminders say it.

The offer is the one a turn of that chat would get now (`ToolRegistry.offer`, with the
config narrowed to the model's known window and the MCP servers its user may use); when
the window leaves a built-in tool out, what it would take to have it back is said too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mnemobot.base.clock import shown_time
from mnemobot.bot.i18n import N_, Words, words_for
from mnemobot.bot.tools.offer import ToolOffer, first_sentence, set_label
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
# What /tools and /reminders say when the window leaves the schedule tool out.
REMINDERS = N_(
    "Reminders and scheduled tasks are unavailable with this model's context window of "
    "{window}: the {tool} tool does not fit beside the conversation. A window of {tokens} "
    "tokens or more makes it work: {hint}."
)
# What /status, /tools and /reminders say when the model server drops tools (`run`'s
# check found it): the model cannot call any, whatever its window.
TOOLS_DROPPED = N_(
    "Tools: off, the model server drops them (reminders and the memory tool do not work)"
)
_NONE_DROPPED = N_(
    "- none: the model server drops them (reminders and the memory tool do not work)"
)
_TOOL_DROPPED = N_(
    "The model cannot call the {tool} tool: the model server drops tools, so reminders "
    "cannot be set."
)
# The built-in tools' first sentences, for /tools in the reader's language (a tool whose
# description changed reads in English until its sentence is here again).
_BUILT_IN_SENTENCES = (
    N_("Get the current date, weekday and time."),
    N_("Read, write or list text files in your workspace files folder."),
    N_("Your long-term memory of this chat."),
    N_("Read this chat's earlier raw messages, including those compacted away (newest last)."),
    N_("Keyword search in this chat's compacted-away messages; returns time, role and text."),
    N_("Read a large tool result that was saved to disk, one page at a time."),
    N_("Act later in this chat."),
)
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


# Where a context window's size came from (`ModelWindow.source`), as /status says it.
_WINDOW_SOURCES = {
    "assumed": N_("assumed: the server does not say; from the config"),
    "server": N_("reported by the server"),
    "overflow error": N_("learned from an overflow error"),
}


def window_text(words: Words, window: ModelWindow) -> str:
    """`2,048 tokens (reported by the server: /props n_ctx)`: `ModelWindow.describe` in the
    reader's words (what exactly said so stays as the server or the config names it)."""
    if window.source == "config":
        # Until the server answers (or when it cannot be reached) the figure is only
        # the configured one: the window the server runs may be smaller.
        where = words.gettext(
            "configured: {setting}; the server has not said its window yet",
            setting=window.detail,
        )
    else:
        where = words.gettext(_WINDOW_SOURCES[window.source])
        where += f": {window.detail}" if window.detail else ""
        where += f", {shown_time(window.learned_at)}" if window.learned_at else ""
    return words.ngettext(
        "{count} token ({where})",
        "{count} tokens ({where})",
        window.tokens,
        where=where,
    )


def larger_window_hint(window: ModelWindow | None, tokens: int, words: Words) -> str:
    """How to give the model a window of `tokens`, in the words of the server that said
    its window (`ModelWindow.detail`)."""
    detail = window.detail if window is not None else ""
    if detail.startswith("/props"):
        return words.gettext("start llama-server with -c {tokens}", tokens=tokens)
    if detail.startswith(("/api/ps", "/api/show")):
        return words.gettext(
            "give the model num_ctx {tokens} (e.g. OLLAMA_CONTEXT_LENGTH={tokens} ollama serve)",
            tokens=tokens,
        )
    if detail.startswith("/api/v0/models"):
        return words.gettext(
            "load the model in LM Studio with a context length of {tokens}", tokens=tokens
        )
    if "max_model_len" in detail:
        return words.gettext("start vLLM with --max-model-len {tokens}", tokens=tokens)
    return words.gettext(
        "a model server started with a larger window, e.g. llama-server -c {tokens}",
        tokens=tokens,
    )


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
        if offer.dropped_by_server:
            return [words.gettext(TOOLS_DROPPED)]
        if offer.trimmed:
            # What was left out and why, as the operator who tunes it reads it in the log.
            return [words.gettext("Tools: {summary}", summary=offer.summary(words))]
        count, available = words.number(len(offer.names)), words.number(offer.available)
        if self.registry.checking_server():
            # Found live: "7 of 7 offered" in the first seconds, then "off" on a server
            # that drops them.
            return [
                words.gettext(
                    "Tools: {count} of {available} offered (checking whether the model "
                    "server passes them)",
                    count=count,
                    available=available,
                )
            ]
        return [
            words.gettext("Tools: {count} of {available} offered", count=count, available=available)
        ]

    async def missing_text(self, chat: ChatRef, name: str, what: str) -> str | None:
        """Why the model goes without the tool `name` in this chat and what would bring it
        back (`what`: a message like REMINDERS); None when it has it (or there is no such
        tool)."""
        found = await self.offer(chat, built_in_only=True)
        return self.missing(found, name, what, words_for(chat.language))

    def missing(self, found: ChatOffer, name: str, what: str, words: Words) -> str | None:
        if name not in self.registry.names or found.offer.offers(name):
            return None
        if found.offer.dropped_by_server:
            return words.gettext(_TOOL_DROPPED, tool=name)
        window = found.window
        tokens = self.window_for_all_tools(self.config())
        # Without a known window the offer was cut to the configured input limit.
        configured = found.config.llm.max_input_tokens
        shown = window or ModelWindow(configured, "config", "llm.maxInputTokens")
        return words.gettext(
            what,
            window=window_text(words, shown),
            tool=name,
            tokens=words.number(tokens),
            hint=larger_window_hint(window, tokens, words),
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

    def listing(
        self, found: ChatOffer, source: Callable[[Tool], str | None], words: Words
    ) -> list[str]:
        """/tools' lines in `words`: each offered tool (`source`: the label of its set, None
        for a built-in one), then what was left out and why."""
        offer = found.offer
        if offer.trimmed:
            head = words.gettext(
                "Tools I can use in this chat ({count} of {available}: {why}):",
                count=words.number(len(offer.names)),
                available=words.number(offer.available),
                why=offer.why(words),
            )
        else:
            head = words.gettext("Tools I can use in this chat:")
        lines = [head]
        each_on_a_line = len(found.tools) <= MAX_TOOL_LINES
        grouped: dict[str, list[str]] = {}
        for tool in found.tools:
            label = source(tool)
            if each_on_a_line or label is None:
                where = set_label(words, label) if label else words.gettext("built-in")
                said = first_sentence(tool.description, 120)
                if label is None:
                    said = words.gettext(said)  # a built-in tool's (_BUILT_IN_SENTENCES)
                lines.append(f"- {tool.name} ({where}): {said}")
            else:
                grouped.setdefault(label, []).append(tool.name)
        room = MAX_NAMES_CHARS
        for label, names in grouped.items():
            named, room = _names_within(names, room, words)
            count = words.ngettext("{count} tool", "{count} tools", len(names))
            lines.append(f"- {set_label(words, label)} ({count}): {named}")
        for gone in offer.left_out:
            left = words.gettext(
                "{count} of {of} left out for want of room",
                count=words.number(gone.count),
                of=words.number(gone.of),
            )
            lines.append(f"- {gone.shown(words)}: {left}")
        if offer.dropped_by_server:
            # Reminders included: the line says so; the window is not what keeps them.
            return [*lines, words.gettext(_NONE_DROPPED)]
        if not found.tools:
            lines.append(
                words.gettext("- none: the model's context window leaves no room for tools")
            )
        if reminders := self.missing(found, "schedule", REMINDERS, words):
            lines.append(reminders)
        return lines


def _names_within(names: list[str], room: int, words: Words) -> tuple[str, int]:
    """`names` joined within `room` characters, and the room left."""
    shown: list[str] = []
    for name in names:
        if len(name) + 2 > room:
            more = words.number(len(names) - len(shown))
            return words.gettext("{names} and {more} more", names=", ".join(shown), more=more), 0
        shown.append(name)
        room -= len(name) + 2
    return ", ".join(shown), room
