"""Typing actions have a budget of their own: they never hold up a reply."""

from __future__ import annotations

import asyncio
import time

from telegram.ext import ApplicationBuilder

from mnemobot.bot.channels.telegram.rate_limits import RepliesFirstRateLimiter
from mnemobot_tooling.fakes.telegram_server import TelegramServer


async def test_typing_beyond_its_budget_is_skipped_and_replies_still_go_out() -> None:
    limiter = RepliesFirstRateLimiter(typing_per_second=2, overall_max_rate=5)
    with TelegramServer() as telegram:
        application = (
            ApplicationBuilder()
            .token(telegram.token)
            .base_url(telegram.base_url)
            .rate_limiter(limiter)
            .updater(None)
            .build()
        )
        async with application:
            bot = application.bot
            start = time.monotonic()
            await asyncio.gather(*(bot.send_chat_action(42, "typing") for _ in range(20)))
            typing_seconds = time.monotonic() - start
            await asyncio.gather(*(bot.send_message(42, f"reply {n}") for n in range(5)))
    # Two typing actions made it; the rest were dropped at once instead of queueing.
    assert len(telegram.chat_actions(42)) == 2 and limiter.typing_skipped == 18
    assert typing_seconds < 1.0
    # The five replies fit the overall budget untouched by the typing actions.
    assert sorted(m["text"] for m in telegram.sent_messages(42)) == [f"reply {n}" for n in range(5)]
