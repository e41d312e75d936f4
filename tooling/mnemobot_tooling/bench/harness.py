"""What the Telegram benches share: the bot under test and the servers child.

- `BotSetup` and `run_bot`: one bot as `mnemobot run` serves it (polling or webhook, on
  files or as a replica on Redis), with the bench's rate limiter; `bench telegram` runs it
  in its own process, `bench telegram --replicas` in one child process per replica.
- `bench_servers`: the child process with the fake Bot API and LLM that drives the load
  (`load_servers`), and `load_plans`, the phases it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from telegram.ext import AIORateLimiter, BaseRateLimiter

from mnemobot.bot.app import build_app, build_replica_app
from mnemobot.bot.channels.telegram.config import DEFAULT_TIMING, TelegramTiming
from mnemobot.bot.channels.telegram.rate_limits import RepliesFirstRateLimiter
from mnemobot.bot.channels.telegram.serve import serve_telegram
from mnemobot.bot.delivery.replicas import open_replicas
from mnemobot.config.settings import Settings
from mnemobot_tooling.bench.load_servers import (
    BENCH_TOKEN,
    BENCH_WEBHOOK_SECRET,
    BenchResult,
    LoadPlan,
    serve_bench_servers,
)

# Load phase plus the child's drain time, with room to spare.
PHASE_TIMEOUT_SECONDS = 120.0
WEBHOOK_PATH = "telegram"


def bench_rate_limiter(production_limits: bool) -> BaseRateLimiter:
    """The bot's own limiter as in production, or the same with Telegram's caps lifted."""
    if production_limits:
        return RepliesFirstRateLimiter(max_retries=3)
    return AIORateLimiter(overall_max_rate=0, group_max_rate=0, max_retries=3)


@dataclass(frozen=True, slots=True)
class BotSetup:
    """One bot under test: where it talks to, and on what it keeps its state."""

    workspace: Path
    bot_url: str
    llm_url: str
    # With Redis: one replica, its claims, leases and sessions in Redis.
    redis_url: str | None = None
    # Redis keys live under this; the replicas of one run share it, and a fresh one per run
    # keeps anything of an earlier run on a shared Redis out of the way.
    namespace: str = ""
    replica_id: str = "bench"
    # A port: webhook mode, listening on 127.0.0.1 there; None: long polling.
    webhook_port: int | None = None
    production_limits: bool = False
    # The channel's pacing (the streaming bench's edit interval).
    timing: TelegramTiming = DEFAULT_TIMING

    @property
    def webhook_url(self) -> str:
        return f"http://127.0.0.1:{self.webhook_port}/{WEBHOOK_PATH}"

    def settings(self) -> Settings:
        webhook: dict[str, Any] = {}
        if self.webhook_port is not None:
            webhook = {
                "bot_webhook_url": self.webhook_url,
                "bot_webhook_secret": BENCH_WEBHOOK_SECRET,
                "bot_webhook_listen": f"127.0.0.1:{self.webhook_port}",
            }
        return Settings(
            _env_file=None,
            bot_workspace=self.workspace,
            openai_api_key="bench-key",
            openai_base_url=self.llm_url,
            bot_model="bench-model",
            telegram_bot_token=BENCH_TOKEN,
            telegram_api_base_url=self.bot_url,
            telegram_allowed_users="*",
            bot_redis_url=self.redis_url,
            bot_replica_id=self.replica_id,
            **webhook,
        )


async def run_bot(setup: BotSetup, go: asyncio.Event, stop: asyncio.Event) -> None:
    """Serve Telegram as `mnemobot run` does (with the bench's limiter) until `stop`."""
    settings = setup.settings()
    replicas = None
    if setup.redis_url:
        namespace = setup.namespace or f"bench-{uuid.uuid4().hex[:8]}"
        replicas = open_replicas(setup.redis_url, namespace=namespace)
    app = build_replica_app(settings, replicas) if replicas is not None else build_app(settings)
    try:
        await serve_telegram(
            app,
            settings,
            stop=stop,
            webhook=setup.webhook_port is not None,
            poll_timeout_seconds=10,
            on_ready=go.set,
            rate_limiter=bench_rate_limiter(setup.production_limits),
            replicas=replicas,
            timing=setup.timing,
        )
    finally:
        await app.close()
        if replicas is not None:
            await replicas.close()


async def receive(conn: Connection, child: multiprocessing.process.BaseProcess) -> object:
    """The child's next message; fails (instead of hanging) if the child died."""
    while True:
        ready = await asyncio.to_thread(conn.poll, 0.5)
        if ready:
            return conn.recv()
        if not child.is_alive():
            raise RuntimeError(f"{child.name} exited early (exit code {child.exitcode})")


@dataclass(frozen=True, slots=True)
class ServersChild:
    """The child process serving the fake Bot API and LLM and driving the load."""

    conn: Connection
    process: multiprocessing.process.BaseProcess
    bot_url: str
    llm_url: str

    async def run_phase(self, plan: LoadPlan) -> BenchResult:
        self.conn.send(plan)
        result = await asyncio.wait_for(
            receive(self.conn, self.process), PHASE_TIMEOUT_SECONDS + plan.seconds
        )
        assert isinstance(result, BenchResult)
        return result


@contextlib.asynccontextmanager
async def bench_servers() -> AsyncIterator[ServersChild]:
    """Start the servers child; ends it on exit."""
    context = multiprocessing.get_context("spawn")
    parent_end, child_end = context.Pipe()
    child = context.Process(
        target=serve_bench_servers, args=(child_end,), daemon=True, name="bench servers"
    )
    child.start()
    try:
        urls = await asyncio.wait_for(receive(parent_end, child), 60)
        assert isinstance(urls, tuple)
        bot_url, llm_url = urls
        yield ServersChild(parent_end, child, bot_url, llm_url)
        parent_end.send(None)
    finally:
        child.join(timeout=5)
        if child.is_alive():
            child.terminate()


def load_plans(
    chats: int,
    rate: float,
    seconds: float,
    closed_seconds: float,
    llm_delay_seconds: float,
    webhook_urls: tuple[str, ...] = (),
) -> list[LoadPlan]:
    """The open-loop phase (if seconds > 0), then the closed loop (if closed_seconds > 0)."""
    plans: list[LoadPlan] = []
    if seconds > 0:
        plans.append(
            LoadPlan(
                mode="open",
                chats=chats,
                seconds=seconds,
                rate=rate,
                first_chat_id=10_000,
                llm_delay_seconds=llm_delay_seconds,
                webhook_urls=webhook_urls,
            )
        )
    if closed_seconds > 0:
        plans.append(
            LoadPlan(
                mode="closed",
                chats=chats,
                seconds=closed_seconds,
                first_chat_id=20_000,
                llm_delay_seconds=llm_delay_seconds,
                webhook_urls=webhook_urls,
            )
        )
    return plans
