"""Sessions kept in Redis, for several replicas of one bot: the same surface as SessionStore.

Each session is one JSON value (the same document as `sessions/<key>.json`). A replica
only works on a chat while it holds the chat's lease, and every write is fenced by that
lease (see `SessionBackend.store`): a replica that lost the lease cannot overwrite what the
new holder wrote. The cache is checked against Redis when a turn starts (`exclusive`) and
when the channel is about to hand the chat a message (`refresh_async`): a session another
replica wrote since is read again, one this replica wrote last is used as it is.

The lease, not a lock file, keeps two turns of one chat apart, so `exclusive` takes no
file lock. What a session drops when compacted or reset still goes to the chat's
append-only log on the workspace (a volume the replicas share).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

import orjson

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.conversation.session import AgentSession, SessionStore

log = logging.getLogger(__name__)


class SessionBackend(Protocol):
    """Where sessions live: read any; write only under the chat's lease (else raise)."""

    async def load(self, key: str) -> bytes | None: ...

    async def store(self, key: str, data: bytes) -> None: ...


def _digest(data: bytes | None) -> bytes | None:
    return hashlib.blake2b(data, digest_size=16).digest() if data is not None else None


class RedisSessionStore(SessionStore):
    def __init__(
        self, directory: Path, backend: SessionBackend, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        super().__init__(directory, clock=clock)
        self.backend = backend
        # Digest of each cached session's value as last read or written by this replica.
        self._known: dict[str, bytes | None] = {}
        self._pending_writes: set[asyncio.Task[None]] = set()
        self._store_locks: dict[str, asyncio.Lock] = {}

    def get(self, key: str) -> AgentSession:
        session = self._cache.get(key)
        if session is None:
            # Not read yet: `refresh_async` reads it before every turn and command.
            session = self._cache[key] = AgentSession.new(key, self.clock())
            self._known.setdefault(key, None)
        return session

    async def refresh_async(self, key: str) -> bool:
        """Read the session again if another replica changed it; True if it did."""
        data = await self.backend.load(key)
        digest = _digest(data)
        if key in self._cache and self._known.get(key) == digest:
            return False
        self._cache[key] = self._parse(key, data)
        self._known[key] = digest
        return True

    @contextlib.asynccontextmanager
    async def exclusive(self, key: str) -> AsyncIterator[AgentSession]:
        await self.refresh_async(key)
        yield self.get(key)

    def refresh(self, key: str) -> bool:
        return False  # nothing on disk to compare with; see `refresh_async`

    def _parse(self, key: str, data: bytes | None) -> AgentSession:
        if data is None:
            return AgentSession.new(key, self.clock())
        try:
            session = AgentSession.from_json_dict(orjson.loads(data))
            if session.id != key:
                raise ValueError(f"value holds session {session.id!r}")
            return session
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
            log.warning("session %s in Redis was unreadable (%s); started fresh", key, exc)
            return AgentSession.new(key, self.clock())

    async def save_async(self, session: AgentSession) -> None:
        key, data, number = self._snapshot(session)
        await asyncio.shield(self._store(key, data, number))

    def save(self, session: AgentSession) -> None:
        """Called on the event loop by synchronous code (/new): the write is scheduled and
        ordered with the others of this session."""
        task = asyncio.get_running_loop().create_task(self._store_logged(*self._snapshot(session)))
        self._pending_writes.add(task)
        task.add_done_callback(self._pending_writes.discard)

    async def _store(self, key: str, data: bytes, number: int) -> None:
        lock = self._store_locks.setdefault(key, asyncio.Lock())
        async with lock:
            if number <= self._written.get(key, 0):
                return  # a newer snapshot of this session is already stored
            await self.backend.store(key, data)
            self._written[key] = number
            self._known[key] = _digest(data)

    async def _store_logged(self, key: str, data: bytes, number: int) -> None:
        try:
            await self._store(key, data, number)
        except Exception as exc:
            log.warning("could not store session %s (%s: %s)", key, type(exc).__name__, exc)

    def erase(self, key: str) -> list[Path]:
        """Empties the session's value in Redis (written like any save, under the chat's
        lease) and removes its files on the shared workspace (the offload log)."""
        self.save(AgentSession.new(key, self.clock()))
        return super().erase(key)

    async def flush(self) -> None:
        """Wait for writes scheduled by `save`."""
        if self._pending_writes:
            await asyncio.wait(set(self._pending_writes))
