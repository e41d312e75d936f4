"""Telegram intake: every update is kept in the durable inbox before Telegram is told.

Polling and the webhook both hand raw updates to `TelegramIntake.keep`, which returns only
once they are fsynced in the inbox (`delivery/telegram-inbox.jsonl`): only then does the
poller move its offset past them or the webhook answer 200. An update already in the inbox
(a webhook retry, a re-delivery after a restart) is dropped there, by the bot's id and the
`update_id` (`u:<bot id>:<update id>`): every bot numbers its updates from its own start, so
a workspace moved to another bot token must not take that bot's first updates for ones it
has seen. The bot's id is the token's numeric prefix, never the token.

Each kept update is then handled: parsed, and given to the channel with its inbox id. The
id rides along with the message into its chat's lane and is marked done once the answer is
safely in the outbox, or at once for what gets no turn (ignored group chatter, refusals,
commands answered on the spot). On start, what an earlier run kept but never finished is
handled again, in the order it arrived.

`RedisTelegramIntake` does the same for replicas on Redis: kept means claimed and queued
in Redis, and its chat's lease holder (maybe another replica) handles it.

An update that cannot be parsed, or whose handling raises, is logged once (id and reason),
marked done and skipped: one bad update never stops the others.

Scheduled tasks come in the same way (`keep_firings`): a firing is an inbox entry with a
stable id (`s:<task>:<due>`), so one handed over twice is dropped like a repeated update,
and it waits, is replayed after a crash and is marked done as a message is.

When the inbox cannot be written (a full or read-only disk), updates are kept in memory
and handled all the same, so `/status` still answers and messages wait for the storage to
come back (see `bot.channels.dispatch`); one line says so, and one when it works again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from telegram import Bot, Update

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry
from mnemobot.bot.delivery.journal_threads import INBOX_THREADS, in_thread
from mnemobot.bot.delivery.redis_ingress import RedisInbox
from mnemobot.bot.schedule.tasks import is_firing_entry

log = logging.getLogger(__name__)

HandleUpdate = Callable[[Update, str], Awaitable[None]]
HandleFiring = Callable[[QueuedEntry], Awaitable[None]]


def inbox_key(raw: dict[str, Any]) -> str:
    """The chat an update belongs to, for the inbox's per-chat view; '?' when unknown."""
    for field in ("message", "edited_message", "channel_post", "business_message"):
        message = raw.get(field)
        if isinstance(message, dict) and isinstance(message.get("chat"), dict):
            return f"telegram:{message['chat'].get('id')}"
    query = raw.get("callback_query")
    if isinstance(query, dict):
        return inbox_key({"message": query.get("message")})
    return "telegram:?"


def bot_id_of(token: str) -> str:
    """The bot's id: the numeric prefix of its token (`123456:ABC...`), the user id getMe
    returns; a token not made that way (Telegram will refuse it) gets a digest."""
    prefix, colon, _ = token.partition(":")
    if colon and prefix.isdigit():
        return prefix
    return "x" + hashlib.blake2s(token.encode(), digest_size=8).hexdigest()


def update_entry_id(bot_id: str, update_id: object) -> str:
    """The inbox id of one bot's update."""
    return f"u:{bot_id}:{update_id}"


def update_id_of(entry_id: str) -> str:
    """The update id in an inbox id (for log lines)."""
    return entry_id.rsplit(":", 1)[-1]


def accepted_updates(
    raw_updates: Sequence[dict[str, Any]], now: float, bot_id: str
) -> list[QueuedEntry]:
    """One bot's updates as inbox entries, accepted `now`."""
    return [
        QueuedEntry(
            id=update_entry_id(bot_id, raw["update_id"]),
            key=inbox_key(raw),
            data=dict(raw),
            at=now,
        )
        for raw in raw_updates
    ]


def _adopted(bot_id: str) -> Callable[[str], str]:
    """Inbox ids of updates written before ids named their bot (`u:<update id>`) as ids of
    `bot_id`'s: the bot that upgrades is the bot that received them (a redelivery of the
    last batch after the upgrade is then recognised)."""

    def rename(entry_id: str) -> str:
        kind, _, rest = entry_id.partition(":")
        return update_entry_id(bot_id, rest) if kind == "u" and rest.isdigit() else entry_id

    return rename


