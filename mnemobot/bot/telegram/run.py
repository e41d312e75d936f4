"""`mnemobot run [--webhook]`: serve Telegram until SIGINT/SIGTERM, then shut down cleanly.

Shutdown order: stop taking updates (polling or the webhook server), let running turns
finish for up to 10 s and cancel the rest (a cancelled turn still saves its session), send
what is still being sent, close the Bot API and LLM clients, exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import secrets
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from telegram import Update
from telegram.error import InvalidToken, TelegramError
from telegram.ext import Application, BaseRateLimiter

from mnemobot.bot.app import App, build_app
from mnemobot.bot.logging_setup import redact
from mnemobot.bot.onboarding import offer_init
from mnemobot.bot.startup import log_startup, secrets_of, settings_or_exit, token_rejected_line
from mnemobot.bot.telegram.channel import UpdateSource, build_telegram_application
from mnemobot.bot.telegram.config import TelegramConfig
from mnemobot.bot.telegram.poller import KeepUpdates, UpdatePoller
from mnemobot.bot.telegram.replicas import (
    LeaderPollingSource,
    Replicas,
    build_replica_app,
    open_replicas,
)
from mnemobot.bot.telegram.webhook_server import start_webhook_server, webhook_application
from mnemobot.bot.workspace_guard import WorkspaceGuard
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 10.0
POLL_TIMEOUT_SECONDS = 30.0
NO_TOKEN = (
    "mnemobot: TELEGRAM_BOT_TOKEN is not set: get a token from @BotFather "
    "(https://t.me/BotFather) and set TELEGRAM_BOT_TOKEN=123456:ABC...; "
    "`mnemobot chat` works without one."
)
# What Telegram accepts as a webhook secret_token.
_SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
# Button presses answer a tool's confirmation question.
ALLOWED_UPDATES = [Update.MESSAGE, Update.CALLBACK_QUERY]


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
    """Our own webhook server (see `bot.telegram.webhook_server`), registered with Telegram."""

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


async def serve_telegram(
    app: App,
    settings: Settings,
    *,
    stop: asyncio.Event,
    webhook: bool = False,
    poll_timeout_seconds: float = POLL_TIMEOUT_SECONDS,
    grace_seconds: float = SHUTDOWN_GRACE_SECONDS,
    on_ready: Callable[[], None] | None = None,
    rate_limiter: BaseRateLimiter | None = None,
    replicas: Replicas | None = None,
) -> None:
    """Run the Telegram channel until `stop` is set; used by `mnemobot run` and the tests.

    With `replicas`, this process is one of several on one Redis (see `bot.telegram.replicas`).
    """
    source: UpdateSource
    if webhook:
        source = WebhookSource(webhook_plan(settings, replicas=replicas is not None))
    elif replicas is not None:
        telegram_config = app.runtime.current().section("telegram", TelegramConfig)
        source = LeaderPollingSource(
            lambda: PollingSource(poll_timeout_seconds),
            replicas,
            telegram_config.poller_lease_seconds,
        )
    else:
        source = PollingSource(poll_timeout_seconds)
    _application, channel = build_telegram_application(
        app, settings, source=source, rate_limiter=rate_limiter, replicas=replicas
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


def run_command(args: argparse.Namespace) -> int:
    settings = settings_or_exit()
    if settings.telegram_bot_token is None:
        return offer_init(NO_TOKEN)
    redis_url = settings.bot_redis_url.get_secret_value() if settings.bot_redis_url else None
    if args.webhook:
        try:
            webhook_plan(settings, replicas=redis_url is not None)
        except WebhookSettingsError as exc:
            print(f"mnemobot: {exc}", file=sys.stderr)
            return 2
    # One `run` per workspace on files (two would answer every message twice); with Redis,
    # one per replica name (a replica's outbox file is its own).
    paths = WorkspacePaths(settings.bot_workspace)
    if redis_url is None:
        lock_path = paths.run_lock
        refusal = (
            f"another `mnemobot run` is serving workspace {paths.root}; stop it first "
            "(or set BOT_REDIS_URL to run several replicas)"
        )
    else:
        paths.delivery.mkdir(parents=True, exist_ok=True)
        lock_path = paths.delivery / f".replica-{settings.replica_id}.lock"
        refusal = (
            f"a replica named {settings.replica_id} is already serving workspace "
            f"{paths.root}; give each replica its own BOT_REPLICA_ID"
        )
    guard = WorkspaceGuard(paths, lock_path)
    if not guard.acquire():
        print(f"mnemobot: {refusal}", file=sys.stderr)
        return 2

    log_startup(settings)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        replicas = open_replicas(redis_url) if redis_url else None
        if replicas is not None:
            log.info(
                "replica %s on Redis %s: sessions, claims, leases and the inbox are shared",
                settings.replica_id,
                replicas.where,
            )
            app = build_replica_app(settings, replicas)
        else:
            app = build_app(settings)
        app.start_background()
        watching = asyncio.create_task(guard.watch(stop), name="workspace-guard")
        try:
            await serve_telegram(app, settings, stop=stop, webhook=args.webhook, replicas=replicas)
        finally:
            watching.cancel()
            await app.close()
            if replicas is not None:
                await replicas.close()
        return 0

    try:
        return asyncio.run(main())
    except InvalidToken:
        print(token_rejected_line(settings), file=sys.stderr)
        return 1
    except TelegramError as exc:
        # Start-up failures (unreachable API...): one line, not a traceback, no token.
        reason = redact(str(exc), secrets_of(settings))
        print(f"mnemobot: Telegram refused to start: {reason}", file=sys.stderr)
        return 1
    finally:
        guard.release()


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `run` to the `mnemobot` command line."""
    run = sub.add_parser("run", help="serve the bot on Telegram (long polling, or --webhook)")
    run.add_argument(
        "--webhook",
        action="store_true",
        help="receive updates on BOT_WEBHOOK_URL (listening on BOT_WEBHOOK_LISTEN, checking "
        "BOT_WEBHOOK_SECRET) instead of polling",
    )
    run.set_defaults(handler=run_command)
