"""Both task stores keep one contract: files (the default) and a real Redis (replicas)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import pytest
from redis.asyncio import Redis

from mnemobot.bot.schedule.redis_store import RedisTaskStore
from mnemobot.bot.schedule.store import FileTaskStore, TaskStore, TooManyTasks
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat
from mnemobot_tooling.redis_server import running_redis

NOW = 1_800_000_000.0
Reopen = Callable[[], TaskStore]


@pytest.fixture(params=["files", "redis"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Reopen]:
    """A function giving a store on the same data each call (a restart, another replica)."""
    if request.param == "files":
        yield lambda: FileTaskStore(tmp_path / "schedule")
        return
    clients: list[Redis] = []
    with running_redis(tmp_path / "redis") as url:

        def reopen() -> TaskStore:
            clients.append(Redis.from_url(url))
            return RedisTaskStore(clients[-1])

        yield reopen
        for client in clients:
            await client.aclose()


def task(chat: str, due: float, *, text: str = "x", recurring: bool = False) -> Task:
    schedule = (
        Schedule("every", seconds=3600.0, anchor=due) if recurring else Schedule("once", at=due)
    )
    channel, chat_id, *thread = chat.split(":")
    return Task(
        id=f"{chat}-{text}",
        number=0,
        chat=TaskChat(channel, chat_id, thread_id=thread[0] if thread else None),
        kind="reminder",
        text=text,
        schedule=schedule,
        zone="UTC",
        created_at=NOW,
        next_due=due,
    )


async def test_tasks_are_numbered_listed_limited_and_kept(stores: Reopen) -> None:
    store = stores()
    first = await store.add(task("telegram:1", NOW + 60, text="a"), max_per_chat=2)
    second = await store.add(task("telegram:1", NOW + 30, text="b"), max_per_chat=2)
    assert (first.number, second.number) == (1, 2)
    with pytest.raises(TooManyTasks):
        await store.add(task("telegram:1", NOW + 90, text="c"), max_per_chat=2)
    await store.add(task("telegram:2", NOW + 10, text="d"), max_per_chat=2)
    again = stores()
    assert [t.text for t in await again.tasks("telegram:1")] == ["b", "a"]
    assert [t.text for t in await again.due("telegram", NOW + 40, 10)] == ["d", "b"]
    assert await again.next_due("telegram") == NOW + 10
    assert await again.next_due("console") is None
    waiting = await again.waiting(lambda key: key == "telegram:1")
    assert waiting.count == 2 and waiting.soonest is not None and waiting.soonest.text == "b"
    # A cancelled number is not given out again (numbers only grow).
    assert (await again.remove("telegram:1", 2)) is not None
    assert (await again.add(task("telegram:1", NOW, text="e"), max_per_chat=2)).number > 2


async def test_who_set_a_task_and_in_what_language_survive_a_restart(stores: Reopen) -> None:
    # The reminder is worded for the person who set it, also when it fires after a restart.
    chat = TaskChat("telegram", "-100", user_id="7", user_name="Олег", is_group=True, language="ru")
    added = await stores().add(replace(task("telegram:-100", NOW), chat=chat), max_per_chat=5)
    [kept] = await stores().tasks("telegram:-100")
    assert kept == added
    assert kept.chat.language == "ru" and kept.chat.user_name == "Олег"


async def test_a_task_is_moved_past_an_occurrence_once_whoever_tries(stores: Reopen) -> None:
    store = stores()
    added = await store.add(task("telegram:1", NOW, recurring=True), max_per_chat=5)
    # Replicas share Redis; on files one process (one store) is the only writer.
    racers = [stores() for _ in range(3)] if isinstance(store, RedisTaskStore) else [store] * 3
    moved = await asyncio.gather(*(r.advance(added.id, NOW, NOW + 3600) for r in racers))
    assert moved.count(True) == 1
    assert not await store.advance(added.id, NOW, NOW + 7200)  # already past it
    assert (await stores().get(added.id)).next_due == NOW + 3600  # type: ignore[union-attr]
    assert await store.advance(added.id, NOW + 3600, None)
    assert await stores().get(added.id) is None


async def test_failures_pause_a_recurring_task_and_resume_restarts_it(stores: Reopen) -> None:
    store = stores()
    daily = await store.add(task("telegram:1", NOW, recurring=True), max_per_chat=5)
    once = await store.add(task("telegram:1", NOW, text="once"), max_per_chat=5)
    for _ in range(3):
        after = await store.record_run(daily.id, False, pause_after=3)
        await store.record_run(once.id, False, pause_after=3)
    assert after is not None and after.paused and after.failures == 3
    assert not (await store.get(once.id)).paused  # type: ignore[union-attr]
    assert [t.text for t in await store.due("telegram", NOW + 10, 10)] == ["once"]
    resumed = await stores().resume("telegram:1", daily.number, NOW + 10)
    assert resumed is not None and not resumed.paused and resumed.next_due == NOW + 3600
    assert resumed.failures == 0


async def test_erase_and_a_chat_moved_to_a_new_id(stores: Reopen) -> None:
    store = stores()
    await store.add(task("telegram:-5", NOW, text="a"), max_per_chat=5)
    await store.add(task("telegram:-5", NOW + 5, text="b"), max_per_chat=5)
    await store.add(task("telegram:-50:7", NOW, text="topic"), max_per_chat=5)
    assert await store.move_chat("telegram:-5", "-1005") == 2
    moved = await stores().tasks("telegram:-1005")
    assert [(t.number, t.text, t.chat.chat_id) for t in moved] == [
        (1, "a", "-1005"),
        (2, "b", "-1005"),
    ]
    assert await stores().tasks("telegram:-5") == []
    assert await store.erase(lambda key: key.startswith("telegram:-50")) == 1
    assert await stores().tasks("telegram:-50:7") == []
    assert len(await stores().tasks("telegram:-1005")) == 2


async def test_an_unreadable_task_file_is_set_aside_and_the_others_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "schedule"
    await FileTaskStore(folder).add(task("telegram:1", NOW, text="kept"), max_per_chat=5)
    (folder / "telegram:2.json").write_text('{"chat": "telegram:2", "tasks": [{"id": ')
    store = FileTaskStore(folder)
    assert [t.text for t in await store.tasks("telegram:1")] == ["kept"]
    assert (folder / "telegram:2.json.corrupt").exists()
    assert "telegram:2.json cannot be read" in caplog.text
    # What was set aside is the chat's too: erasing the chat removes it.
    assert await store.erase(lambda key: key == "telegram:2") == 0
    assert not (folder / "telegram:2.json.corrupt").exists()
