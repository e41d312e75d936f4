"""`mnemobot bench telegram`: replies per second and the latency the bot itself adds.

Path measured: fake Bot API (getUpdates long poll) -> PTB -> lanes -> Assistant and the
whole pipeline (as `build_app` assembles it) -> fake LLM answering at once -> Markdown to
HTML, split -> sendMessage. The fakes run in a child process (bot/bench_servers.py) so the
bot has this process and its event loop to itself.

Telegram itself allows a bot about 30 messages per second across all chats; PTB's
AIORateLimiter enforces that in production. The bench runs the same limiter with the caps
lifted, because it measures what the bot can do, not what Telegram permits.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from telegram.ext import AIORateLimiter

from bot.app import build_app
from bot.bench_servers import BENCH_TOKEN, BenchResult, serve_bench_servers
from bot.telegram.run import serve_telegram
from config.settings import Settings

DEFAULT_CHATS = 50
DEFAULT_MESSAGES = 20
TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class BenchFigures:
    chats: int
    messages: int
    replies: int
    seconds: float
    replies_per_second: float
    p50_ms: float
    p95_ms: float
    max_ms: float


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def figures_from(result: BenchResult, chats: int, messages: int) -> BenchFigures:
    latencies = result.added_latency_ms
    return BenchFigures(
        chats=chats,
        messages=messages,
        replies=result.replies,
        seconds=result.seconds,
        replies_per_second=result.replies / result.seconds if result.seconds > 0 else 0.0,
        p50_ms=statistics.median(latencies) if latencies else float("nan"),
        p95_ms=percentile(latencies, 0.95),
        max_ms=max(latencies, default=float("nan")),
    )


async def _run_bot(
    workspace: Path, bot_url: str, llm_url: str, go: asyncio.Event, stop: asyncio.Event
) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        bot_workspace=workspace,
        openai_api_key="bench-key",
        openai_base_url=llm_url,
        bot_model="bench-model",
        telegram_bot_token=BENCH_TOKEN,
        telegram_api_base_url=bot_url,
        telegram_allowed_users="*",
    )
    app = build_app(settings)
    try:
        await serve_telegram(
            app,
            settings,
            stop=stop,
            poll_timeout_seconds=10,
            on_ready=go.set,
            rate_limiter=AIORateLimiter(overall_max_rate=0, group_max_rate=0, max_retries=3),
        )
    finally:
        await app.close()


async def run_bench(chats: int, messages: int) -> BenchFigures:
    context = multiprocessing.get_context("spawn")
    parent_end, child_end = context.Pipe()
    child = context.Process(
        target=serve_bench_servers, args=(child_end, chats, messages), daemon=True
    )
    child.start()
    try:
        bot_url, llm_url = await asyncio.to_thread(parent_end.recv)
        go, stop = asyncio.Event(), asyncio.Event()
        with tempfile.TemporaryDirectory(prefix="mnemobot-bench-") as tmp:
            bot = asyncio.create_task(_run_bot(Path(tmp), bot_url, llm_url, go, stop))
            await asyncio.wait(
                {bot, asyncio.create_task(go.wait())}, return_when=asyncio.FIRST_COMPLETED
            )
            if bot.done():
                await bot  # start-up failed: raise its error
            parent_end.send("go")
            waiting = asyncio.to_thread(parent_end.recv)
            result: BenchResult = await asyncio.wait_for(waiting, TIMEOUT_SECONDS)
            stop.set()
            await bot
        parent_end.send("stop")
    finally:
        child.join(timeout=5)
        if child.is_alive():
            child.terminate()
    return figures_from(result, chats, messages)


def bench_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    figures = asyncio.run(run_bench(args.chats, args.messages))
    print(
        f"bench telegram: {figures.chats} chats x {figures.messages} messages = "
        f"{figures.replies} replies in {figures.seconds:.2f} s"
    )
    print(f"  throughput: {figures.replies_per_second:.1f} replies/s")
    print(
        f"  latency added by the bot: p50 {figures.p50_ms:.1f} ms, "
        f"p95 {figures.p95_ms:.1f} ms, max {figures.max_ms:.1f} ms"
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `telegram` under `mnemobot bench`."""
    bench = sub.add_parser(
        "telegram", help="replies/s and added latency: fake Bot API -> bot -> fake LLM"
    )
    bench.add_argument(
        "--chats",
        type=int,
        default=DEFAULT_CHATS,
        help=f"chats talking at once (default {DEFAULT_CHATS})",
    )
    bench.add_argument(
        "--messages",
        type=int,
        default=DEFAULT_MESSAGES,
        help=f"messages per chat, each sent after the previous reply (default {DEFAULT_MESSAGES})",
    )
    bench.set_defaults(handler=bench_command)
