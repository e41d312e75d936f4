"""The pending inbox of several replicas on one Redis, drained by each chat's lease holder.

Any replica accepts an update (`accept`: claim + queue in one step, see
`bot.delivery.redis_coordination`) and tells the channel only once Redis has it. The
replica then tries to take the chat's lease; whoever holds it drains the chat: hands its
pending entries to `handle` in arrival order, removes each under the lease once it is
answered (`done`), renews the lease while there is work, and lets it go when the chat's
list is empty. A sweeper on every replica looks, every `sweep_seconds`, for chats with
pending entries: one whose lease it holds is drained again (entries another replica
queued), one with no live lease is taken over (its holder died, or let go a moment too
early).

Redis unreachable: `accept` raises `InboxUnavailable` (an OSError, so the poller retries
and the webhook answers 500: Telegram keeps the update); drains and the sweeper log one
line, retry with growing pauses, and log again once Redis answers.

A holder that loses its lease (paused longer than the TTL, cut off from Redis) stops
handing entries out; what it was still answering is answered again by the new holder:
`done` under a lost lease is refused, so nothing is dropped. Its reply does not go out
either: `done` writes the name of the answer into the entry's claim, and a replica's
outbox sends a reply only once its messages are marked answered by it (`release`, the
outbox's gate); one answered by another replica meanwhile is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from redis.exceptions import RedisError

from mnemobot.bot.delivery.journal import QueuedEntry
from mnemobot.bot.delivery.outbox import Answering, Release
from mnemobot.bot.delivery.redis_coordination import Lease, LeaseLost, RedisCoordination

log = logging.getLogger(__name__)

HandleEntry = Callable[[QueuedEntry], Awaitable[None]]

FIRST_RETRY_SECONDS = 0.5
LAST_RETRY_SECONDS = 10.0
# Ids of entries finished by this replica that are remembered: far more than a chat's list
# holds at once, few enough to cost nothing.
REMEMBERED_FINISHED = 10_000
# Marking an answered entry done is tried this often before it is left for the next holder.
DONE_ATTEMPTS = 5


class InboxUnavailable(OSError):
    """Redis did not take the update; the sender must keep it and try again."""


@dataclass(slots=True)
class LeaseBook:
    """The chat leases this replica holds now, by chat key (shared with the session store)."""

    held: dict[str, Lease] = field(default_factory=dict)

    def lease_for(self, key: str) -> Lease | None:
        return self.held.get(key)


class RedisOutage:
    """One log line when Redis stops answering and one when it answers again (one per
    replica: every part that talks to Redis shares it)."""

    def __init__(self) -> None:
        self.down_since: float | None = None

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, what: str, exc: BaseException) -> float:
        """Note a failure; returns how long the caller should wait before trying again."""
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = now
            log.warning("Redis unreachable while %s (%s); retrying with backoff", what, exc)
        # Pauses grow with the outage, not with the number of callers that hit it.
        return min(LAST_RETRY_SECONDS, max(FIRST_RETRY_SECONDS, (now - self.down_since) / 2))

    def ok(self) -> None:
        if self.down_since is not None:
            log.warning("Redis reachable again")
        self.down_since = None


@dataclass(slots=True)
class _Drain:
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class RedisInbox:
    """Accepts entries for any replica to answer; drains the chats whose lease it takes."""

    def __init__(
        self,
        coordination: RedisCoordination,
        leases: LeaseBook,
        *,
        lease_seconds: float,
        sweep_seconds: float,
        outage: RedisOutage | None = None,
    ) -> None:
        self.coordination = coordination
        self.leases = leases
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.sweep_seconds = sweep_seconds
        self.handle: HandleEntry | None = None
        self.outage = outage or RedisOutage()
        self._drains: dict[str, _Drain] = {}
        # Entries handed to `handle` and not yet done, by id.
        self._in_flight: dict[str, QueuedEntry] = {}
        # Entries this replica finished lately, with the name of their answer: a list read
        # just before one was removed still shows it, and it must not be handed out again.
        self._finished: OrderedDict[str, str] = OrderedDict()
        self._sweeper: asyncio.Task[None] | None = None
        self._closing = False

    # -- intake ----------------------------------------------------------------------------------

    async def accept(self, entries: Iterable[QueuedEntry]) -> int:
        """Claim and queue `entries`; returns how many were new. Raises InboxUnavailable."""
        fresh = 0
        touched: list[str] = []
        for entry in entries:
            try:
                claimed = await self.coordination.accept(entry)
            except RedisError as exc:
                self.outage.failed("keeping an update", exc)
                raise InboxUnavailable(f"Redis did not take update {entry.id}: {exc}") from exc
            self.outage.ok()
            if claimed:
                fresh += 1
                touched.append(entry.key)
        for key in dict.fromkeys(touched):
            self.wake(key)
        return fresh

    def start(self) -> None:
        """Start the sweeper (it also picks up what waited while no replica ran)."""
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep(), name="redis-inbox-sweeper")

    def in_flight(self) -> int:
        return len(self._in_flight)

    async def done(self, entry_ids: Sequence[str], *, answer: str = "") -> bool:
        """Remove answered entries from their chats' lists, under this replica's lease,
        marking them answered by `answer` (a name); True when every mark is written."""
        marked = True
        for entry_id in entry_ids:
            entry = self._in_flight.get(entry_id)
            if entry is None:
                marked = False
                continue
            self._finished[entry_id] = answer
            while len(self._finished) > REMEMBERED_FINISHED:
                self._finished.popitem(last=False)
            del self._in_flight[entry_id]
            marked = await self._mark_done(entry, answer) and marked
            self.wake(entry.key)
        return marked

    async def release(self, answering: Answering) -> Release:
        """The outbox's gate: a reply goes out once its messages are marked answered by it;
        one whose messages another answer took is dropped (see `bot.delivery.outbox`)."""
        try:
            claims = await self.coordination.claims(list(answering.receipts))
            self.outage.ok()
        except RedisError as exc:
            self.outage.failed("checking whether a reply may go out", exc)
            return Release.HOLD
        # A claim that is gone (expired) says nothing: its reply is not held for it.
        answers = [claim.answer for claim in claims if claim is not None]
        if any(answer is not None and answer != answering.name for answer in answers):
            return Release.DROP
        if any(answer is None for answer in answers):
            return Release.HOLD
        return Release.SEND

    async def _mark_done(self, entry: QueuedEntry, answer: str) -> bool:
        for attempt in range(1, DONE_ATTEMPTS + 1):
            lease = self.leases.lease_for(entry.key)
            if lease is None:
                log.info(
                    "%s answered after its chat's lease ended; the holder answers again", entry.id
                )
                return False
            try:
                marked = await self.coordination.done(lease, entry, answer)
                self.outage.ok()
                return marked
            except LeaseLost:
                log.warning("lease on %s lost before %s was marked done", entry.key, entry.id)
                return False
            except RedisError as exc:
                if attempt == DONE_ATTEMPTS or self._closing:
                    log.warning("could not mark %s done (%s); it is answered again", entry.id, exc)
                    return False
                await asyncio.sleep(self.outage.failed("marking a message done", exc))
        return False

    # -- draining --------------------------------------------------------------------------------

    def wake(self, key: str) -> None:
        """Drain `key` now if this replica holds its lease, or try to take the lease."""
        if self._closing:
            return
        drain = self._drains.get(key)
        if drain is not None and drain.task is not None and not drain.task.done():
            drain.wake.set()
            return
        drain = self._drains[key] = _Drain()
        drain.task = asyncio.create_task(self._drain(key, drain), name=f"drain:{key}")

    async def _drain(self, key: str, drain: _Drain) -> None:
        lease: Lease | None = None
        try:
            try:
                lease = await self.coordination.acquire(key, self.lease_ms)
            except RedisError as exc:
                self.outage.failed(f"taking the lease on {key}", exc)
                return  # the sweeper tries again
            if lease is None:
                return  # another replica drains it; the sweeper looks again if it dies
            self.leases.held[key] = lease
            while not self._closing:
                try:
                    if not await self._drain_once(key, lease, drain):
                        break
                except RedisError as exc:
                    # Keep the lease (and the turns running under it) through a short
                    # outage; a renewal refused afterwards means it ran out meanwhile.
                    await asyncio.sleep(self.outage.failed(f"draining {key}", exc))
                    continue
                if not await self._renew(lease):
                    log.warning("lease on %s lost; another replica answers it now", key)
                    self.leases.held.pop(key, None)
                    lease = None
                    return
        finally:
            if lease is not None and self.leases.held.get(key) is lease:
                del self.leases.held[key]
                with contextlib.suppress(RedisError):
                    await self.coordination.release(lease)
            if self._drains.get(key) is drain:
                del self._drains[key]
        # Something may have arrived between the last look and the release.
        if not self._closing and lease is not None:
            with contextlib.suppress(RedisError):
                if await self.coordination.pending(key):
                    self.wake(key)

    async def _drain_once(self, key: str, lease: Lease, drain: _Drain) -> bool:
        """Hand out what is new in the chat's list; False once nothing is left to answer."""
        drain.wake.clear()
        entries = await self.coordination.pending(key)
        self.outage.ok()
        mine = [e for e in self._in_flight.values() if e.key == key]
        if not entries and not mine:
            return False
        for entry in entries:
            answer = self._finished.get(entry.id)
            if answer is not None:
                # Answered here, but its removal failed (an outage) or is under way: remove
                # it now, or the chat would look busy forever (its held reply then goes out).
                with contextlib.suppress(LeaseLost):
                    await self.coordination.done(lease, entry, answer)
                continue
            if entry.id not in self._in_flight and self.handle is not None:
                self._in_flight[entry.id] = entry
                await self.handle(entry)
        # Renew well before the lease runs out, or sooner when there is news.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drain.wake.wait(), lease.ttl_ms / 3000)
        return True

    async def _renew(self, lease: Lease) -> bool:
        while True:
            try:
                renewed = await self.coordination.renew(lease)
                self.outage.ok()
                return renewed
            except RedisError as exc:
                if self._closing:
                    return False
                await asyncio.sleep(self.outage.failed(f"renewing the lease on {lease.name}", exc))

    async def _sweep(self) -> None:
        pause = self.sweep_seconds
        while not self._closing:
            await asyncio.sleep(pause)
            try:
                keys = await self.coordination.keys_with_pending()
                self.outage.ok()
                pause = self.sweep_seconds
            except RedisError as exc:
                pause = max(
                    self.sweep_seconds, self.outage.failed("looking for waiting messages", exc)
                )
                continue
            for key in keys:
                self.wake(key)

    async def close(self) -> None:
        """Stop draining and let every lease go, so another replica answers what is left."""
        self._closing = True
        tasks = [t for t in (self._sweeper, *(d.task for d in self._drains.values())) if t]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, RedisError):
                await task
        for key, lease in list(self.leases.held.items()):
            del self.leases.held[key]
            with contextlib.suppress(RedisError):
                await self.coordination.release(lease)
