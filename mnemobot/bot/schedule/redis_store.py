"""Scheduled tasks in Redis, shared by replicas (`BOT_REDIS_URL`).

Keys, under the replicas' namespace:

- `sched:task:<id>`: the task as JSON;
- `sched:due:<channel>`: sorted set of waiting task ids by next time (what the firing loop
  of every replica reads);
- `sched:chat:<chat key>`: the chat's task ids; `sched:chats`: chats that have tasks;
- `sched:numbers`: the last task number given out per chat.

Every change is one script on the server: adding checks the chat's limit in the same step,
and changing a task is a compare-and-set on its whole JSON, so two replicas moving the same
task past the same occurrence change it once, and a cancelled task is not brought back.
Redis must run with `appendonly yes` for a task to survive a Redis restart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from redis.asyncio import Redis

from mnemobot.bot.schedule.store import (
    TooManyTasks,
    Waiting,
    after_run,
    moved_to,
    resumed,
    sort_for_listing,
)
from mnemobot.bot.schedule.tasks import Task

_ADD = """
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[1], ARGV[3])
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
end
redis.call('SADD', KEYS[4], ARGV[5])
return 1
"""

# Replace (or, with an empty new value, delete) a task only if it is still as read.
_SWAP = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[3], ARGV[3])
  redis.call('ZREM', KEYS[2], ARGV[3])
  return 1
end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[4] == '' then
  redis.call('ZREM', KEYS[2], ARGV[3])
else
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
end
return 1
"""


@dataclass(frozen=True, slots=True)
class _Changed:
    changed: bool
    task: Task | None
    gone: bool = False


# A compare-and-set lost this often in a row means something keeps changing the task.
SWAP_ATTEMPTS = 10
_KEEP = object()


