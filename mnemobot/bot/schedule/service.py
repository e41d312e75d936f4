"""Reminders and scheduled tasks, put together: store, firing loop, runner, tool, command.

The composition root builds one `ScheduleService` per bot; channels attach to its
`scheduler` once they can take firings (see `bot.schedule.scheduler`), and hand firing
jobs in their lanes to `runner`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.i18n import words_for
from mnemobot.bot.schedule.firing import FiringRunner
from mnemobot.bot.schedule.limits import DEFAULT_SCHEDULE_LIMITS, ScheduleLimits
from mnemobot.bot.schedule.reminders import RemindersCommand
from mnemobot.bot.schedule.scheduler import Scheduler
from mnemobot.bot.schedule.store import FileTaskStore, TaskStore, Waiting
from mnemobot.bot.schedule.timing import format_when
from mnemobot.bot.schedule.tool import ScheduleTool
from mnemobot.bot.schedule.wording import local_when, locale_for
from mnemobot.bot.tools.clock_tool import chat_zone_name
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.erasure import EraseStep, ErasureTarget
from mnemobot.bot.turn.permissions import Permissions
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.zones import local_zone_name
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.core.tool_runner import Tool

SCHEDULE_DIR_NAME = "schedule"


def schedule_folder(workspace: Path) -> Path:
    """Where the file store keeps one JSON file per chat."""
    return workspace / SCHEDULE_DIR_NAME


def waiting_line(waiting: Waiting, now: float, language: str | None = None) -> str:
    """ "Scheduled: 3 waiting, next Thursday 27 November, 09:00 (Europe/Berlin)"."""
    words = words_for(language)
    if not waiting.count or waiting.soonest is None or waiting.soonest.next_due is None:
        return words.gettext("Scheduled: nothing waiting")
    soonest = waiting.soonest
    assert soonest.next_due is not None
    locale = locale_for(language)
    if locale is None:
        when = format_when(soonest.next_due, soonest.zone, now)
    else:
        when = local_when(soonest.next_due, soonest.zone, now, locale)
    return words.gettext(
        "Scheduled: {count} waiting, next {when}", count=words.number(waiting.count), when=when
    )


@dataclass(slots=True)
class ScheduleService:
    store: TaskStore
    scheduler: Scheduler
    runner: FiringRunner
    tool: Tool
    reminders: RemindersCommand
    clock: Clock

    async def status_lines(self, chat: ChatRef) -> list[str]:
        waiting = await self.store.waiting(lambda key: key == chat.key)
        # Babel loads a language's dates on first use: not on the event loop.
        return [await asyncio.to_thread(waiting_line, waiting, self.clock(), chat.language)]

    async def erase(self, target: ErasureTarget) -> list[str]:
        """Erasure step: the scheduled tasks of every chat of the scope."""
        removed = await self.store.erase(target.holds)
        return [f"scheduled tasks: {removed}"] if removed else []

    async def move_chat(self, old_key: str, new_chat_id: str) -> list[str]:
        """A group became a supergroup: its tasks follow it."""
        moved = await self.store.move_chat(old_key, new_chat_id)
        return [f"the scheduled tasks ({moved})"] if moved else []

    async def close(self) -> None:
        await self.scheduler.close()


def workspace_store(
    workspace: Path, redis_url: str | None, *, read_only: bool = False
) -> TaskStore:
    """The store a bot on this workspace uses: Redis with BOT_REDIS_URL, else the files.
    For the command line (`doctor`, `memory erase`); close a Redis one with `close_store`."""
    if redis_url:
        from redis.asyncio import Redis

        from mnemobot.bot.schedule.redis_store import RedisTaskStore

        return RedisTaskStore(
            Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=10)
        )
    return FileTaskStore(schedule_folder(workspace), read_only=read_only)


async def close_store(store: TaskStore) -> None:
    client = getattr(store, "client", None)
    if client is not None:
        await client.aclose()


def cli_erase_step(workspace: Path, redis_url: str | None) -> EraseStep:
    """`mnemobot memory erase`: the chat's scheduled tasks go too."""

    async def erase(target: ErasureTarget) -> list[str]:
        store = workspace_store(workspace, redis_url)
        try:
            removed = await store.erase(target.holds)
        finally:
            await close_store(store)
        return [f"scheduled tasks: {removed}"] if removed else []

    return erase


async def workspace_summary(workspace: Path, redis_url: str | None, now: float) -> str:
    """`doctor`: how many tasks wait in the whole workspace, and the soonest."""
    store = workspace_store(workspace, redis_url, read_only=True)
    try:
        waiting = await store.waiting()
    finally:
        await close_store(store)
    return waiting_line(waiting, now)


def build_schedule(
    *,
    workspace: Path,
    config: Callable[[], RuntimeConfig],
    assistant: Assistant,
    permissions: Permissions,
    clock: Clock = SYSTEM_CLOCK,
    store: TaskStore | None = None,
    unavailable: Callable[[ChatRef], Awaitable[str | None]] | None = None,
    limits: ScheduleLimits = DEFAULT_SCHEDULE_LIMITS,
) -> ScheduleService:
    """`store`: another store than the workspace's files (replicas keep tasks in Redis);
    `unavailable`: why the model cannot set reminders in a chat now (see /reminders);
    `limits`: the tasks' limits (a test passes others)."""
    store = store or FileTaskStore(schedule_folder(workspace))
    scheduler = Scheduler(store, lambda: config().schedule, clock=clock, limits=limits)

    def zone_for(chat: ChatRef) -> str:
        return chat_zone_name(assistant.session(chat).metadata, config()) or local_zone_name()

    return ScheduleService(
        store=store,
        scheduler=scheduler,
        runner=FiringRunner(assistant, store, clock=clock, limits=limits),
        tool=ScheduleTool(store, permissions, on_added=scheduler.wake, limits=limits).tool(),
        reminders=RemindersCommand(
            store,
            permissions,
            config,
            zone_for,
            clock=clock,
            on_changed=scheduler.wake,
            unavailable=unavailable,
            limits=limits,
        ),
        clock=clock,
    )
