"""What `/forget_me` must remember across a crash or another replica: who was asked to
confirm (until when), and which erasures were confirmed and are not finished yet.

An erasure is written here (durably: fsynced, or in Redis) before its first file goes and
struck out once its last went, so one cut by a crash is finished when the confirmation is
handled again (a channel's durable inbox hands it in again after a restart) or when the
channel starts (the console: `Commands.finish_interrupted_erasures`). A pending ask lives
here too, so a restart, or a confirmation that reaches another replica, does not ask again.

Two kinds: a JSON file in the workspace's `delivery/` folder (one process), and Redis
(`BOT_REDIS_URL`, every replica sees the same; keys `<namespace>:forget:pending`, a hash
of scope -> erasure, and `<namespace>:forget:ask:<chat key>:<user id>`, which expires).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson
from redis.asyncio import Redis

from mnemobot.base.atomic_file import write_atomic

JOURNAL_FILE_NAME = "forget-me.json"


@dataclass(frozen=True, slots=True)
class PendingErasure:
    """A confirmed erasure of `scope`, not finished yet; who confirmed it, and where."""

    scope: str
    channel: str
    chat_id: str
    thread_id: str | None
    user_id: str | None
    is_group: bool
    began_at: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PendingErasure:
        return cls(
            scope=str(data["scope"]),
            channel=str(data["channel"]),
            chat_id=str(data["chat_id"]),
            thread_id=None if data.get("thread_id") is None else str(data["thread_id"]),
            user_id=None if data.get("user_id") is None else str(data["user_id"]),
            is_group=bool(data.get("is_group", False)),
            began_at=float(data.get("began_at", 0.0)),
        )


class ErasureJournal(Protocol):
    async def ask(self, chat_key: str, user_id: str | None, until: float, now: float) -> None:
        """`user_id` of `chat_key` was asked to confirm, until `until` (epoch seconds)."""
        ...

    async def take_ask(self, chat_key: str, user_id: str | None) -> float | None:
        """Until when that user's confirmation counts (None: never asked); asked no more."""
        ...

    async def begin(self, erasure: PendingErasure) -> None:
        """Kept before the erasure's first step runs."""
        ...

    async def pending(self) -> list[PendingErasure]:
        """Every erasure begun and not finished."""
        ...

    async def finish(self, scope: str) -> None:
        """The erasure of `scope` ran to its end."""
        ...


def _ask_key(chat_key: str, user_id: str | None) -> str:
    return f"{chat_key}:{user_id or '-'}"


class FileErasureJournal:
    """One small JSON file, rewritten whole (fsynced) on each change; one process uses it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def in_delivery(cls, delivery: Path) -> FileErasureJournal:
        return cls(delivery / JOURNAL_FILE_NAME)

    def _read(self) -> dict[str, Any]:
        try:
            data = orjson.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {"asks": {}, "pending": {}}
        except orjson.JSONDecodeError:
            # Written whole or not at all: only a hand edit makes it unreadable. Erasures
            # are what it must not lose, so say so loudly rather than start empty.
            raise OSError(f"{self.path} is not valid JSON; fix or remove it") from None
        return {"asks": dict(data.get("asks") or {}), "pending": dict(data.get("pending") or {})}

    def _change(self, change: Callable[[dict[str, Any]], Any]) -> Any:
        """Apply `change` to the file's data; written (fsynced) only when it changed."""
        with self._lock:
            data = self._read()
            before = orjson.dumps(data)
            result = change(data)
            if orjson.dumps(data) != before:
                write_atomic(self.path, orjson.dumps(data, option=orjson.OPT_INDENT_2))
            return result

    async def ask(self, chat_key: str, user_id: str | None, until: float, now: float) -> None:
        def change(data: dict[str, Any]) -> None:
            # Asks that ran out go as new ones come: the file stays small.
            data["asks"] = {k: v for k, v in data["asks"].items() if float(v) > now}
            data["asks"][_ask_key(chat_key, user_id)] = until

        await asyncio.to_thread(self._change, change)

    async def take_ask(self, chat_key: str, user_id: str | None) -> float | None:
        key = _ask_key(chat_key, user_id)
        until = await asyncio.to_thread(self._change, lambda data: data["asks"].pop(key, None))
        return None if until is None else float(until)

    async def begin(self, erasure: PendingErasure) -> None:
        def change(data: dict[str, Any]) -> None:
            data["pending"][erasure.scope] = erasure.to_json()

        await asyncio.to_thread(self._change, change)

    async def pending(self) -> list[PendingErasure]:
        data = await asyncio.to_thread(self._read)
        return [PendingErasure.from_json(v) for v in data["pending"].values()]

    async def finish(self, scope: str) -> None:
        await asyncio.to_thread(self._change, lambda d: d["pending"].pop(scope, None))


class RedisErasureJournal:
    """In Redis, so every replica sees an ask and an unfinished erasure (Redis must run
    with `appendonly yes` for them to outlive a Redis restart)."""

    def __init__(self, client: Redis, *, namespace: str = "mnemobot") -> None:
        self.client = client
        self.namespace = namespace

    def _key(self, *parts: str) -> str:
        return ":".join((self.namespace, "forget", *parts))

    async def ask(self, chat_key: str, user_id: str | None, until: float, now: float) -> None:
        ttl_ms = max(1, int((until - now) * 1000))
        await self.client.set(self._key("ask", _ask_key(chat_key, user_id)), str(until), px=ttl_ms)

    async def take_ask(self, chat_key: str, user_id: str | None) -> float | None:
        key = self._key("ask", _ask_key(chat_key, user_id))
        # GET and DEL in one transaction (GETDEL needs Redis 6.2): taken by one replica.
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.get(key)
            pipe.delete(key)
            raw, _ = await pipe.execute()
        return None if raw is None else float(raw)

    async def begin(self, erasure: PendingErasure) -> None:
        await self.client.hset(self._key("pending"), erasure.scope, orjson.dumps(erasure.to_json()))

    async def pending(self) -> list[PendingErasure]:
        raw = await self.client.hgetall(self._key("pending"))
        return [PendingErasure.from_json(orjson.loads(value)) for value in raw.values()]

    async def finish(self, scope: str) -> None:
        await self.client.hdel(self._key("pending"), scope)
