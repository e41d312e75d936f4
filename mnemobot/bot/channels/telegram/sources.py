"""Where the Telegram channel's updates come from: long polling or our webhook server.

Every source hands raw updates to `keep` (the durable inbox) and only then lets Telegram
forget them. With replicas on Redis exactly one replica polls: `LeaderPollingSource`
holds the `poller` lease and the others stand by, retrying every third of its TTL, and
take over once it runs out. A webhook needs no leader: Telegram posts each update to any
replica behind the URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from aiohttp import web
from redis.exceptions import RedisError
from telegram import Update
from telegram.error import TelegramError
from telegram.ext import Application

from mnemobot.bot.channels.telegram.poller import KeepUpdates, UpdatePoller
from mnemobot.bot.channels.telegram.webhook_server import start_webhook_server, webhook_application
from mnemobot.bot.delivery.redis_coordination import Lease
from mnemobot.bot.delivery.replicas import Replicas
from mnemobot.config.settings import Settings

log = logging.getLogger(__name__)

# Button presses answer a tool's confirmation question.
ALLOWED_UPDATES = [Update.MESSAGE, Update.CALLBACK_QUERY]
POLLER_LEASE = "poller"
# What Telegram accepts as a webhook secret_token.
_SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class UpdateSource(Protocol):
    """Where updates come from: long polling, or the webhook server."""

    async def start(self, application: Application, keep: KeepUpdates) -> None: ...

    async def stop(self) -> None: ...


class WebhookSettingsError(ValueError):
    """The webhook cannot start with these settings; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class WebhookPlan:
    url: str
    url_path: str
    listen: str
    port: int
    secret: str


def webhook_plan(settings: Settings, *, replicas: bool = False) -> WebhookPlan:
    url = settings.bot_webhook_url
    if not url:
        raise WebhookSettingsError(
            "BOT_WEBHOOK_URL is not set: set it to the public https URL Telegram should "
            "post updates to, e.g. https://bot.example.com/telegram"
        )
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        # Not the URL itself: it may carry credentials or a secret path.
        raise WebhookSettingsError(
            "BOT_WEBHOOK_URL is invalid: it is not an http(s) URL with a host; use the public "
            "https URL Telegram should post updates to, e.g. https://bot.example.com/telegram"
        )
    if settings.bot_webhook_secret is not None:
        secret = settings.bot_webhook_secret.get_secret_value()
        if not _SECRET_TOKEN.match(secret):
            raise WebhookSettingsError(
                "BOT_WEBHOOK_SECRET is invalid: use 1-256 characters A-Z, a-z, 0-9, _ and -"
            )
    elif replicas:
        raise WebhookSettingsError(
            "BOT_WEBHOOK_SECRET is not set: replicas behind one URL must share one secret; "
            "set it to 1-256 characters A-Z, a-z, 0-9, _ and - on every replica"
        )
    else:
        # Telegram echoes whatever secret setWebhook registered, so a fresh one per start
        # protects the endpoint just as well as a configured one.
        secret = secrets.token_urlsafe(32)
    host, port = settings.webhook_host_port
    return WebhookPlan(
        url=url, url_path=parts.path.strip("/"), listen=host, port=port, secret=secret
    )


class PollingSource:
    """Long polling with `UpdatePoller`: the offset moves only past kept updates."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, application: Application, keep: KeepUpdates) -> None:
        # A webhook left over from an earlier `run --webhook` makes getUpdates fail (409).
        await application.bot.delete_webhook(drop_pending_updates=False)
        poller = UpdatePoller(
            application.bot,
            keep,
            timeout_seconds=self.timeout_seconds,
            allowed_updates=ALLOWED_UPDATES,
        )
        self._task = asyncio.create_task(poller.run(self._stop), name="telegram-poller")
        log.info("polling Telegram for updates")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await self._task
            except Exception:
                log.exception("polling had stopped with an error")


class WebhookSource:
    """Our own webhook server (`webhook_server`), registered with Telegram."""

    def __init__(self, plan: WebhookPlan) -> None:
        self.plan = plan
        self._runner: web.AppRunner | None = None

    async def start(self, application: Application, keep: KeepUpdates) -> None:
        plan = self.plan

        async def keep_one(update: dict[str, Any]) -> None:
            await keep([update])

        server = webhook_application(plan.url_path, plan.secret, keep_one)
        self._runner = await start_webhook_server(server, plan.listen, plan.port)
        await application.bot.set_webhook(
            url=plan.url, secret_token=plan.secret, allowed_updates=ALLOWED_UPDATES
        )
        log.info("listening for Telegram webhooks on %s:%s", plan.listen, plan.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


class LeaderPollingSource:
    """Polls Telegram only while holding the `poller` lease; stands by otherwise."""

    def __init__(
        self, make_polling: Callable[[], UpdateSource], replicas: Replicas, lease_seconds: float
    ) -> None:
        self.make_polling = make_polling
        self.polling: UpdateSource | None = None
        self.coordination = replicas.coordination
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.outage = replicas.outage
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self, application: Application, keep: KeepUpdates) -> None:
        self._task = asyncio.create_task(self._lead(application, keep), name="poller-lease")

    async def _lead(self, application: Application, keep: KeepUpdates) -> None:
        period = self.lease_ms / 3000
        lease: Lease | None = None
        announced = False
        try:
            while not self._stop.is_set():
                try:
                    if lease is None:
                        lease = await self.coordination.acquire(POLLER_LEASE, self.lease_ms)
                        if lease is not None:
                            log.info("this replica polls Telegram now (poller lease taken)")
                            self.polling = self.make_polling()
                            try:
                                await self.polling.start(application, keep)
                            except (TelegramError, OSError) as exc:
                                # Let another replica (or this one, next round) try.
                                log.warning("could not start polling (%s); retrying", exc)
                                self.polling = None
                                await self.coordination.release(lease)
                                lease = None
                        elif not announced:
                            announced = True
                            log.info("another replica polls Telegram; standing by")
                    elif not await self.coordination.renew(lease):
                        log.warning("poller lease lost; standing by")
                        await self._step_down()
                        lease = None
                    self.outage.ok()
                except RedisError as exc:
                    period_pause = self.outage.failed("holding the poller lease", exc)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), period_pause)
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), period)
        finally:
            await self._step_down()
            if lease is not None:
                with contextlib.suppress(RedisError):
                    await self.coordination.release(lease)

    @property
    def leading(self) -> bool:
        return self.polling is not None

    async def _step_down(self) -> None:
        polling, self.polling = self.polling, None
        if polling is not None:
            await polling.stop()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
