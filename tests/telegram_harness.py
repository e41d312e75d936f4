"""Runs mnemobot's real PTB Application in-process against the fake Bot API and fake LLM."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.channels.telegram.config import DEFAULT_TIMING, TelegramTiming
from mnemobot.bot.channels.telegram.serve import serve_telegram
from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.bot.tuning import DEFAULT_TUNING, Tuning
from mnemobot.config.settings import Settings
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import make_settings, write_runtime_config


@dataclass
class RunningBot:
    app: App
    settings: Settings
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def shutdown(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 15)
        await self.app.close()


StartBot = Callable[..., Awaitable[RunningBot]]


@pytest.fixture
def telegram() -> Any:
    with TelegramServer() as server:
        yield server


@pytest.fixture
async def start_bot(
    workspace: Path, openai_server: FakeOpenAIServer, telegram: TelegramServer
) -> AsyncIterator[StartBot]:
    running: list[RunningBot] = []

    async def start(
        *,
        allowed: str = "*",
        runtime: dict[str, object] | None = None,
        webhook: bool = False,
        clock: Callable[[], float] | None = None,
        server: TelegramServer | None = None,
        timing: TelegramTiming = DEFAULT_TIMING,
        tuning: Tuning = DEFAULT_TUNING,
        **extra: object,
    ) -> RunningBot:
        """`server`: another fake Bot API (another bot's token) instead of `telegram`;
        `timing`, `tuning`: faster pauses or tighter limits than the bot's own."""
        bot_api = server or telegram
        # Replies show only when finished unless a test asks for streaming: the tests of
        # other features read the final reply as the first message they see.
        path = workspace / "preferences" / "runtime-config.json"
        if runtime is None:
            runtime = json.loads(path.read_text()) if path.exists() else {}
        telegram_section = dict(runtime.get("telegram") or {})  # type: ignore[call-overload]
        telegram_section.setdefault("streaming", "off")
        write_runtime_config(workspace, {**runtime, "telegram": telegram_section})
        settings = make_settings(
            workspace,
            openai_server,
            telegram_bot_token=bot_api.token,
            telegram_api_base_url=bot_api.base_url,
            telegram_allowed_users=allowed,
            **extra,
        )
        if clock is None:
            app = build_app(settings, tuning=tuning)
        else:
            app = build_app(settings, clock=clock, tuning=tuning)
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(
            serve_telegram(
                app,
                settings,
                stop=stop,
                webhook=webhook,
                poll_timeout_seconds=1,
                grace_seconds=2,
                on_ready=ready.set,
                timing=timing,
            )
        )
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({task, waiter}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            await task
        assert ready.is_set(), "the bot did not start within 10 s"
        bot = RunningBot(app, settings, stop, task)
        running.append(bot)
        return bot

    yield start
    for bot in running:
        if not bot.task.done():
            await bot.shutdown()


def session_messages(workspace: Path, key: str) -> list[dict[str, Any]]:
    path = workspace / "sessions" / f"{key}.json"
    return json.loads(path.read_text())["messages"]


def nothing_pending(workspace: Path) -> bool:
    """Every update the bot took is answered and every answer delivered: no entry waits in
    its Telegram journals (the inbox, the outbox)."""
    journals = sorted((workspace / "delivery").glob("telegram-*.jsonl"))
    return bool(journals) and all(not DurableQueue(path).pending() for path in journals)


async def until_nothing_pending(workspace: Path, timeout: float = 20) -> None:
    """Wait until the bot is idle (`nothing_pending`): what it would still send is sent."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(nothing_pending, workspace):
        assert time.monotonic() < deadline, f"an update or reply still waits after {timeout} s"
        await asyncio.sleep(0.02)