class TelegramIntake:
    def __init__(
        self, path: Path, bot: Bot, handle: HandleUpdate, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.inbox = DurableQueue(path)
        self.bot_id = bot_id_of(bot.token)
        if adopted := self.inbox.rename_ids(_adopted(self.bot_id)):
            log.info("the inbox's %d update id(s) now name the bot they came to", adopted)
        self.clock = clock
        self.bot = bot
        self.handle = handle
        self.skipped = 0
        self._failing = False
        self.handle_firing: HandleFiring | None = None

    async def keep_firings(self, entries: Sequence[QueuedEntry]) -> None:
        """Keep scheduled firings durably, then handle the ones not seen before. Raises
        OSError when they cannot be kept: the scheduler tries again."""
        fresh = await in_thread(INBOX_THREADS, self.inbox.add, entries)
        for entry in fresh:
            await self._handle(entry)

    async def keep(self, raw_updates: Sequence[dict[str, Any]]) -> None:
        """Keep `raw_updates` durably, then handle the ones not seen before."""
        entries = accepted_updates(raw_updates, self.clock(), self.bot_id)
        fresh = await in_thread(INBOX_THREADS, self.inbox.add, entries, in_memory_on_failure=True)
        failing = any(self.inbox.in_memory(entry.id) for entry in fresh)
        if failing and not self._failing:
            log.error(
                "cannot write the inbox %s (the disk is full or read-only): answering "
                "updates without keeping them; check the workspace's disk",
                self.inbox.path,
            )
        elif self._failing and fresh and not failing:
            log.info("the inbox can be written again")
        self._failing = failing if fresh else self._failing
        if len(fresh) < len(entries):
            log.info("ignoring %d update(s) already received", len(entries) - len(fresh))
        for entry in fresh:
            await self._handle(entry)

    async def replay(self) -> int:
        """Handle what an earlier run kept but did not finish; returns how many."""
        pending = self.inbox.pending()
        if pending:
            log.info("answering %d message(s) received before the last stop", len(pending))
        for entry in pending:
            await self._handle(entry)
        return len(pending)

    async def done(self, receipts: Sequence[str], *, answer: str = "") -> bool:
        """Mark `receipts` answered (by `answer`, a name the replicas' inbox keeps); True
        once the mark is written."""
        if receipts:
            # A mark that cannot be written yet goes with the next write that can; a restart
            # before that answers the message again, from the session: the same reply,
            # which the outbox recognises and does not send twice.
            await in_thread(
                INBOX_THREADS, self.inbox.done, list(receipts), in_memory_on_failure=True
            )
        return True

    def waiting(self) -> int:
        return len(self.inbox)

    async def close(self) -> None:
        """Nothing to let go: the journal is written as it goes."""

    async def _handle(self, entry: QueuedEntry) -> None:
        if is_firing_entry(entry.id):
            await self._handle_firing(entry)
            return
        try:
            update = Update.de_json(entry.data, self.bot)
            if update is None:
                raise ValueError("empty update")
        except Exception as exc:
            self.skipped += 1
            log.warning(
                "skipping update %s: it cannot be read (%s)", update_id_of(entry.id), _reason(exc)
            )
            await self.done([entry.id])
            return
        try:
            await self.handle(update, entry.id)
        except Exception as exc:
            self.skipped += 1
            log.error(
                "skipping update %s: handling it failed (%s)",
                update_id_of(entry.id),
                _reason(exc),
            )
            await self.done([entry.id])

    async def _handle_firing(self, entry: QueuedEntry) -> None:
        try:
            if self.handle_firing is None:
                raise RuntimeError("no handler for scheduled tasks")
            await self.handle_firing(entry)
        except Exception as exc:
            self.skipped += 1
            log.error("skipping scheduled firing %s (%s)", entry.id, _reason(exc))
            await self.done([entry.id])


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


class RedisTelegramIntake(TelegramIntake):
    """The intake of a replica on Redis: updates kept in Redis (claimed once across
    replicas), handled by whichever replica holds their chat's lease."""

    def __init__(
        self, inbox: RedisInbox, bot: Bot, handle: HandleUpdate, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        # No journal of its own: Redis is the inbox (see `bot.delivery.redis_ingress`).
        self.redis_inbox = inbox
        self.bot_id = bot_id_of(bot.token)
        self.clock = clock
        self.bot = bot
        self.handle = handle
        self.skipped = 0
        self.handle_firing = None
        inbox.handle = self._handle

    async def keep_firings(self, entries: Sequence[QueuedEntry]) -> None:
        """Claim and queue firings in Redis (a firing another replica claimed is dropped);
        raises InboxUnavailable when Redis does not take them."""
        await self.redis_inbox.accept(entries)

    async def keep(self, raw_updates: Sequence[dict[str, Any]]) -> None:
        entries = accepted_updates(raw_updates, self.clock(), self.bot_id)
        fresh = await self.redis_inbox.accept(entries)
        if fresh < len(entries):
            log.info("ignoring %d update(s) already received", len(entries) - fresh)

    async def replay(self) -> int:
        # The sweeper finds what waits in Redis, from this replica's last run or another's.
        self.redis_inbox.start()
        return 0

    async def done(self, receipts: Sequence[str], *, answer: str = "") -> bool:
        return await self.redis_inbox.done(receipts, answer=answer) if receipts else True

    def waiting(self) -> int:
        return self.redis_inbox.in_flight()

    async def close(self) -> None:
        await self.redis_inbox.close()
