"""Telegram's flood limits, with replies first: typing actions never take a reply's slot.

PTB's `AIORateLimiter` holds every call that names a chat to the bot-wide ~30 calls/s and
group calls to 20/min. A typing action costs a slot like a reply, so a bot that shows
typing for every turn answers at half the rate Telegram allows. Here typing actions have
a budget of their own and are skipped, not queued, when it is spent: they are cosmetic and
a late one is worse than none. Everything else is limited exactly as by `AIORateLimiter`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from aiolimiter import AsyncLimiter
from telegram.ext import AIORateLimiter

# A share of Telegram's bot-wide limit of its own for chat actions: enough to show typing in
# a handful of chats each second, never so many that Telegram starts refusing replies.
TYPING_ACTIONS_PER_SECOND = 5

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
        if endpoint == "sendChatAction":
            if not self._typing.has_capacity():
                self.typing_skipped += 1
                return True
            async with self._typing:
                return await callback(*args, **kwargs)
        return await super().process_request(
            callback, args, kwargs, endpoint, data, rate_limit_args
        )
