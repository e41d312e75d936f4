"""`mnemobot bench telegram`: replies per second and the latency the bot itself adds.

Path measured: fake Bot API (getUpdates long poll) -> PTB -> lanes -> Assistant and the
whole pipeline (as `build_app` assembles it) -> fake LLM (no delay unless asked) -> Markdown
to HTML, split -> sendMessage. The fakes run in a child process (`load_servers`) so
the bot has this process and its event loop to itself.

Two phases on one running bot:

1. open loop: `--rate` messages per second spread round-robin over `--chats` chats for
   `--seconds`. Latency per message = (the fake Bot API receives its sendMessage) - (its
   update was handed out by getUpdates) - (the fake LLM's own time). Arrivals do not wait
   for replies, so the figure is what the bot adds at that load, not a queue the load
   generator built.
2. closed loop: every chat sends its next message as soon as the previous one is answered,
   for `--closed-seconds`; the replies per second reached is the max sustainable rate. Its
   latency is mostly queueing (chats / throughput) and is shown only for completeness.

Telegram itself allows a bot about 30 messages per second across all chats; PTB's
AIORateLimiter enforces that in production. The bench runs the same limiter with the caps
lifted, because it measures what the bot can do, not what Telegram permits.

With `--replicas N` or `--webhook`, the bots run in processes of their own, in webhook mode:
`replica_throughput`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import platform
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mnemobot_tooling.bench.harness import (
    BotSetup,
    ServersChild,
    bench_servers,
    load_plans,
    run_bot,
)
from mnemobot_tooling.bench.load_servers import BenchResult, LoadPlan
from mnemobot_tooling.bench.report import cpu_model, percentile, usable_cpus


@dataclass(frozen=True, slots=True)
class BenchFigures:
    mode: str
    chats: int
    offered_rate: float
    messages: int
    replies: int
    unanswered: int
    window_seconds: float
    replies_per_second: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    poll_wait_p50_ms: float
    poll_wait_p95_ms: float
    llm_requests: int
    # CPU time of the bot process (all threads, user + sys) over the phase, per reply.
    cpu_ms_per_reply: float
    duplicates: int = 0
    out_of_order: int = 0


def figures_from(result: BenchResult, cpu_seconds: float) -> BenchFigures:
    latencies = result.added_latency_ms
    plan = result.plan
    return BenchFigures(
        mode=plan.mode,
        chats=plan.chats,
        offered_rate=plan.rate,
        messages=result.messages_sent,
        replies=result.replies,
        unanswered=result.unanswered,
        window_seconds=result.window_seconds,
        replies_per_second=(
            result.replies_in_window / result.window_seconds if result.window_seconds else 0.0
        ),
        p50_ms=statistics.median(latencies) if latencies else float("nan"),
        p95_ms=percentile(latencies, 0.95),
        max_ms=max(latencies, default=float("nan")),
        poll_wait_p50_ms=percentile(result.poll_wait_ms, 0.5),
        poll_wait_p95_ms=percentile(result.poll_wait_ms, 0.95),
        llm_requests=result.llm_requests,
        cpu_ms_per_reply=cpu_seconds * 1000 / result.replies if result.replies else float("nan"),
        duplicates=result.duplicates,
        out_of_order=result.out_of_order,
    )


def machine_line() -> str:
    return (
        f"machine: nproc {usable_cpus()}, CPU {cpu_model()}, "
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.release()}"
    )


def load_line(label: str) -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {label}: {one:.2f} {five:.2f} {fifteen:.2f}"


async def _run_phase(
    servers: ServersChild, plan: LoadPlan, profiler: cProfile.Profile | None
) -> BenchFigures:
    cpu_before = _process_cpu_seconds()
    if profiler is not None:
        profiler.enable()
    try:
        result = await servers.run_phase(plan)
    finally:
        if profiler is not None:
            profiler.disable()
    return figures_from(result, _process_cpu_seconds() - cpu_before)


def _process_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def run_bench(
    *,
    chats: int,
    rate: float,
    seconds: float,
    closed_seconds: float,
    llm_delay_seconds: float = 0.0,
    profile_path: Path | None = None,
    redis_url: str | None = None,
    production_limits: bool = False,
) -> list[BenchFigures]:
    """Open-loop phase at `rate` (if seconds > 0), then closed loop (if closed_seconds > 0)."""
    figures: list[BenchFigures] = []
    profiler = cProfile.Profile() if profile_path is not None else None
    async with bench_servers() as servers:
        go, stop = asyncio.Event(), asyncio.Event()
        with tempfile.TemporaryDirectory(prefix="mnemobot-bench-") as tmp:
            setup = BotSetup(
                Path(tmp),
                servers.bot_url,
                servers.llm_url,
                redis_url=redis_url,
                production_limits=production_limits,
            )
            bot = asyncio.create_task(run_bot(setup, go, stop))
            await asyncio.wait(
                {bot, asyncio.create_task(go.wait())}, return_when=asyncio.FIRST_COMPLETED
            )
            if bot.done():
                await bot  # start-up failed: raise its error
            try:
                for plan in load_plans(chats, rate, seconds, closed_seconds, llm_delay_seconds):
                    use = profiler if plan.mode == "open" else None
                    figures.append(await _run_phase(servers, plan, use))
            finally:
                stop.set()
                await bot
    if profiler is not None and profile_path is not None:
        profiler.dump_stats(profile_path)
    return figures


def report_lines(figures: BenchFigures) -> list[str]:
    return [
        *phase_lines(figures),
        f"  arrival -> handed to getUpdates: p50 {figures.poll_wait_p50_ms:.1f} ms, "
        f"p95 {figures.poll_wait_p95_ms:.1f} ms; LLM requests {figures.llm_requests}",
        f"  bot process CPU (all threads, user+sys): {figures.cpu_ms_per_reply:.1f} ms per reply",
    ]


def phase_lines(figures: BenchFigures) -> list[str]:
    """What was sent and answered, the rate reached and the latency."""
    if figures.mode == "open":
        head = (
            f"open loop: {figures.offered_rate:g} msg/s over {figures.chats} chats for "
            f"{figures.window_seconds:g} s: {figures.messages} messages, "
            f"{figures.replies} answered, {figures.unanswered} unanswered"
        )
        rate = f"  achieved: {figures.replies_per_second:.1f} replies/s"
        latency = "  latency added by the bot"
    else:
        head = (
            f"closed loop (max sustainable rate): {figures.chats} chats, each waiting for "
            f"its reply, {figures.window_seconds:g} s: {figures.replies} replies"
        )
        rate = f"  max sustainable: {figures.replies_per_second:.1f} replies/s"
        latency = "  latency (mostly queueing: chats / throughput)"
    return [
        head,
        rate,
        f"{latency}: p50 {figures.p50_ms:.1f} ms, p95 {figures.p95_ms:.1f} ms, "
        f"max {figures.max_ms:.1f} ms",
    ]


def bench_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print(machine_line())
    print(load_line("before"))
    all_figures = asyncio.run(
        run_bench(
            chats=args.chats,
            rate=args.rate,
            seconds=args.seconds,
            closed_seconds=args.closed_seconds,
            llm_delay_seconds=args.llm_delay_ms / 1000,
            profile_path=args.profile,
            redis_url=args.redis_url,
            production_limits=args.production_limits,
        )
    )
    limits = (
        "Telegram's limits on (30 calls/s overall, 20/min per group; typing on its own budget)"
        if args.production_limits
        else "Telegram's limits lifted (the bot's own cost)"
    )
    print(limits)
    for figures in all_figures:
        for line in report_lines(figures):
            print(line)
    print(load_line("after"))
    if args.profile is not None:
        print(f"cProfile of the bot during the open-loop phase: {args.profile}")
    return 0
