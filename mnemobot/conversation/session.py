"""AgentSession: a chat's conversation, stored as `sessions/<channel>:<chatId>.json`."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import itertools
import logging
import re
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Required, TypedDict, cast

import orjson

from mnemobot.base.atomic_file import append_jsonl, write_atomic
from mnemobot.base.clock import SYSTEM_CLOCK, Clock, from_iso, to_iso
from mnemobot.base.file_lock import private_file_lock

log = logging.getLogger(__name__)

# Session reads and writes have threads of their own: they never queue behind other work
# on asyncio's default pool, which one chat's work can fill. Four: saves of different
# chats run side by side (each one fsyncs), those of one chat are ordered by its lock.
SESSION_THREADS = ThreadPoolExecutor(4, thread_name_prefix="sessions")

_SESSION_KEY = re.compile(r"^[A-Za-z0-9_-]+:[A-Za-z0-9_@.:-]+$")

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = frozenset({"system", "user", "assistant", "tool"})

# One message of a conversation as the session keeps it. The model is sent `role`,
# `content`, `tool_calls`, `tool_call_id` and `name` (`request_messages.API_KEYS`); the
# rest is the bot's own. Times are ISO 8601 (`to_iso`). Files written by older versions
# may lack any key but the role. (The functional form: "from" is a keyword.)
Message = TypedDict(
    "Message",
    {
        "role": Required[Role],
        # None: an assistant message that only calls tools.
        "content": str | None,
        "at": str,
        # The channel's ids of the messages this one holds (several when merged).
        "refs": list[str],
        # Who wrote it, in a group.
        "from": str,
        # What the message was made of (files, forwards), kept so an edit of one changes
        # that part only (`turn_media.parts_to_keep`).
        "parts": list[dict[str, str]],
        "tags": list[str],
        # The assistant's: the whole reply the user read (text before its tool calls too),
        # when it differs from `content`; and whether /stop cut it short.
        "reply": str,
        "stopped": bool,
        # An assistant message's tool calls (`ToolCall.to_message_dict`), and a tool
        # result's call id and tool name.
        "tool_calls": list[dict[str, Any]],
        "tool_call_id": str,
        "name": str,
        # Notes a tool result adds to the reply (`resumed_turn.REPLY_NOTES_KEY`).
        "notes": list[str],
        # When its message was last edited.
        "edited": str,
        # A queued message kept at shutdown without its turn.
        "unanswered": bool,
        # A user message no one in the chat wrote: a scheduled task's prompt, or the line
        # that a reminder came due (the chat shows only the bot's reply to it).
        "scheduled": bool,
        # A user message whose turn got no answer (the model failed, /stop) and whose
        # words memory holds already: a later run of it does not write them again.
        "remembered": bool,
    },
    total=False,
)

# Metadata of a fresh session that replaced an unreadable file: the set-aside file's name,
# so the chat's next reply can say so once (the assistant removes it when it does).
SET_ASIDE_KEY = "setAsideFile"
# The folder, in the sessions' one, of the ledgers of flushes left for later.
FLUSH_LEDGER_DIR_NAME = "pending-flushes"


def shown_in_chat(message: Message) -> bool:
    """A message the chat shows, as a user counts them: one of theirs, or a reply of the
    bot's (not an assistant message that only calls tools, a tool's result, a summary or
    a scheduled task's own words)."""
    role = message.get("role")
    if role == "user":
        return not message.get("scheduled")
    return role == "assistant" and not message.get("tool_calls") and bool(message.get("content"))


def valid_unicode(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD.

    They arrive from undecodable stdin bytes or a model's JSON (`"\\udcff"`), and JSON
    writers refuse them: left in, one such string would block every later save of a chat.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        # Undecodable input bytes come as surrogate escapes: one U+FFFD per original byte.
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _valid_unicode_deep(value: Any) -> Any:
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, list):
        return [_valid_unicode_deep(v) for v in value]
    if isinstance(value, dict):
        return {valid_unicode(str(k)): _valid_unicode_deep(v) for k, v in value.items()}
    return value


class InvalidSessionKey(ValueError):
    pass


def check_session_key(key: str) -> str:
    """Session keys become file names: allow only `<channel>:<chatId>[:<thread>]` characters."""
    if not _SESSION_KEY.match(key) or ".." in key or len(key) > 200:
        raise InvalidSessionKey(
            f"invalid chat key {key!r}: use <channel>:<chatId>, e.g. console:local or telegram:42"
        )
    return key


