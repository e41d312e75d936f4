"""Telegram's flood limits, with replies first: typing actions never take a reply's slot.

PTB's `AIORateLimiter` holds every call that names a chat to the bot-wide ~30 calls/s and
group calls to 20/min. A typing action costs a slot like a reply, so a bot that shows
typing for every turn answers at half the rate Telegram allows. Here typing actions have
a budget of their own and are skipped, not queued, when it is spent: they are cosmetic and
a late one is worse than none.

Previews of a reply being written (`preview`, marked with `rate_limit_args=PREVIEW_CALL`)
are the first thing given up: one goes out only while a good part of the bot's and the
group's budget is free, else it is skipped (`PreviewSkipped`), never queued in front of a
reply; a 429 on it goes back to its chat's preview, which pauses alone, instead of pausing
every call of the bot as `AIORateLimiter` does for a 429. Everything else is limited
exactly as by `AIORateLimiter`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from aiolimiter import AsyncLimiter
from telegram.ext import AIORateLimiter
from telegram.ext._aioratelimiter import null_context

# A share of Telegram's bot-wide limit of its own for chat actions: enough to show typing in
# a handful of chats each second, never so many that Telegram starts refusing replies.
TYPING_ACTIONS_PER_SECOND = 5

# Marks a preview call (PTB hands `rate_limit_args` to the limiter untouched).
PREVIEW_CALL = -1
# A preview takes a slot only while this share of the bot's (and the group's) budget is free.
PREVIEW_FREE_SHARE = 1 / 3


class PreviewSkipped(Exception):
    """A preview call was not made: the slot is kept for replies."""


JSONResult = bool | dict[str, Any] | list[dict[str, Any]]


class RepliesFirstRateLimiter(AIORateLimiter):
    def __init__(self, *, typing_per_second: float = TYPING_ACTIONS_PER_SECOND, **limits: Any):
        super().__init__(**limits)
        self._typing = AsyncLimiter(max_rate=typing_per_second, time_period=1)
        self.typing_skipped = 0

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, JSONResult]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> JSONResult:
        if rate_limit_args == PREVIEW_CALL:
            return await self._preview(callback, args, kwargs, data)
        if endpoint == "sendChatAction":
            if not self._typing.has_capacity():
                self.typing_skipped += 1
                return True
            async with self._typing:
                return await callback(*args, **kwargs)
        return await super().process_request(
            callback, args, kwargs, endpoint, data, rate_limit_args
        )

    async def _preview(
        self,
        callback: Callable[..., Coroutine[Any, Any, JSONResult]],
        args: Any,
        kwargs: dict[str, Any],
        data: dict[str, Any],
    ) -> JSONResult:
        if not self._retry_after_event.is_set():
            raise PreviewSkipped  # the bot waits out a 429: replies go first after it
        base = self._base_limiter
        if base is not None and not base.has_capacity(base.max_rate * PREVIEW_FREE_SHARE):
            raise PreviewSkipped
        group: Any = null_context()
        chat_id = data.get("chat_id")
        with contextlib.suppress(ValueError, TypeError):
            chat_id = int(chat_id)  # type: ignore[arg-type]
        if self._group_max_rate and (
            (isinstance(chat_id, int) and chat_id < 0) or isinstance(chat_id, str)
        ):
            group = self._get_group_limiter(chat_id)
            if not group.has_capacity(group.max_rate * PREVIEW_FREE_SHARE):
                raise PreviewSkipped
        async with group, base if base is not None else null_context():
            return await callback(*args, **kwargs)
