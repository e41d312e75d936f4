"""TurnContext: everything one turn carries through the pipeline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mnemobot.config.runtime import RuntimeConfig
from mnemobot.conversation.session import AgentSession, Message
from mnemobot.systems.core.turn_media import NO_MEDIA, TurnMedia

if TYPE_CHECKING:
    from mnemobot.memory.pack.build import MemoryPack
    from mnemobot.systems.core.llm import LLMError
    from mnemobot.systems.core.reply_stream import ReplyStream


# What a turn answers when it has nothing worth saying (a heartbeat, a flush).
NO_REPLY = "NO_REPLY"


@dataclass(frozen=True, slots=True)
class ChatRef:
    """Who and where: `key` is the session id `<channel>:<chatId>[:<threadId>]`."""

    channel: str
    chat_id: str
    user_id: str | None = None
    thread_id: str | None = None
    user_name: str | None = None
    # Several people talk here (a Telegram group): what one of them may do to the chat's
    # memory is decided by permissions, and what each says is remembered under their name.
    is_group: bool = False
    # The sender's language as their app reports it (Telegram's `language_code`: "ru",
    # "pt-br"), for the few lines we word ourselves; None when unknown.
    language: str | None = None
    # Whose numbering the chat's message ids are in when it is not the chat's own (a
    # Telegram private chat or basic group: the bot's account's; see
    # `bot.turn.received.retire_other_numbering`); None when every bot sees the same ids.
    ref_numbering: str | None = None

    @property
    def key(self) -> str:
        base = f"{self.channel}:{self.chat_id}"
        return f"{base}:{self.thread_id}" if self.thread_id else base


def sole_speaker(chat: ChatRef, config: RuntimeConfig) -> bool:
    """Whether the chat's user is the only person of its memory: a private chat with a
    memory of its own. Their facts are one person's whatever name they go by (a renamed
    Telegram user); a group's members, or chats sharing one global memory, stay apart."""
    return not chat.is_group and config.memory.scope == "chat"


@dataclass(frozen=True, slots=True)
class SystemFailure:
    system: str
    error: str


@dataclass(slots=True)
class TurnContext:
    """One turn of one chat as it goes through the systems: who said what (`chat`,
    `user_text`), the session, the config and model in force, the memory pack and prompt
    built for it, and, once the model has answered, the reply."""

    chat: ChatRef
    session: AgentSession
    user_text: str
    config: RuntimeConfig
    now: datetime
    model: str
    # Memory scope of this chat (`<channel>:<chatId>` or `global`); set by the assistant.
    scope: str = ""
    message_refs: list[str] = field(default_factory=list)
    # Images for the model, and the forwarded messages and documents memory keeps apart.
    media: TurnMedia = NO_MEDIA
    # What changes rarely (instructions, the day, MEMORY.md): the beginning of every
    # request of the chat, so the model server can reuse its work on it.
    system_prompt: str = ""
    # What goes with the newest user message only, in this turn's requests (the exact time,
    # what memory recalled for it): framed as data in front of its text, never stored.
    newest_message_context: list[str] = field(default_factory=list)
    # The newest message's time ("14:05 UTC"): with it, not in the system prompt, which
    # says the day only.
    newest_message_time: str = ""
    memory_pack: MemoryPack | None = None
    # Most tokens this turn's recalled memory may take so the request stays within the
    # compaction threshold (set by AutoCompaction; None: only memory's own budgets). Memory
    # yields to the conversation: a smaller pack costs nothing, a compaction a model call.
    memory_room_tokens: int | None = None
    # When the turn happened, in epoch seconds, for the memory it leaves; None means the
    # moment it is written. Set by a caller replaying a past conversation (an import, an eval).
    occurred_at: float | None = None
    # The session's message of this turn (set by the assistant): MemoryPersist marks on
    # it that the words of a turn without an answer were remembered ("remembered").
    user_message: Message | None = None
    # The message was in the session before this turn (handed in again after a crash):
    # an earlier run may have remembered its words already.
    handed_again: bool = False
    # Set by MemoryPersist: the turn's memory write raised (the reply went out regardless).
    memory_write_failed: bool = False
    # The memory write failed on storage (a full disk...): the reply carries a note.
    memory_storage_failed: bool = False
    # Set by MemoryPersist: how many memory items the turn's write stored.
    memory_items_recorded: int = 0
    reply: str | None = None
    # What memory keeps of the reply when it holds a line of the bot's own in place of the
    # model's words (the tool loop saying it stopped at a limit): the model's words alone,
    # maybe none. None: the reply is the model's.
    remembered_reply: str | None = None
    # Lines a tool says must reach the user whatever the model writes (what was scheduled,
    # and when): added to the reply unless it already holds them, to an apology too.
    reply_notes: list[str] = field(default_factory=list)
    # Why the turn ended without a plain answer (limits, LLM failure), for the user and logs.
    stop_reason: str | None = None
    # The classified model failure that ended the turn without an answer, if any.
    llm_error: LLMError | None = None
    tool_outputs: list[str] = field(default_factory=list)
    # The results of the turn's failed tool calls (`tool_runner.is_error_result`): what a
    # tool told the model, which memory does not take for a failure of the user's when the
    # answer repeats it.
    tool_errors: list[str] = field(default_factory=list)
    failures: list[SystemFailure] = field(default_factory=list)
    llm_calls: int = 0
    tool_executions: int = 0
    # Seconds the turn's tool calls have taken (`tool_limits.ToolLimits.max_tool_seconds`).
    tool_seconds: float = 0.0
    # Tool sets beyond the built-in tools (an MCP server's) this turn may use, decided
    # before the tool loop by the bot's access rules for this chat and user.
    allowed_tool_sets: frozenset[str] = frozenset()
    # The names of the tools this turn's requests offer the model (what fits its window),
    # decided before the prompt is built; None: not decided (no tool registry).
    offered_tools: frozenset[str] | None = None
    # Short notes for the user, shown under the reply (a tool server that failed mid-call).
    notes: list[str] = field(default_factory=list)
    # Lines for the model about this turn alone (what its speaker may do here): sent with
    # the newest user message, never stored, and never in the system prompt, whose
    # beginning stays the same from turn to turn.
    turn_notes: list[str] = field(default_factory=list)
    # Messages that were added to the session during this turn (assistant and tool messages).
    new_messages: list[Message] = field(default_factory=list)
    # Free-form per-turn values for third-party systems and tools, which cannot add fields
    # here: key by your distribution name ("myplugin.topic"). Built-in systems use the
    # typed fields above instead.
    extras: dict[str, Any] = field(default_factory=dict)
    # Lets a tool or system publish progress to the channel (e.g. "still working").
    notify: Callable[[str], Awaitable[None]] | None = None
    # Where the channel shows the answer while it is written (None: it shows only the
    # finished reply).
    reply_stream: ReplyStream | None = None

    def add_message(self, message: Message) -> None:
        self.session.messages.append(message)
        self.new_messages.append(message)
