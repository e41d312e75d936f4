"""Where scheduled tasks are kept: `TaskStore`, and its default on files.

Every change is durable before the call returns: a task added is on disk (or in Redis, see
`bot.schedule.redis_store`) before the chat is told it was scheduled.

`FileTaskStore` keeps one JSON file per chat (`schedule/<chat key>.json`: the chat's tasks
and the last number given out, kept when no task is left), rewritten whole and
crash-safely on each change (temp file, fsync, rename), so a crash leaves the old or the
new file. All tasks are held in memory,
loaded from the folder on first use (off the event loop), with one heap of due times per
channel: the scheduler's "what is due now" costs a heap peek.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.bot.schedule.tasks import Task
from mnemobot.bot.schedule.timing import next_occurrence
from mnemobot.config.zones import zone_of

log = logging.getLogger(__name__)


class TooManyTasks(Exception):
    """The chat already has as many tasks as `ScheduleLimits.max_tasks_per_chat` allows."""


@dataclass(frozen=True, slots=True)
class Waiting:
    """How many tasks wait (not paused, with a next time), and the soonest of them."""

    count: int
    soonest: Task | None


class TaskStore(Protocol):
    async def add(self, task: Task, *, max_per_chat: int) -> Task:
        """Keep `task` with the chat's next number (returned); TooManyTasks past the limit."""
        ...

    async def tasks(self, chat_key: str) -> list[Task]:
        """The chat's tasks, soonest first (paused ones last)."""
        ...

    async def get(self, task_id: str) -> Task | None: ...

    async def remove(self, chat_key: str, number: int) -> Task | None:
        """Cancel task `number` of the chat; the task, or None if it has none such."""
        ...

    async def due(self, channel: str, now: float, limit: int) -> list[Task]:
        """Tasks of `channel` whose next time is at or before `now`, soonest first."""
        ...

    async def next_due(self, channel: str) -> float | None:
        """The soonest next time of a waiting task of `channel`."""
        ...

    async def advance(self, task_id: str, expected_due: float, next_due: float | None) -> bool:
        """Move a task past an occurrence: its next time becomes `next_due`, or it is done
        and removed (None). Only if its next time is still `expected_due` (False if not:
        another replica moved it, or it was cancelled)."""
        ...

    async def record_run(self, task_id: str, ok: bool, *, pause_after: int) -> Task | None:
        """Count a run's outcome; `pause_after` failures in a row pause a recurring task."""
        ...

    async def resume(self, chat_key: str, number: int, now: float) -> Task | None:
        """Un-pause task `number`; its next time is the first one after `now`."""
        ...

    async def waiting(self, holds: Callable[[str], bool] | None = None) -> Waiting:
        """Waiting tasks of the chats `holds` accepts (every chat when None)."""
        ...

    async def erase(self, holds: Callable[[str], bool]) -> int:
        """Remove every task of the chats `holds` accepts; how many there were."""
        ...

    async def move_chat(self, old_key: str, new_chat_id: str) -> int:
        """A group that became a supergroup: its tasks go to the new chat id (numbers kept
        unless the new chat has tasks of its own); how many moved."""
        ...


def moved_to(tasks: list[Task], new_chat_id: str, taken: set[int], last: int) -> list[Task]:
    """`tasks` under `new_chat_id`, renumbered after `last` only if a number is taken."""
    renumber = any(task.number in taken for task in tasks)
    moved = []
    for task in sorted(tasks, key=lambda t: t.number):
        if renumber:
            last += 1
        chat = replace(task.chat, chat_id=new_chat_id, thread_id=None)
        moved.append(task.with_changes(chat=chat, number=last if renumber else task.number))
    return moved


def sort_for_listing(tasks: list[Task]) -> list[Task]:
    return sorted(tasks, key=lambda t: (not t.waiting, t.next_due or 0.0, t.number))


def resumed(task: Task, now: float) -> Task:
    """The task un-paused, its next time the first after `now` (None: it will not fire)."""
    following = next_occurrence(task.schedule, now, zone_of(task.zone))
    return task.with_changes(paused=False, failures=0, next_due=following)


def after_run(task: Task, ok: bool, pause_after: int) -> Task:
    """The task after one run: failures counted or reset, paused when too many in a row."""
    if ok:
        return task.with_changes(failures=0) if task.failures else task
    failures = task.failures + 1
    pause = task.schedule.recurring and failures >= pause_after
    return task.with_changes(failures=failures, paused=task.paused or pause)


