"""`mnemobot run [--webhook] [--web [PORT]]`: serve Telegram (and with `--web` the memory
page, on the bot's own services) until SIGINT/SIGTERM, then shut down cleanly.

One `run` per workspace on files (two would answer every message twice); with Redis, one
per replica name. The bot is built here (`bot.app`), served by the Telegram channel
(`bot.channels.telegram.serve`), and closed (the LLM client too) before exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from telegram.error import InvalidToken, TelegramError

from mnemobot.bot.app import App, build_app, build_replica_app
from mnemobot.bot.channels.telegram.serve import serve_telegram
from mnemobot.bot.channels.telegram.sources import WebhookSettingsError, webhook_plan
from mnemobot.bot.cli.doctor import doctor
from mnemobot.bot.cli.init import offer_init
from mnemobot.bot.cli.logging_setup import redact
from mnemobot.bot.cli.startup import log_startup, secrets_of, settings_or_exit, token_rejected_line
from mnemobot.bot.cli.web import start_beside_bot, start_lines, web_tokens
from mnemobot.bot.cli.workspace_guard import (
    MEMORY_COMMAND_RUNNING,
    WorkspaceGuard,
    memory_command_running,
)
from mnemobot.bot.delivery.replicas import open_replicas
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.bot.web.access import WebToken
from mnemobot.bot.web.server import WebServer
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths

log = logging.getLogger(__name__)


class PageNotStarted(Exception):
    """`--web` could not listen; the message says where and what to do."""


NO_TOKEN = (
    "mnemobot: TELEGRAM_BOT_TOKEN is not set: get a token from @BotFather "
    "(https://t.me/BotFather) and set TELEGRAM_BOT_TOKEN=123456:ABC...; "
)


def no_token_line(settings: Settings) -> str:
    """The one line `run` gives without a token. `mnemobot chat` is offered only when a
    model server is set: without one it cannot answer either, and a hint that leads to a
    second refusal is worse than none."""
    if settings.openai_base_url is None and settings.openai_api_key is None:
        return NO_TOKEN + "`mnemobot chat` works without one once a model server is set."
    return NO_TOKEN + "`mnemobot chat` works without one."


def run_command(args: argparse.Namespace) -> int:
    settings = settings_or_exit(log_all=True)
    if settings.telegram_bot_token is None:
        code = offer_init(
            no_token_line(settings), then="Checking the settings, then starting the bot:"
        )
        if code != 0:
            return code
        # Set up just now: check everything as `mnemobot doctor` does, then start.
        settings = settings_or_exit(log_all=True)
        if settings.telegram_bot_token is None:
            print(no_token_line(settings), file=sys.stderr)
            return 2
        if doctor(sys.stdout) != 0:
            print(
                "mnemobot: a check failed (FAIL above); fix it with `mnemobot init` or in the "
                "settings file, then `mnemobot run`",
                file=sys.stderr,
            )
            return 1
    redis_url = settings.bot_redis_url.get_secret_value() if settings.bot_redis_url else None
    page_tokens: tuple[list[WebToken], bool] | None = None
    if args.web is not None:
        found = web_tokens(settings)
        if isinstance(found, str):
            print(f"mnemobot: {found}", file=sys.stderr)
            return 2
        page_tokens = found
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
    if memory_command_running(paths):
        # It writes chats' memory the bot would load half-written and write over.
        guard.release()
        print(f"mnemobot: {MEMORY_COMMAND_RUNNING}", file=sys.stderr)
        return 2

    log_startup(settings)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        signals: list[str] = []

        def on_signal(signum: int) -> None:
            signals.append(signal.Signals(signum).name)
            stop.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
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
        if isinstance(app.llm, OpenAIChatModel) and app.llm.local:
            # A home server may drop tools silently (llama-cpp-python): one line says so.
            app.llm.start_tool_check(app.assistant.model_name(app.runtime.current()))
        watching = asyncio.create_task(guard.watch(stop), name="workspace-guard")
        page = None
        try:
            if page_tokens is not None:
                page = await start_page(app, page_tokens)
            await serve_telegram(app, settings, stop=stop, webhook=args.webhook, replicas=replicas)
        finally:
            watching.cancel()
            if page is not None:
                await page.stop()
            await app.close()
            if replicas is not None:
                await replicas.close()
        # The log's last line says the bot ended cleanly, and why (Ctrl-C is SIGINT).
        log.info("stopped%s: shut down cleanly", f" ({signals[0]})" if signals else "")
        return 0

    async def start_page(app: App, found: tuple[list[WebToken], bool]) -> WebServer:
        tokens, generated = found
        try:
            page = await start_beside_bot(
                app, settings, host=args.web_host, port=args.web, tokens=tokens
            )
        except OSError as exc:
            raise PageNotStarted(
                f"cannot listen on {args.web_host}:{args.web} for --web ({exc.strerror or exc}); "
                "pass another port"
            ) from None
        print(start_lines(page, tokens, generated, read_only=False, with_bot=True), flush=True)
        return page

    try:
        return asyncio.run(main())
    except PageNotStarted as exc:
        print(f"mnemobot: {exc}", file=sys.stderr)
        return 2
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
