"""Slash commands shared by every channel: /start /help /new /compact /status /stop,
/tools, /retry, /export, /forget_me and /reminders (answered by the handler registered for
it). /retry runs as a turn where files are read (Telegram); anywhere else there is never
anything to retry.

Longer than a module of ours should be: one short handler per command, sharing the
permission check and the reply shape; the longer ones already live elsewhere
(`forget_me`, `memory_status`, `input_status`, `erasure`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from mnemobot.base.clock import shown_time
from mnemobot.bot.i18n import N_, Words, words_for
from mnemobot.bot.tools.chat_tools import window_text
from mnemobot.bot.tools.clock_tool import chat_zone_name
from mnemobot.bot.turn.assistant import STORAGE_FAILED_TEXT, Assistant
from mnemobot.bot.turn.erasure import EXPORTS_DIR_NAME, ScopeErasure, export_prefix
from mnemobot.bot.turn.forget_me import ForgetMe
from mnemobot.bot.turn.input_status import input_tokens_line
from mnemobot.bot.turn.permissions import Permissions
from mnemobot.config.zones import zone_or_local
from mnemobot.conversation.session import AgentSession, shown_in_chat
from mnemobot.memory.services.forget import MemoryForget
from mnemobot.model.windows import ModelWindow, WindowSource
from mnemobot.systems.compaction.compactor import Compactor
from mnemobot.systems.compaction.plan import is_summary
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.model_call.request_messages import estimate_request_tokens, model_messages

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    # In English; `Words.gettext` gives it in the reader's language.
    description: str


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("start", N_("What this bot is and what it remembers")),
    CommandSpec("help", N_("List the commands")),
    CommandSpec("new", N_("Start a new conversation (memory is kept)")),
    CommandSpec("compact", N_("Summarize older messages: /compact [N] keeps the last N")),
    CommandSpec("status", N_("Model, context size, memory and config state")),
    CommandSpec("stop", N_("Stop the running reply and drop queued messages")),
    CommandSpec("tools", N_("The tools I can use in this chat")),
    CommandSpec("retry", N_("Read again the last voice note or file I could not read")),
    CommandSpec("export", N_("Send me everything you remember of this chat, as a file")),
    CommandSpec("forget_me", N_("Erase this chat's memory and conversation (asks to confirm)")),
    CommandSpec("reminders", N_("Scheduled reminders and tasks: /reminders cancel N")),
)
COMMAND_NAMES = frozenset(spec.name for spec in COMMANDS)
NOTHING_TO_RETRY = N_(
    "Nothing to retry: no voice note or file of yours here is waiting to be read."
)


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file a command sends back (a channel that can sends it as a document)."""

    filename: str
    data: bytes
    # Where a copy was written, for channels that show a path instead (the console).
    path: str | None = None


@dataclass(frozen=True, slots=True)
class CommandReply:
    text: str
    attachment: Attachment | None = None


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


# Lines a part of the bot adds to /status (memory, maintenance, the chat's channel), and
# what /stop does in the chat's channel.
StatusProvider = Callable[[ChatRef], list[str]]
# Status lines that need I/O (Redis) are worked out before /status is put together.
AsyncStatusProvider = Callable[[ChatRef], Awaitable[list[str]]]
# A command answered by a part of the bot that registered it (`Commands.handlers`).
CommandHandler = Callable[[ChatRef, str], Awaitable[str]]
StopHandler = Callable[[ChatRef], Awaitable[str]]
ToolsText = Callable[[ChatRef], Awaitable[str]]

DEFAULT_COMPACT_KEEP = 10


MAX_COMPACT_KEEP = 100


def parse_keep_count(args: str) -> int | None:
    """`/compact [N]`: N defaults to 10; None if N is not a number in 1..100.

    Out of range is refused, not clamped: `/compact -5` meaning "keep 1" would throw away
    nearly the whole conversation on a typo.
    """
    args = args.strip()
    if not args:
        return DEFAULT_COMPACT_KEEP
    try:
        keep = int(args.split()[0])
    except ValueError:
        return None
    return keep if 1 <= keep <= MAX_COMPACT_KEEP else None


