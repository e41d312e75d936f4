"""Session saves off the event loop: on disk when awaited, newest state wins, loop stays free."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mnemobot.conversation.session import SessionStore


def on_disk(directory: Path, key: str) -> list[dict[str, object]]:
    return json.loads((directory / f"{key}.json").read_text())["messages"]


async def test_an_awaited_save_is_on_disk(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.get("telegram:1")
    session.messages.append({"role": "user", "content": "keep this"})
    await store.save_async(session)
    assert on_disk(tmp_path, "telegram:1") == [{"role": "user", "content": "keep this"}]
    assert SessionStore(tmp_path).get("telegram:1").messages == session.messages


async def test_saves_started_together_leave_the_newest_state(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.get("telegram:2")
    saves = []
    for number in range(30):
        session.messages.append({"role": "user", "content": f"message {number}"})
        # Each save snapshots the session as it is now; the threads may finish in any order.
        saves.append(asyncio.create_task(store.save_async(session)))
    await asyncio.gather(*saves)
    assert [m["content"] for m in on_disk(tmp_path, "telegram:2")] == [
        f"message {n}" for n in range(30)
    ]


async def test_a_cancelled_save_still_reaches_the_disk(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.get("telegram:3")
    session.messages.append({"role": "user", "content": "do not lose me"})
    task = asyncio.create_task(store.save_async(session))
    await asyncio.sleep(0)
    task.cancel()
    # The write itself is shielded; give the worker thread a moment to finish it.
    for _ in range(200):
        if (tmp_path / "telegram:3.json").exists():
            break
        await asyncio.sleep(0.01)
    assert on_disk(tmp_path, "telegram:3") == [{"role": "user", "content": "do not lose me"}]


async def test_a_sync_save_after_an_async_one_is_not_overwritten(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.get("telegram:4")
    session.messages.append({"role": "user", "content": "first"})
    pending = asyncio.create_task(store.save_async(session))
    session.messages.append({"role": "assistant", "content": "second"})
    store.save(session)
    await pending
    assert [m["content"] for m in on_disk(tmp_path, "telegram:4")] == ["first", "second"]
