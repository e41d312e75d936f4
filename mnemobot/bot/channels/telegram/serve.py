"""Serving Telegram until asked to stop: the source, the channel, start-up and shutdown.

Shutdown order: stop taking updates (polling or the webhook server), let running turns
finish for up to 10 s and cancel the rest (a cancelled turn still saves its session), send
what is still being sent, close the Bot API client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from telegram.ext import BaseRateLimiter

from mnemobot.bot.channels.base import ChannelHost
from mnemobot.bot.channels.telegram.application import build_telegram_application
from mnemobot.bot.channels.telegram.config import DEFAULT_TIMING, TelegramConfig, TelegramTiming
from mnemobot.bot.channels.telegram.sources import (
    LeaderPollingSource,
    PollingSource,
    UpdateSource,
    WebhookSource,
    webhook_plan,
)
from mnemobot.bot.delivery.replicas import Replicas
from mnemobot.config.settings import Settings

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 10.0
POLL_TIMEOUT_SECONDS = 30.0


async def serve_telegram(
    app: ChannelHost,
    settings: Settings,
    *,
    stop: asyncio.Event,
    webhook: bool = False,
    poll_timeout_seconds: float = POLL_TIMEOUT_SECONDS,
    grace_seconds: float = SHUTDOWN_GRACE_SECONDS,
    on_ready: Callable[[], None] | None = None,
    rate_limiter: BaseRateLimiter | None = None,
    replicas: Replicas | None = None,
    timing: TelegramTiming = DEFAULT_TIMING,
) -> None:
    """Run the Telegram channel until `stop` is set; used by `mnemobot run` and the tests.

    With `replicas`, this process is one of several on one Redis (see `bot.delivery.replicas`).
    `timing`: the channel's pacing (a test passes faster).
    """
    source: UpdateSource
    if webhook:
        source = WebhookSource(webhook_plan(settings, replicas=replicas is not None))
    elif replicas is not None:
        telegram_config = app.runtime.current().section("telegram", TelegramConfig)
        source = LeaderPollingSource(
            lambda: PollingSource(poll_timeout_seconds),
            replicas,
            telegram_config.lease_seconds,
        )
    else:
        source = PollingSource(poll_timeout_seconds)
    _application, channel = build_telegram_application(
        app, settings, source=source, rate_limiter=rate_limiter, replicas=replicas, timing=timing
    )
    try:
        # Start-up retries while the Bot API is unreachable; a stop request ends the wait.
        starting = asyncio.ensure_future(channel.start())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            stopping.cancel()
            return
        stopping.cancel()
        starting.result()
        if on_ready is not None:
            on_ready()
        await stop.wait()
        log.info("stopping: no new updates; finishing running turns")
    finally:
        await channel.stop(grace_seconds)