def endpoint_for_display(base_url: str | None) -> str:
    """Scheme, host and port only: a base URL may carry credentials or a key parameter."""
    if not base_url:
        return "OpenAI default endpoint"
    parts = urlsplit(base_url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def estimate_session_tokens(assistant: Assistant, session: AgentSession) -> int:
    prompt_tokens = int(session.metadata.get("lastSystemPromptTokens", 0) or 0) + int(
        session.metadata.get("lastMemoryTokens", 0) or 0
    )
    messages = model_messages("", session.messages, keep_tool_results_turns=1_000_000)
    return prompt_tokens + estimate_request_tokens(messages)


class Commands:
    def __init__(
        self,
        assistant: Assistant,
        *,
        status_providers: Sequence[StatusProvider] = (),
        async_status_providers: Sequence[AsyncStatusProvider] = (),
        handlers: Mapping[str, CommandHandler] | None = None,
        compactor: Compactor | None = None,
        memory: MemoryForget | None = None,
        known_window: Callable[[str], ModelWindow | None] | None = None,
        window_unstated: Callable[[str], bool] | None = None,
        permissions: Permissions | None = None,
        erasure: ScopeErasure | None = None,
        tools_text: ToolsText | None = None,
    ) -> None:
        self.assistant = assistant
        # /tools: what the model may use in a chat (built-in and MCP tools).
        self.tools_text = tools_text
        self.permissions = permissions or Permissions(assistant.config)
        self.erasure = erasure
        self.forgetting = ForgetMe(assistant, erasure) if erasure is not None else None
        # Wired once, by the composition root; the chat's channel adds its own per call.
        self.status_providers = tuple(status_providers)
        # Status lines that need I/O (Redis), worked out before /status is put together.
        self.async_status_providers = tuple(async_status_providers)
        # Commands of COMMANDS answered elsewhere (/reminders), by name.
        self.handlers = dict(handlers or {})
        self.compactor = compactor
        # The model's learned context window, when the model client knows one.
        self.known_window = known_window
        # Whether the model's server was asked for its window and did not say.
        self.window_unstated = window_unstated
        # /export: the chat's memory as one zip.
        self.memory = memory

    async def reply(
        self,
        chat: ChatRef,
        command: ParsedCommand,
        *,
        stop: StopHandler | None = None,
        channel_status: StatusProvider | None = None,
    ) -> CommandReply:
        """The command's answer, with a file when it has one (/export).

        `stop` and `channel_status` come from the chat's channel: what /stop does there,
        and what it adds to /status (its queue, replies not yet delivered).
        """
        refusal = await self._refusal(chat, command)
        if refusal is not None:
            return CommandReply(refusal)
        if command.name == "export":
            return await self.export(chat)
        text = await self.run(chat, command, stop=stop, channel_status=channel_status, checked=True)
        return CommandReply(text)

    async def run(
        self,
        chat: ChatRef,
        command: ParsedCommand,
        *,
        stop: StopHandler | None = None,
        channel_status: StatusProvider | None = None,
        checked: bool = False,
    ) -> str:
        """The command's answer as text; /export's file is written and its path named.

        `checked`: the caller has already asked `permissions` (see `reply`).
        """
        if not checked and (refusal := await self._refusal(chat, command)):
            return refusal
        if command.name == "export":
            return (await self.export(chat)).text
        handler = self.handlers.get(command.name)
        if handler is not None:
            return await handler(chat, command.args)
        if command.name == "forget_me":
            return await self.forget_me(chat, command.args)
        words = words_for(chat.language)
        if command.name == "start":
            return self.start_text(chat)
        if command.name == "help":
            return self.help_text(words)
        if command.name == "retry":
            return words.gettext(NOTHING_TO_RETRY)
        if command.name == "new":
            try:
                cleared = self.assistant.reset_session(chat)
            except OSError as exc:
                log.warning("could not store the session of %s (%s)", chat.key, exc)
                return words.gettext(STORAGE_FAILED_TEXT)
            return words.ngettext(
                "Started a new conversation ({count} message cleared). "
                "I still remember what I learned about you.",
                "Started a new conversation ({count} messages cleared). "
                "I still remember what I learned about you.",
                cleared,
            )
        if command.name == "status":
            extra = [line for p in self.async_status_providers for line in await p(chat)]
            return self.status_text(chat, channel_status, extra)
        if command.name == "stop":
            if stop is None:
                return words.gettext("Nothing is running.")
            return await stop(chat)
        if command.name == "compact":
            return await self.compact(chat, command.args)
        if command.name == "tools":
            return (
                await self.tools_text(chat) if self.tools_text else words.gettext("No tools here.")
            )
        return self.help_text(words)

    async def _refusal(self, chat: ChatRef, command: ParsedCommand) -> str | None:
        # An erasure confirmed before a crash is finished whoever confirms it again (the
        # inbox hands the confirmation in again after a restart): it was allowed then.
        forgetting = self.forgetting
        if command.name == "forget_me" and forgetting and await forgetting.interrupted(chat):
            return None
        return await self.permissions.refusal(chat, command.name, words_for(chat.language))

    async def compact(self, chat: ChatRef, args: str) -> str:
        words = words_for(chat.language)
        keep = parse_keep_count(args)
        if keep is None:
            return words.gettext(
                "Usage: /compact [N] - keep the last N messages (1-100, default 10)."
            )
        if self.compactor is None:
            return words.gettext("Compaction is not available.")
        assistant = self.assistant
        # Waits for a running turn of this chat, so the two never rewrite the session at once
        # (nor does maintenance, erasing forgotten texts from it: it takes the file lock).
        # The user waits for its summary like for a reply: its model calls are a turn's.
        async with (
            assistant.lock_for(chat.key),
            assistant.sessions.exclusive(chat.key),
            assistant.gate.turn(chat.key),
        ):
            session = assistant.session(chat)
            count = sum(1 for m in session.messages if not is_summary(m))
            if count <= keep:
                return _nothing_to_compact(words, count)
            config = assistant.config()
            result = await self.compactor.compact(
                session,
                keep_last=keep,
                config=config,
                scope=assistant.scope_for(chat, config),
                tz=zone_or_local(chat_zone_name(session.metadata, config)),
            )
        if result.removed == 0:
            return _nothing_to_compact(words, count)
        if result.summary_ok:
            return words.ngettext(
                "Compacted with summary: removed {count} message, kept last {kept}.",
                "Compacted with summary: removed {count} messages, kept last {kept}.",
                result.removed,
                kept=words.number(result.kept),
            )
        return words.ngettext(
            "Compacted: removed {count} message, kept last {kept} (no summary: {reason}).",
            "Compacted: removed {count} messages, kept last {kept} (no summary: {reason}).",
            result.removed,
            kept=words.number(result.kept),
            reason=result.no_summary_reason,
        )

    async def export(self, chat: ChatRef) -> CommandReply:
        memory = self.memory
        if memory is None:
            return CommandReply("Export is not available.")
        scope = self.assistant.scope_for(chat, self.assistant.config())
        data = await memory.scopes.run(scope, partial(memory.export_scope, scope))
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.assistant.clock()))
        filename = f"{export_prefix(scope)}{stamp}.zip"
        path = self.assistant.paths.root / EXPORTS_DIR_NAME / filename
        await memory.scopes.run(scope, partial(_write_file, path, data))
        # Where the copy lies is the operator's business (everyone in a group reads the
        # caption): the path only where the reader owns the disk.
        words = words_for(chat.language)
        kept = (
            words.gettext("Written to {path}.", path=str(path))
            if chat.channel == "console"
            else words.gettext("The bot keeps a copy until /forget_me.")
        )
        space = "" if words.language == "zh" else " "
        return CommandReply(
            words.gettext(
                "Your memory of this chat: {file} (MEMORY.md, daily notes, items as JSONL).",
                file=filename,
            )
            + space
            + kept,
            Attachment(filename, data, str(path)),
        )

    async def forget_me(self, chat: ChatRef, args: str) -> str:
        if self.forgetting is None:
            return words_for(chat.language).gettext("Erasing memory is not available.")
        return await self.forgetting.answer(chat, args)

    async def finish_interrupted_erasures(self, channel: str) -> list[tuple[ChatRef, str]]:
        """Finish the erasures of `channel`'s chats that a crash cut (see `ForgetMe`)."""
        if self.forgetting is None:
            return []
        return await self.forgetting.finish_interrupted(channel)

    def start_text(self, chat: ChatRef) -> str:
        words = words_for(chat.language)
        name = self.assistant.config().assistant.name
        if chat.user_id:
            hello = words.gettext(
                "Hi, I'm {name}, an assistant that remembers. I keep notes of our "
                "conversations and the facts you tell me (preferences, people, projects, "
                "decisions), so I can recall them weeks later, even after /new. Each chat has "
                "its own memory. Your user id is {user_id}.",
                name=name,
                user_id=chat.user_id,
            )
        else:
            hello = words.gettext(
                "Hi, I'm {name}, an assistant that remembers. I keep notes of our "
                "conversations and the facts you tell me (preferences, people, projects, "
                "decisions), so I can recall them weeks later, even after /new. Each chat has "
                "its own memory.",
                name=name,
            )
        return f"{hello}\n\n{self.help_text(words)}"

    def help_text(self, words: Words | None = None) -> str:
        words = words or words_for(None)
        lines = [words.gettext("Commands:")]
        lines += [f"/{spec.name} - {words.gettext(spec.description)}" for spec in COMMANDS]
        return "\n".join(lines)

    def status_text(
        self,
        chat: ChatRef,
        channel_status: StatusProvider | None = None,
        extra: Sequence[str] = (),
    ) -> str:
        """`extra`: the lines of the async providers, worked out by the caller."""
        words = words_for(chat.language)
        assistant = self.assistant
        config = assistant.config()
        session = assistant.session(chat)
        tokens = estimate_session_tokens(assistant, session)
        model = assistant.model_name(config)
        window = self.known_window(model) if self.known_window else None
        if window is not None:
            config = config.for_context_window(window.tokens)
        else:
            unstated = self.window_unstated is not None and self.window_unstated(model)
            source: WindowSource = "assumed" if unstated else "config"
            window = ModelWindow(config.llm.max_input_tokens, source, "llm.maxInputTokens")
        threshold = config.compaction_threshold_tokens()
        # Where the model runs is the operator's business, not every group member's.
        where = ""
        if self.permissions.is_operator(chat):
            where = f" ({endpoint_for_display(assistant.settings.openai_base_url)})"
        lines = [
            words.gettext("Model: {model}", model=f"{model}{where}"),
            words.gettext("Context window: {window}", window=window_text(words, window)),
            words.gettext("Chat: {chat}", chat=chat.key),
            words.ngettext(
                "Session: {count} message, ~{tokens} of {threshold} tokens before compaction",
                "Session: {count} messages, ~{tokens} of {threshold} tokens before compaction",
                sum(1 for message in session.messages if shown_in_chat(message)),
                tokens=words.number(tokens),
                threshold=words.number(threshold),
            ),
        ]
        lines.append(input_tokens_line(words, session.metadata))
        compactions = int(session.metadata.get("compactions", 0))
        if compactions:
            lines.append(
                words.gettext(
                    "Compactions: {count}, last at {at}",
                    count=words.number(compactions),
                    at=shown_time(str(session.metadata.get("lastCompactionAt") or "?")),
                )
            )
        else:
            lines.append(words.gettext("Compactions: none yet"))
        for provider in self.status_providers:
            lines += provider(chat)
        lines += extra
        if channel_status is not None:
            lines += channel_status(chat)
        # Everyone in a group reads /status: no file-system paths here (`doctor` shows them).
        workspace_ok = os.access(assistant.paths.sessions, os.W_OK)
        lines.append(
            words.gettext("Workspace: ok")
            if workspace_ok
            else words.gettext("Workspace: not writable (run mnemobot doctor)")
        )
        lines.append(
            words.gettext(
                "Runtime config: {state}", state=assistant.runtime.describe_state(words.gettext)
            )
        )
        # A provider or an OS error message may still name a file: show it relative.
        return "\n".join(lines).replace(f"{assistant.paths.root}{os.sep}", "<workspace>/")


def _nothing_to_compact(words: Words, count: int) -> str:
    return words.ngettext(
        "Nothing to compact (session has {count} message).",
        "Nothing to compact (session has {count} messages).",
        count,
    )


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
