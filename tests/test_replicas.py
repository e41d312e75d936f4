"""Replicas on one Redis: every message answered once, in order per chat, whoever takes it.

Real redis-server processes (tests/redis_server.py), the fake Bot API and fake LLM over HTTP,
the real `serve_telegram` of each replica.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bot.app import App
from bot.telegram.replicas import Replicas, build_replica_app, open_replicas
from bot.telegram.run import serve_telegram
from memory.atomic_file import read_jsonl
from tests.conftest import make_settings, write_runtime_config
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import TelegramServer
from tests.redis_server import free_port, running_redis
from tests.telegram_harness import telegram

__all__ = ["telegram"]  # fixture used by name below

SECRET = "replica-secret_1"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Short leases and sweeps, so a test sees a takeover in a second or two.
FAST_LEASES = {"telegram": {"leaseSeconds": 2, "pollerLeaseSeconds": 2, "sweepSeconds": 0.2}}


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with running_redis(tmp_path / "redis") as url:
        yield url


@dataclass
class Replica:
    app: App
    replicas: Replicas
    stop: asyncio.Event
    task: asyncio.Task[None]
    url: str

    async def shutdown(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 15)
        await self.app.close()
        await self.replicas.close()


async def start_replica(
    name: str,
    workspace: Path,
    redis_url: str,
    telegram: TelegramServer,
    llm: FakeOpenAIServer,
) -> Replica:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    settings = make_settings(
        workspace,
        llm,
        telegram_bot_token=telegram.token,
        telegram_api_base_url=telegram.base_url,
        telegram_allowed_users="*",
        bot_webhook_url=url,
        bot_webhook_secret=SECRET,
        bot_webhook_listen=f"127.0.0.1:{port}",
        bot_redis_url=redis_url,
        bot_replica_id=name,
    )
    replicas = open_replicas(redis_url)
    app = build_replica_app(settings, replicas)
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        serve_telegram(
            app,
            settings,
            stop=stop,
            webhook=True,
            grace_seconds=2,
            on_ready=ready.set,
            replicas=replicas,
        )
    )
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        await task
    assert ready.is_set(), f"replica {name} did not start within 10 s"
    return Replica(app, replicas, stop, task, url)


@pytest.fixture
async def two_replicas(
    workspace: Path, redis_url: str, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> AsyncIterator[list[Replica]]:
    write_runtime_config(workspace, FAST_LEASES)
    started = [
        await start_replica(name, workspace, redis_url, telegram, openai_server)
        for name in ("a", "b")
    ]
    yield started
    for replica in started:
        if not replica.task.done():
            await replica.shutdown()


async def post_until_taken(
    client: httpx.AsyncClient, urls: Iterator[str], update: dict[str, object]
) -> None:
    """POST like Telegram: the same update again (to the next replica) until a 200."""
    for _ in range(50):
        try:
            response = await client.post(next(urls), json=update, headers={SECRET_HEADER: SECRET})
            if response.status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"update {update['update_id']} was never taken")


async def test_two_replicas_answer_every_message_once_in_order(
    two_replicas: list[Replica], telegram: TelegramServer
) -> None:
    chats = [7100 + n for n in range(6)]
    per_chat = 5
    urls = itertools.cycle([replica.url for replica in two_replicas])
    updates = {
        chat: [telegram.build_update(f"c{chat} m{n}", chat_id=chat) for n in range(per_chat)]
        for chat in chats
    }

    async def chat_sender(client: httpx.AsyncClient, chat: int) -> None:
        for update in updates[chat]:
            await post_until_taken(client, urls, update)
            # Telegram retries an update it did not see answered: a duplicate now and then.
            if update["update_id"] % 3 == 0:
                await post_until_taken(client, urls, update)

    async with httpx.AsyncClient(timeout=10) as client:
        await asyncio.gather(*(chat_sender(client, chat) for chat in chats))

    for chat in chats:
        sent = await telegram.wait_for_messages_async(chat, per_chat, timeout=20)
        assert [m["plain_text"] for m in sent] == [f"echo: c{chat} m{n}" for n in range(per_chat)]
    await asyncio.sleep(0.3)
    for chat in chats:
        assert len(telegram.sent_messages(chat)) == per_chat, f"chat {chat}: a duplicate reply"
    # Both replicas answered: the chats' leases were spread between them.
    delivery = two_replicas[0].app.paths.delivery
    for name in ("a", "b"):
        replies = read_jsonl(delivery / f"telegram-outbox-{name}.jsonl").records
        assert any(r["op"] == "add" for r in replies), f"replica {name} answered nothing"
