"""Replicas on Redis: what `run` sets up when BOT_REDIS_URL is set.

- `Replicas` bundles the Redis client, the coordination scripts and the leases this
  replica holds; `open_replicas` connects (redis-py's asyncio client).
- `LeasedSessions` is the session backend: values under `session:<key>`, written only
  under the lease of the chat the session belongs to.
- `LeaderPollingSource`: exactly one replica polls Telegram, the holder of the `poller`
  lease; the others retry every third of its TTL and take over once it runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from redis.asyncio import Redis
from redis.exceptions import RedisError
from telegram.error import TelegramError
from telegram.ext import Application

from mnemobot.bot.app import App, build_app
from mnemobot.bot.delivery.redis_coordination import Lease, LeaseLost, RedisCoordination
from mnemobot.bot.delivery.redis_ingress import LeaseBook, RedisOutage
from mnemobot.bot.schedule.redis_store import RedisTaskStore
from mnemobot.bot.telegram.channel import UpdateSource
from mnemobot.bot.telegram.poller import KeepUpdates
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.redis_sessions import RedisSessionStore

log = logging.getLogger(__name__)

# Redis calls fail after this long instead of hanging a turn or the webhook: well under
# Telegram's patience for a webhook answer, well over a healthy round trip.
REDIS_TIMEOUT_SECONDS = 5.0
POLLER_LEASE = "poller"


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

    async def close(self) -> None:
        with contextlib.suppress(RedisError):
            await self.client.aclose()


def open_replicas(url: str, *, namespace: str = "mnemobot") -> Replicas:
    """The Redis client and coordination of this replica (no connection is made yet)."""
    client = Redis.from_url(
        url,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
        health_check_interval=30,
    )
    return Replicas(
        client, RedisCoordination(client, namespace=namespace), where=redis_display(url)
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


def build_replica_app(settings: Settings, replicas: Replicas) -> App:
    """The app of one replica: sessions and scheduled tasks in Redis, everything else on
    the shared workspace."""
    paths = WorkspacePaths(settings.bot_workspace)
    sessions = RedisSessionStore(paths.sessions, LeasedSessions(replicas))
    tasks = RedisTaskStore(replicas.client, namespace=replicas.coordination.namespace)
    return build_app(settings, sessions=sessions, shared_workspace=True, tasks=tasks)


class LeaderPollingSource:
    """Polls Telegram only while holding the `poller` lease; stands by otherwise."""

    def __init__(
        self, make_polling: Callable[[], UpdateSource], replicas: Replicas, lease_seconds: float
    ) -> None:
        self.make_polling = make_polling
        self.polling: UpdateSource | None = None
        self.coordination = replicas.coordination
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.outage = replicas.outage
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self, application: Application, keep: KeepUpdates) -> None:
        self._task = asyncio.create_task(self._lead(application, keep), name="poller-lease")

    async def _lead(self, application: Application, keep: KeepUpdates) -> None:
        period = self.lease_ms / 3000
        lease: Lease | None = None
        announced = False
        try:
            while not self._stop.is_set():
                try:
                    if lease is None:
                        lease = await self.coordination.acquire(POLLER_LEASE, self.lease_ms)
                        if lease is not None:
                            log.info("this replica polls Telegram now (poller lease taken)")
                            self.polling = self.make_polling()
                            try:
                                await self.polling.start(application, keep)
                            except (TelegramError, OSError) as exc:
                                # Let another replica (or this one, next round) try.
                                log.warning("could not start polling (%s); retrying", exc)
                                self.polling = None
                                await self.coordination.release(lease)
                                lease = None
                        elif not announced:
                            announced = True
                            log.info("another replica polls Telegram; standing by")
                    elif not await self.coordination.renew(lease):
                        log.warning("poller lease lost; standing by")
                        await self._step_down()
                        lease = None
                    self.outage.ok()
                except RedisError as exc:
                    period_pause = self.outage.failed("holding the poller lease", exc)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), period_pause)
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), period)
        finally:
            await self._step_down()
            if lease is not None:
                with contextlib.suppress(RedisError):
                    await self.coordination.release(lease)

    @property
    def leading(self) -> bool:
        return self.polling is not None

    async def _step_down(self) -> None:
        polling, self.polling = self.polling, None
        if polling is not None:
            await polling.stop()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
