"""Two replicas on one real Redis fire each scheduled task once, whichever sees it first."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
from redis.asyncio import Redis

from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.bot.schedule.redis_store import RedisTaskStore
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import write_runtime_config
from tests.replicas_harness import (
    FAST_LEASES,
    Replica,
    post_until_taken,
    redis_url,
    texts_sent,
    two_replicas,
)
from tests.telegram_harness import telegram

__all__ = ["redis_url", "telegram", "two_replicas"]  # fixtures used by name below

CHATS = [7300 + n for n in range(20)]


def reminder(chat: int, due: float) -> Task:
    return Task(
        id=uuid.uuid4().hex,
        number=0,
        chat=TaskChat("telegram", str(chat), user_id=str(chat)),
        kind="reminder",
        text=f"stand up {chat}",
        schedule=Schedule("once", at=due),
        zone="UTC",
        created_at=time.time(),
        next_due=due,
    )


async def test_two_replicas_fire_each_task_once(
    two_replicas: list[Replica],
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    redis_url: str,
    workspace: Path,
) -> None:
    # Each replica looks for tasks the other added every 0.2 s (`FAST_POLLS`).
    write_runtime_config(workspace, FAST_LEASES)
    openai_server.script(
        tool_call("schedule", {"when": "in 2 seconds", "text": "stand up"}),
        reply("Noted."),
    )
    first, *others = CHATS
    async with httpx.AsyncClient(timeout=10) as client:
        update = telegram.build_update("remind me in 2 s to stand up", chat_id=first)
        await post_until_taken(client, iter([two_replicas[0].url] * 50), update)
    await telegram.wait_for_messages_async(first, 1, timeout=10)
    # More due in the same instant, in chats of their own: both replicas see all of them.
    client = Redis.from_url(redis_url)
    store = RedisTaskStore(client)
    due = time.time() + 1.5
    for chat in others:
        await store.add(reminder(chat, due), max_per_chat=25)

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        fired = [c for c in CHATS if any("⏰" in t for t in texts_sent(telegram, c))]
        quiet = (await store.waiting()).count == 0 and not await client.smembers("mnemobot:chats")
        outboxes = sorted((workspace / "delivery").glob("telegram-outbox-*.jsonl"))
        delivered = all(not DurableQueue(p).pending() for p in outboxes)
        if len(fired) == len(CHATS) and quiet and delivered:
            break
        await asyncio.sleep(0.05)
    await client.aclose()
    for chat in CHATS:
        assert [t for t in texts_sent(telegram, chat) if "⏰" in t] == [
            "⏰ Reminder: stand up" if chat == first else f"⏰ Reminder: stand up {chat}"
        ], chat
    # Both replicas raced for them: more firings were handed over than there were tasks.
    handed = [r.app.schedule.scheduler.handed_over for r in two_replicas if r.app.schedule]
    print("handed over per replica:", handed)
    assert sum(handed) > len(CHATS) and min(handed) > 0