@dataclass(slots=True)
class AgentSession:
    id: str
    channel_type: str
    chat_id: str
    # Seconds since the epoch, by the store's clock (a replay dates a session in its past).
    created_at: float
    updated_at: float
    messages: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, key: str, now: float) -> AgentSession:
        channel, _, chat_id = key.partition(":")
        return cls(id=key, channel_type=channel, chat_id=chat_id, created_at=now, updated_at=now)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "channelType": self.channel_type,
            "chatId": self.chat_id,
            "messages": self.messages,
            "metadata": self.metadata,
            "state": self.state,
            "createdAt": to_iso(self.created_at),
            "updatedAt": to_iso(self.updated_at),
        }

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> AgentSession:
        messages = data["messages"]
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and m.get("role") in _ROLES for m in messages
        ):
            raise ValueError("messages must be a list of objects with a valid role")
        return cls(
            id=str(data["id"]),
            channel_type=str(data["channelType"]),
            chat_id=str(data["chatId"]),
            # Checked for their roles above; the other keys are read with care.
            messages=cast(list[Message], messages),
            metadata=dict(data.get("metadata") or {}),
            state=dict(data.get("state") or {}),
            created_at=from_iso(data["createdAt"]),
            updated_at=from_iso(data["updatedAt"]),
        )


class SessionStore:
    """Sessions cached in memory, loaded lazily, saved atomically after every turn.

    `save_async` keeps the event loop free while the file and its directory are fsynced
    (milliseconds on a busy disk, which would stall every other chat): the session is
    serialized on the loop, so the snapshot is exactly the state at the call, and written
    in a worker thread. Writes of one session are ordered: each snapshot gets a number and
    an older one never replaces a newer one on disk. `clock` dates new sessions and saves.
    """

    def __init__(self, directory: Path, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.directory = directory
        self.clock = clock
        self._cache: dict[str, AgentSession] = {}
        # What each cached session's file looked like when we last read or wrote it: a
        # different file on disk means another process (a second `mnemobot chat`, the CLI)
        # wrote it, and the cache must be read again before the next turn builds on it.
        self._known_files: dict[str, tuple[int, int, int] | None] = {}
        self._snapshot_numbers = itertools.count(1)
        self._write_locks: dict[str, threading.Lock] = {}
        self._written: dict[str, int] = {}

    def path_for(self, key: str) -> Path:
        return self.directory / f"{check_session_key(key)}.json"

    def offload_path_for(self, key: str) -> Path:
        return self.directory / f"{check_session_key(key)}.log.jsonl"

    def flush_ledger_path_for(self, key: str) -> Path:
        return flush_ledger_path(self.directory, key)

    def lock_path_for(self, key: str) -> Path:
        return self.directory / f"{check_session_key(key)}.lock"

    def get(self, key: str) -> AgentSession:
        session = self._cache.get(key)
        if session is None:
            self._known_files[key] = _file_signature(self.path_for(key))
            session = self._load(key)
            self._cache[key] = session
        return session

    @contextlib.asynccontextmanager
    async def exclusive(self, key: str) -> AsyncIterator[AgentSession]:
        """Hold a chat's session for one turn, against other processes on this workspace.

        Takes the session's lock file (waiting in a worker thread, so other chats go on),
        re-reads the session if another process changed it since we last saw it, and
        yields the current session; its saves inside the block are never interleaved
        with another process's turn of the same chat, so no message is lost.
        """
        lock = private_file_lock(self.lock_path_for(key))
        self.directory.mkdir(parents=True, exist_ok=True)
        # The wait for another process's turn may be long: not on the sessions' threads.
        await asyncio.to_thread(lock.acquire)
        try:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(SESSION_THREADS, self.refresh, key)
            yield self.get(key)
        finally:
            lock.release()

    def refresh(self, key: str) -> bool:
        """Drop the cached session if its file changed behind our back; True if it did."""
        if key not in self._cache:
            return False
        if _file_signature(self.path_for(key)) == self._known_files.get(key):
            return False
        del self._cache[key]
        return True

    def _load(self, key: str) -> AgentSession:
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return AgentSession.new(key, self.clock())
        except OSError as exc:
            data = b""
            log.warning("session file of %s is unreadable (%s)", key, exc)
        try:
            session = AgentSession.from_json_dict(orjson.loads(data))
            if session.id != key:
                raise ValueError(f"file holds session {session.id!r}")
            return session
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
            # The nanoseconds keep two set-aside copies apart under a clock that stands still.
            stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(self.clock()))
            stamp += f"{time.time_ns() % 1_000_000_000:09d}"
            aside = path.with_name(f"{path.name}.corrupt-{stamp}")
            path.replace(aside)
            log.warning(
                "session %s was unreadable (%s); moved it to %s and started fresh",
                key,
                exc,
                aside.name,
            )
            fresh = AgentSession.new(key, self.clock())
            fresh.metadata[SET_ASIDE_KEY] = aside.name
            return fresh

    def save(self, session: AgentSession) -> None:
        """Write the session now, on the calling thread (blocks until it is on disk)."""
        self._write(*self._snapshot(session))

    async def save_async(self, session: AgentSession) -> None:
        """Write the session in a worker thread; returns once it is on disk.

        The write finishes even if the awaiting task is cancelled (/stop, shutdown), so a
        save that was started is never lost halfway through the queue.
        """
        snapshot = self._snapshot(session)
        loop = asyncio.get_running_loop()
        await asyncio.shield(loop.run_in_executor(SESSION_THREADS, self._write, *snapshot))

    def _snapshot(self, session: AgentSession) -> tuple[str, bytes, int]:
        session.updated_at = self.clock()
        try:
            data = orjson.dumps(session.to_json_dict(), option=orjson.OPT_INDENT_2)
        except TypeError:
            # A string no JSON writer accepts slipped in: repair it rather than never save.
            session.messages[:] = _valid_unicode_deep(session.messages)
            session.metadata = _valid_unicode_deep(session.metadata)
            session.state = _valid_unicode_deep(session.state)
            data = orjson.dumps(session.to_json_dict(), option=orjson.OPT_INDENT_2)
        return session.id, data, next(self._snapshot_numbers)

    def _write(self, key: str, data: bytes, number: int) -> None:
        path = self.path_for(key)
        lock = self._write_locks.setdefault(key, threading.Lock())
        with lock:
            if number <= self._written.get(key, 0):
                return  # a newer snapshot of this session is already on disk
            write_atomic(path, data)
            self._written[key] = number
            self._known_files[key] = _file_signature(path)

    def append_offload(self, key: str, messages: list[Message]) -> None:
        """Append raw messages to the chat's append-only log before they leave the session.

        Idempotent across a crash: when a compaction was killed after writing the log but
        before saving the shortened session, the next one offloads the same messages again;
        the ones already at the end of the log are not written twice.
        """
        path = self.offload_path_for(key)
        already = _overlap(_tail_records(path, len(messages)), messages)
        if already:
            log.info("offload log of %s already holds %d of these messages", key, already)
        append_jsonl(path, messages[already:])

    def cached_keys(self) -> list[str]:
        return list(self._cache)

    def erase(self, key: str) -> list[Path]:
        """Forget a session for good: its cached copy, its file, its offload log and any
        set-aside copies of an unreadable file; returns the files removed. The lock file
        stays (another process may hold it; it holds no text)."""
        self._cache.pop(key, None)
        self._known_files.pop(key, None)
        candidates = [self.path_for(key), self.offload_path_for(key)]
        candidates.append(self.flush_ledger_path_for(key))
        candidates += sorted(self.directory.glob(f"{glob.escape(key)}.json.*"))
        removed = []
        for path in candidates:
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed.append(path)
        return removed


