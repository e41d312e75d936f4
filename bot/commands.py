"""Slash commands shared by every channel: /start /help /new /compact /status /stop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from bot.assistant import Assistant
from memory.model_windows import ModelWindow
from memory.session import AgentSession
from systems.compaction_plan import is_summary
from systems.compactor import Compactor
from systems.context import ChatRef
from systems.request_messages import estimate_request_tokens, model_messages


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    description: str


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("start", "What this bot is and what it remembers"),
    CommandSpec("help", "List the commands"),
    CommandSpec("new", "Start a new conversation (memory is kept)"),
    CommandSpec("compact", "Summarize older messages: /compact [N] keeps the last N"),
    CommandSpec("status", "Model, context size, memory and config state"),
    CommandSpec("stop", "Stop the running reply and drop queued messages"),
)
COMMAND_NAMES = frozenset(spec.name for spec in COMMANDS)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    name: str
    args: str


def parse_command(text: str, bot_username: str | None = None) -> ParsedCommand | None:
    """`/name[@bot] args` -> ParsedCommand; None if not one of ours or addressed elsewhere."""
    text = text.strip()
    if not text.startswith("/") or len(text) < 2:
        return None
    head, _, args = text[1:].partition(" ")
    name, _, target = head.partition("@")
    if target and bot_username and target.lower() != bot_username.lower():
        return None
    name = name.lower()
    if name not in COMMAND_NAMES:
        return None
    return ParsedCommand(name, args.strip())


# What a channel or subsystem adds to /status, /stop and /compact.
StatusProvider = Callable[[ChatRef], list[str]]
StopHandler = Callable[[ChatRef], Awaitable[str]]

DEFAULT_COMPACT_KEEP = 10


def parse_keep_count(args: str) -> int | None:
    """`/compact [N]`: N defaults to 10 and is clamped to 1..100; None if N is not a number."""
    args = args.strip()
    if not args:
        return DEFAULT_COMPACT_KEEP
    try:
        return min(100, max(1, int(args.split()[0])))
    except ValueError:
        return None


def endpoint_for_display(base_url: str | None) -> str:
    """Scheme, host and port only: a base URL may carry credentials or a key parameter."""
    if not base_url:
        return "OpenAI default endpoint"
    parts = urlsplit(base_url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def estimate_session_tokens(assistant: Assistant, session: AgentSession) -> int:
    prompt_tokens = int(session.metadata.get("lastSystemPromptTokens", 0) or 0)
    messages = model_messages("", session.messages, keep_tool_results_turns=1_000_000)
    return prompt_tokens + estimate_request_tokens(messages)


class Commands:
    def __init__(
        self,
        assistant: Assistant,
        *,
        status_providers: list[StatusProvider] | None = None,
        compactor: Compactor | None = None,
        known_window: Callable[[str], ModelWindow | None] | None = None,
    ) -> None:
        self.assistant = assistant
        self.status_providers = list(status_providers or [])
        self.compactor = compactor
        # The model's learned context window, when the model client knows one.
        self.known_window = known_window

    async def run(
        self, chat: ChatRef, command: ParsedCommand, *, stop: StopHandler | None = None
    ) -> str:
        if command.name == "start":
            return self.start_text(chat)
        if command.name == "help":
            return self.help_text()
        if command.name == "new":
            cleared = self.assistant.reset_session(chat)
            return (
                f"Started a new conversation ({cleared} messages cleared). "
                "I still remember what I learned about you."
            )
        if command.name == "status":
            return self.status_text(chat)
        if command.name == "stop":
            if stop is None:
                return "Nothing is running."
            return await stop(chat)
        if command.name == "compact":
            return await self.compact(chat, command.args)
        return self.help_text()

    async def compact(self, chat: ChatRef, args: str) -> str:
        keep = parse_keep_count(args)
        if keep is None:
            return "Usage: /compact [N] - keep the last N messages (1-100, default 10)."
        if self.compactor is None:
            return "Compaction is not available."
        assistant = self.assistant
        # Waits for a running turn of this chat, so the two never rewrite the session at once.
        async with assistant.lock_for(chat.key):
            session = assistant.session(chat)
            count = sum(1 for m in session.messages if not is_summary(m))
            if count <= keep:
                return f"Nothing to compact (session has {count} messages)."
            config = assistant.config()
            result = await self.compactor.compact(
                session, keep_last=keep, config=config, scope=assistant.scope_for(chat, config)
            )
        if result.removed == 0:
            return f"Nothing to compact (session has {count} messages)."
        if result.summary_ok:
            return (
                f"Compacted with summary: removed {result.removed} messages, "
                f"kept last {result.kept}."
            )
        return (
            f"Compacted: removed {result.removed} messages, kept last {result.kept} "
            f"(no summary: {result.no_summary_reason})."
        )

    def start_text(self, chat: ChatRef) -> str:
        name = self.assistant.config().assistant.name
        user = f"Your user id is {chat.user_id}." if chat.user_id else ""
        return (
            f"Hi, I'm {name}, an assistant that remembers. I keep notes of our conversations "
            "and the facts you tell me (preferences, people, projects, decisions), so I can "
            "recall them weeks later, even after /new. Each chat has its own memory. "
            f"{user}\n\n{self.help_text()}"
        ).replace("  ", " ")

    def help_text(self) -> str:
        lines = ["Commands:"]
        lines += [f"/{spec.name} - {spec.description}" for spec in COMMANDS]
        return "\n".join(lines)

    def status_text(self, chat: ChatRef) -> str:
        assistant = self.assistant
        config = assistant.config()
        session = assistant.session(chat)
        tokens = estimate_session_tokens(assistant, session)
        model = assistant.model_name(config)
        window = self.known_window(model) if self.known_window else None
        if window is not None:
            config = config.for_context_window(window.tokens)
        else:
            window = ModelWindow(config.llm.max_input_tokens, "config", "llm.maxInputTokens")
        threshold = config.compaction_threshold_tokens()
        llm_base = endpoint_for_display(assistant.settings.openai_base_url)
        lines = [
            f"Model: {model} ({llm_base})",
            f"Context window: {window.describe()}",
            f"Chat: {chat.key}",
            f"Session: {len(session.messages)} messages, ~{tokens:,} of {threshold:,} tokens "
            "before compaction",
        ]
        compactions = int(session.metadata.get("compactions", 0))
        if compactions:
            lines.append(
                f"Compactions: {compactions}, last at {session.metadata.get('lastCompactionAt')}"
            )
        else:
            lines.append("Compactions: none yet")
        for provider in self.status_providers:
            lines += provider(chat)
        lines.append(f"Workspace: {assistant.paths.root}")
        lines.append(f"Runtime config: {assistant.runtime.describe_state()}")
        return "\n".join(lines)
