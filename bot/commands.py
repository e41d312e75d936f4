"""Slash commands shared by every channel: /start /help /new /compact /status /stop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.assistant import Assistant
from memory.session import AgentSession
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
CompactHandler = Callable[[ChatRef, str], Awaitable[str]]


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
        compact: CompactHandler | None = None,
    ) -> None:
        self.assistant = assistant
        self.status_providers = list(status_providers or [])
        self.compact = compact

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
            if self.compact is None:
                return "Compaction is turned off in this build."
            return await self.compact(chat, command.args)
        return self.help_text()

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
        threshold = min(
            int(config.llm.max_input_tokens * 0.8), config.compaction.max_context_tokens
        )
        llm_base = assistant.settings.openai_base_url or "OpenAI default endpoint"
        lines = [
            f"Model: {assistant.model_name(config)} ({llm_base})",
            f"Chat: {chat.key}",
            f"Session: {len(session.messages)} messages, ~{tokens:,} of {threshold:,} tokens "
            "before compaction",
        ]
        for provider in self.status_providers:
            lines += provider(chat)
        lines.append(f"Workspace: {assistant.paths.root}")
        lines.append(f"Runtime config: {assistant.runtime.describe_state()}")
        return "\n".join(lines)
