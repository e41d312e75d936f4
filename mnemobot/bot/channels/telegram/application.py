"""The python-telegram-bot Application the Telegram channel drives: its Bot, requests,
timeouts and rate limiter (its Updater and handlers are not used: see `channel`)."""

from __future__ import annotations

from telegram import LinkPreviewOptions
from telegram.ext import Application, ApplicationBuilder, BaseRateLimiter, Defaults

from mnemobot.bot.channels.base import ChannelHost
from mnemobot.bot.channels.telegram.aiohttp_request import AiohttpRequest
from mnemobot.bot.channels.telegram.channel import TelegramChannel
from mnemobot.bot.channels.telegram.config import DEFAULT_TIMING, TelegramTiming
from mnemobot.bot.channels.telegram.rate_limits import RepliesFirstRateLimiter
from mnemobot.bot.channels.telegram.sources import UpdateSource
from mnemobot.bot.delivery.replicas import Replicas
from mnemobot.config.settings import Settings

# RetryAfter (429) is retried by the rate limiter after the wait Telegram asks for.
RATE_LIMIT_RETRIES = 3
# Bot API connections for sends (getUpdates has its own). Telegram takes ~30 messages/s
# per bot, which a few dozen keep-alive connections carry with room to spare even at a 1 s
# round trip; PTB's default of 256 only made httpcore scan more idle connections per call.
CONNECTION_POOL_SIZE = 32
# How long a send may wait for a free connection in a burst (PTB's default is 1 s).
POOL_TIMEOUT_SECONDS = 10.0
CONNECT_TIMEOUT_SECONDS = 10.0
READ_TIMEOUT_SECONDS = 30.0
WRITE_TIMEOUT_SECONDS = 30.0


def build_telegram_application(
    app: ChannelHost,
    settings: Settings,
    *,
    source: UpdateSource,
    rate_limiter: BaseRateLimiter | None = None,
    replicas: Replicas | None = None,
    timing: TelegramTiming = DEFAULT_TIMING,
) -> tuple[Application, TelegramChannel]:
    """The PTB Application (the Bot and its requests) and the channel that drives it."""
    if settings.telegram_bot_token is None:
        raise ValueError("TELEGRAM_BOT_TOKEN is not set")
    builder = (
        ApplicationBuilder()
        .token(settings.telegram_bot_token.get_secret_value())
        .base_url(settings.telegram_api_base_url)
        .base_file_url(settings.telegram_file_url())
        .rate_limiter(rate_limiter or RepliesFirstRateLimiter(max_retries=RATE_LIMIT_RETRIES))
        .defaults(
            Defaults(
                allow_sending_without_reply=True,
                # An answer that mentions a URL should not grow a big preview card.
                link_preview_options=LinkPreviewOptions(is_disabled=True),
            )
        )
        # Updates come from our own poller or webhook server (see the module docstring).
        .updater(None)
        # One long poll at a time: PTB's own (httpx) request is cheap enough there. PTB
        # accepts these only before `.request(...)`.
        .get_updates_connect_timeout(CONNECT_TIMEOUT_SECONDS)
        .get_updates_read_timeout(READ_TIMEOUT_SECONDS)
        .get_updates_write_timeout(WRITE_TIMEOUT_SECONDS)
        # Sends (replies, typing) go through aiohttp: a fraction of httpx's CPU per call.
        .request(
            AiohttpRequest(
                connection_pool_size=CONNECTION_POOL_SIZE,
                pool_timeout=POOL_TIMEOUT_SECONDS,
                connect_timeout=CONNECT_TIMEOUT_SECONDS,
                read_timeout=READ_TIMEOUT_SECONDS,
                write_timeout=WRITE_TIMEOUT_SECONDS,
            )
        )
    )
    application = builder.build()
    channel = TelegramChannel(app, settings, application, source, replicas, timing)
    return application, channel
