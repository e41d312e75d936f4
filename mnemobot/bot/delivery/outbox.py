"""Outbox: replies kept on disk until the channel takes them, re-sent in order per chat.

A reply enters the outbox (fsynced) before the first attempt to send it. Each chat has one
sender that delivers its entries strictly in the order they were added; an entry the
channel cannot take right now (network down, server errors, rate limits) is retried with
growing pauses, for as long as it takes and across restarts; the chat's later replies wait
behind it, so order is kept. An entry the channel will never take (the bot was blocked,
the chat is gone) is logged once and dropped.

The mark that an entry was delivered is written right after the channel confirms it. A
crash in the instant between the two re-sends that one entry after the restart: at most
one duplicate per crash, never a loss.

With replicas, whose inbox another replica takes over when this one dies, a reply that
answers inbox messages (`answering`) waits until its `gate` says those messages are
marked answered by this very answer (`Release`): the mark is written first, so a replica
that takes the chat over never answers again what this one delivered. A reply whose
messages were answered by another replica meanwhile (this one died before its mark) is
dropped, not sent: the other's answer went out instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry
from mnemobot.bot.delivery.journal_threads import OUTBOX_THREADS, in_thread

log = logging.getLogger(__name__)

FIRST_RETRY_SECONDS = 0.5
LAST_RETRY_SECONDS = 60.0
# A held reply whose mark was not reported here (it failed, or the reply is from an
# earlier run) asks its gate again this often: one Redis read a second per held chat costs
# nothing, and the reply goes out (or is dropped) within a second of its message's answer.
RECHECK_SECONDS = 1.0
# Where an entry keeps what it answers (`Answering`); never handed to `deliver`.
ANSWERING_KEY = "answering"
# Names of answers marked lately, remembered so their replies go out without asking the
# gate: far more than the replies waiting at once.
REMEMBERED_ANSWERS = 10_000


class Delivery(enum.Enum):
    SENT = "sent"
    # Worth trying again later: the network, a 5xx, a rate limit.
    RETRY = "retry"
    # Will never be taken (blocked, chat not found, a permanently bad request).
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    outcome: Delivery
    reason: str = ""
    # A wait the channel asked for (e.g. Telegram's retry_after), else our own backoff.
    retry_after: float | None = None


Deliver = Callable[[dict[str, Any]], Awaitable[DeliveryResult]]


@dataclass(frozen=True, slots=True)
class Answering:
    """What a reply answers: the inbox entries (`receipts`) and the name of this answer,
    which the mark of those entries carries once they are answered by it."""

    receipts: tuple[str, ...]
    name: str


class Release(enum.Enum):
    SEND = "send"
    # Its messages are not marked answered yet: the mark is on its way, or they wait for
    # a new holder of their chat to answer them.
    HOLD = "hold"
    # Its messages were answered by another answer (another replica's): not sent.
    DROP = "drop"


class AnswerGate(Protocol):
    async def release(self, answering: Answering) -> Release:
        """Whether a reply that answers `answering.receipts` may go out now."""
        ...


class Outbox:
    """Durable, ordered, retrying delivery of one channel's replies."""

    def __init__(
        self,
        path: Path,
        deliver: Deliver,
        *,
        first_retry_seconds: float = FIRST_RETRY_SECONDS,
        last_retry_seconds: float = LAST_RETRY_SECONDS,
        clock: Clock = SYSTEM_CLOCK,
        gate: AnswerGate | None = None,
    ) -> None:
        self.queue = DurableQueue(path)
        self.clock = clock
        self.deliver = deliver
        self.first_retry_seconds = first_retry_seconds
        self.last_retry_seconds = last_retry_seconds
        self.gate = gate
        self._senders: dict[str, asyncio.Task[None]] = {}
        self._closing = False
        self._failing = False
        self.refused = 0
        # Answers put by this run whose mark is still to be reported (`answered`).
        self._expected: set[str] = set()
        # Answers whose mark was reported: their replies go out without asking the gate.
        self._marked: OrderedDict[str, None] = OrderedDict()
        # Set when a mark is reported for the chat (or a reply put): its held reply looks again.
        self._news: dict[str, asyncio.Event] = {}

    async def start(self) -> int:
        """Resume delivery of what an earlier run left; returns how many entries wait."""
        keys = self.queue.pending_keys()
        for key in keys:
            self._wake(key)
        waiting = len(self.queue)
        if waiting:
            log.info("outbox: %d replies from an earlier run still to deliver", waiting)
        return waiting

    async def put(
        self,
        key: str,
        messages: list[dict[str, Any]],
        *,
        ids: list[str] | None = None,
        answering: Answering | None = None,
    ) -> None:
        """Keep `messages` for chat `key` durably, then deliver them in order.

        With `ids`, a message whose id the outbox has seen before is not kept again: the
        same answer put twice (a turn answered again after a crash) goes out once. With
        `answering` and a gate, they go out once the gate releases them (see the module).
        """
        ids = ids or [uuid.uuid4().hex for _ in messages]
        if answering is not None and self.gate is not None:
            held = {"receipts": list(answering.receipts), "name": answering.name}
            messages = [{**message, ANSWERING_KEY: held} for message in messages]
            if answering.name not in self._marked:
                self._expected.add(answering.name)
        now = self.clock()
        entries = [
            QueuedEntry(id=i, key=key, data=m, at=now) for i, m in zip(ids, messages, strict=True)
        ]
        # A reply that cannot be kept on disk (a full or read-only disk) is still sent.
        fresh = await in_thread(OUTBOX_THREADS, self.queue.add, entries, in_memory_on_failure=True)
        failing = any(self.queue.in_memory(entry.id) for entry in fresh)
        if failing and not self._failing:
            log.error(
                "cannot write the outbox %s (the disk is full or read-only): sending replies "
                "without keeping them",
                self.queue.path,
            )
        elif self._failing and fresh and not failing:
            log.info("the outbox can be written again")
        self._failing = failing if fresh else self._failing
        self._wake(key)

    def answered(self, key: str, name: str) -> None:
        """The messages answer `name` answers (in chat `key`) are marked answered by it:
        its replies may go out."""
        self._remember_marked(name)
        self._news_of(key).set()

    def _remember_marked(self, name: str) -> None:
        self._expected.discard(name)
        self._marked[name] = None
        while len(self._marked) > REMEMBERED_ANSWERS:
            self._marked.popitem(last=False)

    def waiting(self, key: str | None = None) -> int:
        return len(self.queue.pending(key))

    async def drained(self, key: str) -> None:
        """Wait until every entry of `key` put so far is delivered or refused."""
        while self.queue.pending(key):
            sender = self._senders.get(key)
            if sender is None or sender.done():
                self._wake(key)
                sender = self._senders[key]
            await asyncio.wait({sender}, timeout=0.5)

    async def close(self, grace_seconds: float) -> None:
        """Give senders `grace_seconds` to finish; what is left stays for the next start."""
        senders = [t for t in self._senders.values() if not t.done()]
        if senders:
            await asyncio.wait(senders, timeout=grace_seconds)
        self._closing = True
        for task in self._senders.values():
            task.cancel()
        for task in self._senders.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        left = len(self.queue)
        if left:
            log.warning("outbox: %d replies not yet delivered; they go out on the next start", left)

    def _wake(self, key: str) -> None:
        if self._closing:
            return
        sender = self._senders.get(key)
        if sender is None or sender.done():
            self._senders[key] = asyncio.create_task(self._send_all(key), name=f"outbox:{key}")

    async def _send_all(self, key: str) -> None:
        # Runs until the chat's entries are gone; `_wake` starts it again for new ones (no
        # await between the last look at the queue and returning, so none is missed).
        failures = 0
        held: str | None = None
        while True:
            pending = self.queue.pending(key)
            if not pending:
                return
            entry = pending[0]
            if held != entry.id:
                # News of earlier replies is not news of this one.
                self._news_of(key).clear()
            # A reply of this run asks the gate only once its mark is overdue.
            release = await self._release(entry, ask=held == entry.id)
            if release is Release.HOLD:
                held = entry.id
                await self._hear_news(key)
                continue
            if release is Release.DROP:
                log.info("outbox: a reply to %s was answered by another replica; not sent", key)
                await in_thread(
                    OUTBOX_THREADS, self.queue.done, [entry.id], in_memory_on_failure=True
                )
                continue
            try:
                result = await self.deliver(_without_answering(entry.data))
            except Exception as exc:  # a bug in delivery must not lose the entry
                log.exception("outbox: delivering to %s failed unexpectedly", key)
                result = DeliveryResult(Delivery.RETRY, f"{type(exc).__name__}: {exc}")
            if result.outcome is Delivery.RETRY:
                failures += 1
                pause = result.retry_after or min(
                    self.last_retry_seconds, self.first_retry_seconds * 2 ** (failures - 1)
                )
                log.warning(
                    "outbox: reply to %s not delivered (%s); retrying in %.1f s",
                    key,
                    result.reason,
                    pause,
                )
                await asyncio.sleep(pause)
                continue
            if result.outcome is Delivery.REFUSED:
                self.refused += 1
                log.warning("outbox: %s will not take a reply (%s); dropped", key, result.reason)
            failures = 0
            # A mark that cannot be written yet (a full disk) is written with the next write
            # that can be; a restart before that sends this reply once more.
            await in_thread(OUTBOX_THREADS, self.queue.done, [entry.id], in_memory_on_failure=True)

    async def _release(self, entry: QueuedEntry, *, ask: bool) -> Release:
        """Whether `entry` may go out now (see `Release`); `ask`: ask the gate even for a
        reply whose mark this run still expects to hear of."""
        answering = _answering_of(entry.data)
        if answering is None or self.gate is None or answering.name in self._marked:
            return Release.SEND
        if answering.name in self._expected and not ask:
            return Release.HOLD
        release = await self.gate.release(answering)
        if release is Release.SEND:
            self._remember_marked(answering.name)
        elif release is Release.DROP:
            self._expected.discard(answering.name)
        return release

    def _news_of(self, key: str) -> asyncio.Event:
        news = self._news.get(key)
        if news is None:
            news = self._news[key] = asyncio.Event()
        return news

    async def _hear_news(self, key: str) -> None:
        news = self._news_of(key)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(news.wait(), RECHECK_SECONDS)
        news.clear()


def _answering_of(data: dict[str, Any]) -> Answering | None:
    held = data.get(ANSWERING_KEY)
    if not isinstance(held, dict):
        return None
    receipts, name = held.get("receipts"), held.get("name")
    if not isinstance(name, str) or not isinstance(receipts, list):
        return None
    return Answering(tuple(str(r) for r in receipts), name)


def _without_answering(data: dict[str, Any]) -> dict[str, Any]:
    if ANSWERING_KEY not in data:
        return data
    return {k: v for k, v in data.items() if k != ANSWERING_KEY}