@dataclass(slots=True)
class _ChatTasks:
    last_number: int = 0
    tasks: dict[str, Task] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class FileTaskStore:
    def __init__(self, folder: Path, *, read_only: bool = False) -> None:
        """`read_only`: only look (`doctor`): an unreadable file is skipped, not moved."""
        self.folder = folder
        self.read_only = read_only
        self._chats: dict[str, _ChatTasks] = {}
        self._by_id: dict[str, Task] = {}
        # Per channel: (due, task id); an entry is stale once the task's next time moved.
        self._heaps: dict[str, list[tuple[float, str]]] = {}
        self._loaded = False
        self._loading: asyncio.Lock | None = None
        self.skipped_files = 0

    # -- loading ---------------------------------------------------------------------------

    async def _ready(self) -> None:
        if self._loaded:
            return
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            if not self._loaded:
                chats = await asyncio.to_thread(self._read_all)
                for key, (last, tasks) in chats.items():
                    held = self._chats[key] = _ChatTasks(last_number=last)
                    for task in tasks:
                        held.tasks[task.id] = task
                        self._index(task)
                self._loaded = True

    def _read_all(self) -> dict[str, tuple[int, list[Task]]]:
        chats: dict[str, tuple[int, list[Task]]] = {}
        if not self.folder.is_dir():
            return chats
        for path in sorted(self.folder.glob("*.json")):
            try:
                data = orjson.loads(path.read_bytes())
                tasks = [Task.from_json(item) for item in data["tasks"]]
                chats[str(data["chat"])] = (int(data.get("lastNumber", 0)), tasks)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                # Moved aside, not deleted: a person can read what it held.
                self.skipped_files += 1
                if self.read_only:
                    continue
                log.warning(
                    "scheduled tasks in %s cannot be read (%s); moved aside as .corrupt",
                    path.name,
                    exc,
                )
                path.replace(path.with_suffix(".json.corrupt"))
        return chats

    def _index(self, task: Task) -> None:
        before = self._by_id.get(task.id)
        self._by_id[task.id] = task
        unchanged = before is not None and before.waiting and before.next_due == task.next_due
        if task.waiting and not unchanged:
            assert task.next_due is not None
            heapq.heappush(self._heaps.setdefault(task.chat.channel, []), (task.next_due, task.id))

    def _current(self, due: float, task_id: str) -> Task | None:
        task = self._by_id.get(task_id)
        return task if task is not None and task.waiting and task.next_due == due else None

    # -- writing ---------------------------------------------------------------------------

    def _path(self, chat_key: str) -> Path:
        return self.folder / f"{chat_key}.json"

    async def _write(self, chat_key: str) -> None:
        """Write the chat's file as it is in memory now (serialised per chat, so the last
        write always carries the newest state)."""
        held = self._chats.get(chat_key)
        if held is None:
            return
        async with held.lock:
            # Kept when empty too: its last number, so a number is never given out twice.
            data = orjson.dumps(
                {
                    "chat": chat_key,
                    "lastNumber": held.last_number,
                    "tasks": [task.to_json() for task in held.tasks.values()],
                },
                option=orjson.OPT_INDENT_2,
            )
            await asyncio.to_thread(write_atomic, self._path(chat_key), data)

    def _put(self, task: Task) -> None:
        self._chats.setdefault(task.chat.key, _ChatTasks()).tasks[task.id] = task
        self._index(task)

    def _drop(self, task: Task) -> None:
        held = self._chats.get(task.chat.key)
        if held is not None:
            held.tasks.pop(task.id, None)
        self._by_id.pop(task.id, None)

    # -- TaskStore -------------------------------------------------------------------------

    async def add(self, task: Task, *, max_per_chat: int) -> Task:
        await self._ready()
        held = self._chats.setdefault(task.chat.key, _ChatTasks())
        if len(held.tasks) >= max_per_chat:
            raise TooManyTasks(f"this chat already has {len(held.tasks)} scheduled tasks")
        held.last_number += 1
        numbered = task.with_changes(number=held.last_number)
        self._put(numbered)
        try:
            await self._write(task.chat.key)
        except OSError:
            # Not on disk, so not scheduled: the chat must not be told it is.
            self._drop(numbered)
            raise
        return numbered

    async def tasks(self, chat_key: str) -> list[Task]:
        await self._ready()
        held = self._chats.get(chat_key)
        return sort_for_listing(list(held.tasks.values())) if held else []

    async def get(self, task_id: str) -> Task | None:
        await self._ready()
        return self._by_id.get(task_id)

    async def remove(self, chat_key: str, number: int) -> Task | None:
        await self._ready()
        held = self._chats.get(chat_key)
        found = next((t for t in held.tasks.values() if t.number == number), None) if held else None
        if found is not None:
            self._drop(found)
            await self._write(chat_key)
        return found

    async def due(self, channel: str, now: float, limit: int) -> list[Task]:
        await self._ready()
        heap = self._heaps.get(channel, [])
        found: list[Task] = []
        kept: list[tuple[float, str]] = []
        seen: set[str] = set()
        while heap and heap[0][0] <= now and len(found) < limit:
            due, task_id = heapq.heappop(heap)
            task = self._current(due, task_id)
            if task is not None and task_id not in seen:
                seen.add(task_id)
                found.append(task)
                # Stays until advanced: a firing that fails is tried again.
                kept.append((due, task_id))
        for entry in kept:
            heapq.heappush(heap, entry)
        return found

    async def next_due(self, channel: str) -> float | None:
        await self._ready()
        heap = self._heaps.get(channel, [])
        while heap and self._current(*heap[0]) is None:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    async def advance(self, task_id: str, expected_due: float, next_due: float | None) -> bool:
        await self._ready()
        task = self._by_id.get(task_id)
        if task is None or task.next_due != expected_due:
            return False
        if next_due is None:
            self._drop(task)
        else:
            self._put(task.with_changes(next_due=next_due))
        await self._write(task.chat.key)
        return True

    async def record_run(self, task_id: str, ok: bool, *, pause_after: int) -> Task | None:
        await self._ready()
        task = self._by_id.get(task_id)
        if task is None:
            return None
        changed = after_run(task, ok, pause_after)
        if changed != task:
            self._put(changed)
            await self._write(task.chat.key)
        return changed

    async def resume(self, chat_key: str, number: int, now: float) -> Task | None:
        await self._ready()
        held = self._chats.get(chat_key)
        found = next((t for t in held.tasks.values() if t.number == number), None) if held else None
        if found is None:
            return None
        changed = resumed(found, now)
        self._put(changed)
        await self._write(chat_key)
        return changed

    async def waiting(self, holds: Callable[[str], bool] | None = None) -> Waiting:
        await self._ready()
        count, soonest = 0, None
        for key, held in self._chats.items():
            if holds is not None and not holds(key):
                continue
            for task in held.tasks.values():
                if task.waiting:
                    count += 1
                    if soonest is None or (task.next_due or 0) < (soonest.next_due or 0):
                        soonest = task
        return Waiting(count, soonest)

    async def move_chat(self, old_key: str, new_chat_id: str) -> int:
        await self._ready()
        held = self._chats.get(old_key)
        if held is None or not held.tasks:
            return 0
        tasks = list(held.tasks.values())
        new_key = replace(tasks[0].chat, chat_id=new_chat_id, thread_id=None).key
        target = self._chats.setdefault(new_key, _ChatTasks())
        taken = {task.number for task in target.tasks.values()}
        moved = moved_to(tasks, new_chat_id, taken, target.last_number)
        target.last_number = max([target.last_number, held.last_number] + [t.number for t in moved])
        for task in moved:
            target.tasks[task.id] = task
            self._index(task)
        held.tasks.clear()
        await self._write(new_key)
        del self._chats[old_key]
        await asyncio.to_thread(self._path(old_key).unlink, missing_ok=True)
        return len(moved)

    async def erase(self, holds: Callable[[str], bool]) -> int:
        await self._ready()
        removed = 0
        keys = {key for key in self._chats if holds(key)}
        if self.folder.is_dir():
            # Files of chats this process never loaded (another channel's process wrote them).
            keys |= {
                p.name.split(".json")[0]
                for p in self.folder.glob("*.json*")
                if holds(p.name.split(".json")[0])
            }
        for key in sorted(keys):
            held = self._chats.pop(key, None)
            if held is not None:
                removed += len(held.tasks)
                for task in held.tasks.values():
                    self._by_id.pop(task.id, None)
            path = self._path(key)
            if held is None and path.exists():
                removed += _tasks_in(path)
            await asyncio.to_thread(path.unlink, missing_ok=True)
            # A copy set aside as unreadable holds the chat's words too.
            corrupt = path.with_suffix(".json.corrupt")
            await asyncio.to_thread(corrupt.unlink, missing_ok=True)
        return removed


def _tasks_in(path: Path) -> int:
    try:
        tasks = orjson.loads(path.read_bytes()).get("tasks", [])
    except (OSError, ValueError, AttributeError):
        return 0
    return len(tasks) if isinstance(tasks, list) else 0
