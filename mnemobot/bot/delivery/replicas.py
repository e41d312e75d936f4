"""Replicas on Redis: what `run` sets up when BOT_REDIS_URL is set.

- `Replicas` bundles the Redis client, the coordination scripts and the leases this
  replica holds; `open_replicas` connects (redis-py's asyncio client).
- `LeasedSessions` is the session backend: values under `session:<key>`, written only
  under the lease of the chat the session belongs to.

Which replica polls Telegram is the Telegram channel's business
(`bot.channels.telegram.sources.LeaderPollingSource`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from mnemobot.bot.delivery.redis_coordination import Lease, LeaseLost, RedisCoordination
from mnemobot.bot.delivery.redis_ingress import LeaseBook, RedisOutage

log = logging.getLogger(__name__)

# Redis calls fail after this long instead of hanging a turn or the webhook: well under
# Telegram's patience for a webhook answer, well over a healthy round trip.
REDIS_TIMEOUT_SECONDS = 5.0


def redis_display(url: str) -> str:
    """host:port/db of a Redis URL, never its password."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix:{parts.path}"
    port = parts.port or 6379
    db = parts.path.strip("/") or "0"
    return f"{parts.hostname}:{port}/{db}"


@dataclass(slots=True)
class Replicas:
    client: Redis
    coordination: RedisCoordination
    leases: LeaseBook = field(default_factory=LeaseBook)
    outage: RedisOutage = field(default_factory=RedisOutage)
    where: str = ""
    # The URL, for a blocking client of worker threads (`blocking_client`); it may hold a
    # password, so it is never shown.
    url: str = field(default="", repr=False)
    _blocking: SyncRedis | None = field(default=None, repr=False)

    def blocking_client(self) -> SyncRedis:
        """A blocking client on the same Redis, for code running in a worker thread (the
        erasure of forgotten texts), made at first use."""
        if self._blocking is None:
            self._blocking = SyncRedis.from_url(
                self.url,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
            )
        return self._blocking

    async def close(self) -> None:
        with contextlib.suppress(RedisError):
            await self.client.aclose()
        if self._blocking is not None:
            with contextlib.suppress(RedisError):
                self._blocking.close()


def open_replicas(url: str, *, namespace: str = "mnemobot") -> Replicas:
    """The Redis client and coordination of this replica (no connection is made yet)."""
    client = Redis.from_url(
        url,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
        health_check_interval=30,
        # After a Redis restart every pooled connection is dead: a command that finds one
        # is sent again at once on a new connection (NoBackoff, once), so an outage that
        # is over is not reported again by each part (scheduler, inbox) that used the pool.
        retry_on_error=[RedisConnectionError],
    )
    return Replicas(
        client, RedisCoordination(client, namespace=namespace), where=redis_display(url), url=url
    )


def lease_name_of_session(key: str) -> str:
    """The chat a session belongs to: `telegram:42:7` (a forum topic) is chat `telegram:42`."""
    return ":".join(key.split(":")[:2])


class LeasedSessions:
    """Session values in Redis, written under the chat's lease (`SessionBackend`)."""

    def __init__(self, replicas: Replicas) -> None:
        self.coordination = replicas.coordination
        self.leases = replicas.leases
        self.outage = replicas.outage

    async def load(self, key: str) -> bytes | None:
        # A turn waits through a Redis outage rather than fail its message; the chat's
        # lease runs out meanwhile if it lasts, and the write below then says so.
        while True:
            try:
                value = await self.coordination.get(f"session:{key}")
                self.outage.ok()
                return value
            except RedisError as exc:
                await asyncio.sleep(self.outage.failed(f"reading session {key}", exc))

    async def store(self, key: str, data: bytes) -> None:
        while True:
            lease: Lease | None = self.leases.lease_for(lease_name_of_session(key))
            if lease is None:
                raise LeaseLost(f"no lease on the chat of {key}; not writing its session")
            try:
                await self.coordination.fenced_set(lease, f"session:{key}", data)
                self.outage.ok()
                return
            except RedisError as exc:
                await asyncio.sleep(self.outage.failed(f"writing session {key}", exc))
