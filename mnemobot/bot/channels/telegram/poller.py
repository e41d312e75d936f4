"""Long polling that never acknowledges an update before it is kept, and survives bad ones.

Telegram forgets an update once a `getUpdates` call asks for a higher offset. PTB's Updater
moves the offset as soon as a batch is parsed, and one update it cannot parse makes every
later call fail. This poller asks for raw JSON instead and, per batch:

1. hands the raw updates to `keep` (the durable inbox), and only then
2. moves the offset past them, so a crash before `keep` returns costs nothing: Telegram
   sends the batch again, and the inbox drops what it already has.

What is inside an update (parsing it, answering it) is `keep`'s business: a malformed one
is its problem to log and skip, never the poller's to retry. Network failures and Bot API
errors are retried with growing pauses (1 s up to 30 s), one log line each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.warnings import PTBUserWarning

log = logging.getLogger(__name__)

KeepUpdates = Callable[[list[dict[str, Any]]], Awaitable[None]]

FIRST_RETRY_SECONDS = 1.0
LAST_RETRY_SECONDS = 30.0


class UpdatePoller:
    """Runs `getUpdates` in a loop until stopped; see the module docstring for the rules."""

    def __init__(
        self,
        bot: Bot,
        keep: KeepUpdates,
        *,
        timeout_seconds: float = 30.0,
        allowed_updates: Sequence[str] | None = None,
        limit: int = 100,
    ) -> None:
        self.bot = bot
        self.keep = keep
        self.timeout_seconds = timeout_seconds
        self.allowed_updates = list(allowed_updates) if allowed_updates else None
        self.limit = limit
        self.offset: int | None = None
        self.failures = 0

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            polled = asyncio.ensure_future(self.poll_once())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({polled, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not polled.done():
                # Stopping mid long-poll: whatever that call would return stays with
                # Telegram (its offset never moved) and comes back on the next start.
                polled.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await polled
                stopped.cancel()
                return
            stopped.cancel()
            try:
                polled.result()
                self.failures = 0
            except InvalidToken:
                raise
            except (TelegramError, OSError) as exc:
                self.failures += 1
                pause = min(LAST_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** (self.failures - 1))
                log.warning("polling Telegram failed (%s); retrying in %.0f s", exc, pause)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), pause)

    async def poll_once(self) -> int:
        """One `getUpdates` call and its batch kept; returns how many updates came."""
        api_kwargs: dict[str, Any] = {"timeout": int(self.timeout_seconds), "limit": self.limit}
        if self.offset is not None:
            api_kwargs["offset"] = self.offset
        if self.allowed_updates is not None:
            api_kwargs["allowed_updates"] = self.allowed_updates
        with warnings.catch_warnings():
            # PTB suggests get_updates(), which parses the whole batch and fails on one bad
            # update; raw JSON is the point here.
            warnings.simplefilter("ignore", PTBUserWarning)
            result = await self.bot.do_api_request(
                "getUpdates", api_kwargs=api_kwargs, read_timeout=self.timeout_seconds + 10
            )
        raw = [update for update in result if isinstance(update, dict)] if result else []
        ids = [u["update_id"] for u in raw if isinstance(u.get("update_id"), int)]
        if len(ids) < len(raw) or (result and len(raw) < len(result)):
            log.warning(
                "getUpdates returned %d entries without an update_id; skipped",
                len(result) - len(ids),
            )
        if raw:
            await self.keep([u for u in raw if isinstance(u.get("update_id"), int)])
        if ids:
            self.offset = max(ids) + 1
        return len(ids)
