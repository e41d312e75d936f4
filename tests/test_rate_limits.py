"""Typing actions have a budget of their own and previews give way: neither holds up a reply."""

from __future__ import annotations

import asyncio
import time

import pytest
from telegram.error import RetryAfter
from telegram.ext import ApplicationBuilder

from mnemobot.bot.channels.telegram.rate_limits import (
    PREVIEW_CALL,
    PreviewSkipped,
    RepliesFirstRateLimiter,
)
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


async def test_previews_give_way_to_replies_and_a_429_on_one_pauses_no_one() -> None:
    limiter = RepliesFirstRateLimiter(overall_max_rate=6, max_retries=3)
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
            # Replies take the bot's budget: a preview now would take a reply's slot.
            await asyncio.gather(*(bot.send_message(42, f"reply {n}") for n in range(5)))
            with pytest.raises(PreviewSkipped):
                await bot.send_message(43, "preview", rate_limit_args=PREVIEW_CALL)
            await asyncio.sleep(1.2)  # the budget refills
            preview = await bot.send_message(43, "preview", rate_limit_args=PREVIEW_CALL)
            # A 429 on a preview goes back to its sender at once; replies do not pause.
            telegram.fail_next("editMessageText", status=429, retry_after=5)
            with pytest.raises(RetryAfter):
                await bot.edit_message_text(
                    "preview 2",
                    chat_id=43,
                    message_id=preview.message_id,
                    rate_limit_args=PREVIEW_CALL,
                )
            start = time.monotonic()
            await bot.send_message(44, "a reply elsewhere")
            assert time.monotonic() - start < 2
    assert [m["text"] for m in telegram.sent_messages(43)] == ["preview"]
