"""What the scheduled-task tests share: waiting until nothing more can be sent."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from pathlib import Path

import orjson

from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.bot.schedule.parsing import parse_when
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat, TaskKind
from mnemobot.config.zones import zone_of

# Zones the tables of reminder times are read in, and what a refused time is expected as.
ZONES = ["Europe/Moscow", "America/New_York", "Asia/Shanghai"]
REFUSED = "refused"


def read(words: str, local_now: tuple[int, ...], zone: str) -> str:
    """When `words` said at the local time `local_now` in `zone` fire, as local time."""
    now = datetime(*local_now, tzinfo=zone_of(zone)).timestamp()  # type: ignore[misc]
    at = datetime.fromtimestamp(parse_when(words, now, zone), zone_of(zone))
    return f"{at:%Y-%m-%d %H:%M}"


def due_now(task_id: str, chat: TaskChat, text: str, kind: TaskKind = "reminder") -> Task:
    """A one-shot task of `chat` due this moment (UTC), number 1."""
    now = time.time()
    return Task(
        id=task_id,
        number=1,
        chat=chat,
        kind=kind,
        text=text,
        schedule=Schedule(type="once", at=now),
        zone="UTC",
        created_at=now,
        next_due=now,
    )


def nothing_waits(workspace: Path) -> bool:
    """No task waits in the file store, and no firing or reply in the Telegram journals."""
    tasks = [
        task
        for path in (workspace / "schedule").glob("*.json")
        for task in orjson.loads(path.read_bytes())["tasks"]
    ]
    journals = sorted((workspace / "delivery").glob("telegram-*.jsonl"))
    return not tasks and bool(journals) and all(not DurableQueue(p).pending() for p in journals)


def wait_until_nothing_waits(workspace: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not nothing_waits(workspace):
        if time.monotonic() > deadline:
            raise AssertionError("a task, firing or reply was still waiting")
        time.sleep(0.05)


async def nothing_waits_async(workspace: Path, timeout: float = 20) -> None:
    await asyncio.to_thread(wait_until_nothing_waits, workspace, timeout)


class SteppedClock:
    """A clock a test moves by hand; the bot's turns and its scheduler read it."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now