def _file_signature(path: Path) -> tuple[int, int, int] | None:
    """Identity of a file's current content as cheap as a stat: inode, size, mtime."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


# The end of an offload log read back to find a batch written before a crash; a batch is
# the messages one compaction drops, far smaller than this.
_TAIL_READ_BYTES = 8 << 20


def flush_ledger_path(directory: Path, key: str) -> Path:
    """Where the memory flushes a compaction of chat `key` left for later are noted
    (`conversation.pending_flushes`): a folder of their own, so nothing that lists the
    sessions by their files' names takes a ledger for a session."""
    return directory / FLUSH_LEDGER_DIR_NAME / f"{check_session_key(key)}.json"


def _tail_records(path: Path, count: int) -> list[dict[str, Any]]:
    """The last `count` whole JSON records of a JSONL file (fewer if it has fewer)."""
    if count <= 0:
        return []
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _TAIL_READ_BYTES))
            data = handle.read()
    except FileNotFoundError:
        return []
    records: list[dict[str, Any]] = []
    for line in data.split(b"\n")[-(count + 2) :]:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records[-count:]


def _overlap(logged: list[dict[str, Any]], batch: list[Message]) -> int:
    """How many leading messages of `batch` are exactly the last ones of `logged`."""
    for size in range(min(len(logged), len(batch)), 0, -1):
        if logged[-size:] == batch[:size]:
            return size
    return 0
