"""The `Channel` protocol: what a way of talking to the bot (Telegram, the console) provides,
and `ChannelHost`: what the composition root hands a channel.

A channel turns its own updates into `LaneJob`s and hands them to a `ChatDispatcher`, which
answers commands, keeps each chat's messages in order and runs the turns; the channel only
says how to start, how to stop, how text and files get back to a chat and what it adds to
a chat's `/status`.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from mnemobot.base.clock import Clock
from mnemobot.bot.channels.lanes import LaneJob, MessageJob
from mnemobot.bot.media.reader import MediaReader
from mnemobot.bot.schedule.service import ScheduleService
from mnemobot.bot.tools.confirmations import Confirmations
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.commands import Attachment, Commands
from mnemobot.bot.turn.erasure import ScopeErasure
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import SessionStore
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.core.reply_stream import ReplyStream
from mnemobot.systems.core.turn_media import NO_MEDIA, TurnMedia


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """A job's messages read for the turn: the text the model and the session get, what the
    turn carries besides (images, forwards, documents), and lines for the user."""

    text: str
    media: TurnMedia = NO_MEDIA
    # Said to the user even when there is no turn ("the voice note is over 20 MB...").
    notices: tuple[str, ...] = ()
    # Added to the reply ("I heard: ..." for a doubtful transcript).
    reply_notes: tuple[str, ...] = ()


class Channel(Protocol):
    # The `ChatRef.channel` of its chats, and the key of its runtime-config section.
    name: str

    async def start(self) -> None:
        """Begin taking messages; returns once the channel is ready."""
        ...

    async def stop(self, grace_seconds: float) -> None:
        """Take nothing new, let running turns finish for `grace_seconds`, cancel the rest."""
        ...

    async def send_text(self, job: LaneJob, text: str) -> None:
        """Plain text to the chat of `job` (command answers, notices), quoting as it says."""
        ...

    async def send_reply(self, job: LaneJob, markdown: str) -> None:
        """The assistant's answer, in Markdown, rendered as the channel can."""
        ...

    async def send_document(self, job: LaneJob, attachment: Attachment, caption: str) -> None:
        """A file a command made (`/export`'s zip) with `caption`; a channel that cannot send
        files says where the file was written instead."""
        ...

    async def prepare_turn(self, job: MessageJob) -> PreparedTurn:
        """The job's messages as a turn's text and media, once the chat's turn starts (files
        are fetched and read here, never while updates are being read)."""
        ...

    def working(self, job: LaneJob) -> AbstractAsyncContextManager[object]:
        """Entered while a turn runs, e.g. Telegram's typing indicator."""
        ...

    def reply_stream(self, job: LaneJob) -> ChannelReplyStream | None:
        """Where the reply to `job` shows while it is written (None: only when finished);
        `send_reply` then replaces it with the finished reply."""
        ...

    async def close_stream(self, job: LaneJob, *, answered: bool) -> None:
        """The turn of `job` ended without `send_reply`: stop its stream, if any.
        `answered`: the message will not be answered again (not a shutdown)."""
        ...

    def status_lines(self, chat: ChatRef) -> list[str]:
        """What this channel adds to `/status` in `chat` (e.g. replies not yet delivered)."""
        ...


class ChannelReplyStream(ReplyStream, Protocol):
    """A channel's `ReplyStream`, as the dispatcher drives it."""

    latest: str
    """The text shown last (a stopped reply: the text with its stop mark)."""

    @property
    def showing(self) -> bool:
        """Whether the chat sees a preview now (text, or only a tool's status line)."""
        ...

    def request_stop(self) -> None:
        """/stop: the turn is cancelled next; what was shown is kept (`stop_requested`)."""
        ...


class ChannelHost(Protocol):
    """The assembled bot's parts a channel works with; `bot.app.App` is one.

    Channels get these from the composition root and never import it: the arrow points
    from the root down to the channels.
    """

    paths: WorkspacePaths

    # A property: mypy takes a callable field of a dataclass (the root's) for read-only.
    @property
    def clock(self) -> Clock:
        """The bot's time (a bench or a test passes its own): what a channel keeps is
        dated by it."""

    # Read `runtime.current()` each time: the runtime config hot-reloads.
    runtime: RuntimeConfigStore
    sessions: SessionStore
    memory: WorkspaceMemory
    assistant: Assistant
    commands: Commands
    erasure: ScopeErasure
    # Scheduled tasks: a channel that can take firings attaches to its scheduler.
    schedule: ScheduleService | None
    # Questions a turn asks its user before a tool runs; the channel brings the answers.
    confirmations: Confirmations
    # Speech to text, image descriptions: what channels that take files use.
    media: MediaReader

    async def tools_ready(self) -> None:
        """Return once the tools of outside servers (MCP) have started or failed to."""
        ...