class RedisTaskStore:
    def __init__(self, client: Redis, *, namespace: str = "mnemobot") -> None:
        self.client = client
        self.namespace = namespace
        self._add = client.register_script(_ADD)
        self._swap = client.register_script(_SWAP)

    def _key(self, *parts: str) -> str:
        return ":".join((self.namespace, "sched", *parts))

    async def _load(self, ids: list[str]) -> list[Task]:
        if not ids:
            return []
        raw = await self.client.mget([self._key("task", i) for i in ids])
        return [Task.from_json(orjson.loads(value)) for value in raw if value is not None]

    async def _ids(self, chat_key: str) -> list[str]:
        members = await self.client.smembers(self._key("chat", chat_key))
        return sorted(_text(m) for m in members)

    async def _change(self, task_id: str, change: Callable[[Task], Any]) -> _Changed:
        """Apply `change` (returns a new Task, None to delete, or _KEEP to leave it) with
        compare-and-set; what the task is now, and whether this call changed it."""
        key = self._key("task", task_id)
        for _ in range(SWAP_ATTEMPTS):
            raw = await self.client.get(key)
            if raw is None:
                return _Changed(False, None, gone=True)
            task = Task.from_json(orjson.loads(raw))
            new = change(task)
            if new is _KEEP:
                return _Changed(False, task)
            new_raw = b"" if new is None else orjson.dumps(new.to_json())
            due = "" if new is None else _due(new)
            swapped = await self._swap(
                keys=[key, self._key("due", task.chat.channel), self._key("chat", task.chat.key)],
                args=[raw, new_raw, task_id, due],
            )
            if swapped:
                return _Changed(True, new)
        raise RuntimeError(f"task {task_id} kept changing; not changed")

    # -- TaskStore -------------------------------------------------------------------------

    async def add(self, task: Task, *, max_per_chat: int) -> Task:
        chat_key = task.chat.key
        number = int(await self.client.hincrby(self._key("numbers"), chat_key, 1))
        numbered = task.with_changes(number=number)
        added = await self._add(
            keys=[
                self._key("chat", chat_key),
                self._key("task", task.id),
                self._key("due", task.chat.channel),
                self._key("chats"),
            ],
            args=[
                max_per_chat,
                orjson.dumps(numbered.to_json()),
                task.id,
                _due(numbered),
                chat_key,
            ],
        )
        if not added:
            raise TooManyTasks(f"this chat already has {max_per_chat} scheduled tasks")
        return numbered

    async def tasks(self, chat_key: str) -> list[Task]:
        return sort_for_listing(await self._load(await self._ids(chat_key)))

    async def get(self, task_id: str) -> Task | None:
        found = await self._load([task_id])
        return found[0] if found else None

    async def remove(self, chat_key: str, number: int) -> Task | None:
        for task in await self.tasks(chat_key):
            if task.number == number:
                changed = await self._change(task.id, lambda _t: None)
                return task if changed.changed else None
        return None

    async def due(self, channel: str, now: float, limit: int) -> list[Task]:
        ids = await self.client.zrangebyscore(self._key("due", channel), "-inf", now, 0, limit)
        tasks = await self._load([_text(i) for i in ids])
        return [t for t in tasks if t.waiting and (t.next_due or 0) <= now]

    async def next_due(self, channel: str) -> float | None:
        first = await self.client.zrange(self._key("due", channel), 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    async def advance(self, task_id: str, expected_due: float, next_due: float | None) -> bool:
        def change(task: Task) -> Any:
            if task.next_due != expected_due:
                return _KEEP
            return None if next_due is None else task.with_changes(next_due=next_due)

        return (await self._change(task_id, change)).changed

    async def record_run(self, task_id: str, ok: bool, *, pause_after: int) -> Task | None:
        return (await self._change(task_id, lambda t: after_run(t, ok, pause_after))).task

    async def resume(self, chat_key: str, number: int, now: float) -> Task | None:
        for task in await self.tasks(chat_key):
            if task.number == number:
                return (await self._change(task.id, lambda t: resumed(t, now))).task
        return None

    async def move_chat(self, old_key: str, new_chat_id: str) -> int:
        tasks = await self.tasks(old_key)
        if not tasks:
            return 0
        new_key = moved_to(tasks[:1], new_chat_id, set(), 0)[0].chat.key
        taken = {task.number for task in await self.tasks(new_key)}
        last = int(await self.client.hget(self._key("numbers"), new_key) or 0)
        moved = moved_to(tasks, new_chat_id, taken, last)
        by_id = {task.id: task for task in moved}
        for task in tasks:
            if not (await self._change(task.id, lambda _t: None)).changed:
                continue  # fired or cancelled meanwhile
            new = by_id[task.id]
            await self._add(
                keys=[
                    self._key("chat", new_key),
                    self._key("task", new.id),
                    self._key("due", new.chat.channel),
                    self._key("chats"),
                ],
                args=[1_000_000, orjson.dumps(new.to_json()), new.id, _due(new), new_key],
            )
        top = max(task.number for task in moved)
        await self.client.hset(self._key("numbers"), new_key, max(top, last))
        return len(moved)

    async def _chats(self, holds: Callable[[str], bool] | None) -> list[str]:
        members = await self.client.smembers(self._key("chats"))
        return sorted(k for k in (_text(m) for m in members) if holds is None or holds(k))

    async def waiting(self, holds: Callable[[str], bool] | None = None) -> Waiting:
        count, soonest = 0, None
        for chat_key in await self._chats(holds):
            for task in await self.tasks(chat_key):
                if task.waiting:
                    count += 1
                    if soonest is None or (task.next_due or 0) < (soonest.next_due or 0):
                        soonest = task
        return Waiting(count, soonest)

    async def erase(self, holds: Callable[[str], bool]) -> int:
        removed = 0
        for chat_key in await self._chats(holds):
            ids = await self._ids(chat_key)
            channel = chat_key.split(":", 1)[0]
            async with self.client.pipeline(transaction=True) as pipe:
                for task_id in ids:
                    pipe.delete(self._key("task", task_id))
                    pipe.zrem(self._key("due", channel), task_id)
                pipe.delete(self._key("chat", chat_key))
                pipe.hdel(self._key("numbers"), chat_key)
                pipe.srem(self._key("chats"), chat_key)
                await pipe.execute()
            removed += len(ids)
        return removed


def _due(task: Task) -> str:
    """A waiting task's score in the due set; "" keeps it out (paused, or done)."""
    return repr(task.next_due) if task.waiting else ""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
