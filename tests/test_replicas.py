"""Replicas on one Redis: every message answered once, in order per chat, whoever takes it;
sessions fenced by the chat's lease, memory shared through the workspace, settings checked.

Real redis-server processes (tests/redis_server.py), the fake Bot API and fake LLM over HTTP,
the real `serve_telegram` of each replica.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from datetime import UTC
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

from mnemobot.base.atomic_file import read_jsonl
from mnemobot.bot.channels.telegram.sources import WebhookSettingsError, webhook_plan
from mnemobot.bot.cli.doctor import check_redis
from mnemobot.bot.cli.startup import secrets_of
from mnemobot.bot.delivery.redis_coordination import LeaseLost
from mnemobot.bot.delivery.replicas import LeasedSessions, open_replicas
from mnemobot.config.runtime import MemoryConfig
from mnemobot.config.settings import SettingsError, load_settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.redis_sessions import RedisSessionStore
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.redis_server import free_port
from tests.conftest import make_settings, subprocess_env
from tests.replicas_harness import (
    Replica,
    messages_answered,
    post_until_taken,
    redis_url,
    repeated_answers,
    two_replicas,
    wait_until_settled,
)
from tests.telegram_harness import telegram
from tests.test_memory_e2e import memory_section

__all__ = ["redis_url", "telegram", "two_replicas"]  # fixtures used by name below


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

    # Messages of a chat that waited together are answered in one turn ("echo: m1\n\nm2").
    for chat in chats:
        expected = [f"c{chat} m{n}" for n in range(per_chat)]
        deadline = asyncio.get_running_loop().time() + 20
        while asyncio.get_running_loop().time() < deadline:
            if all(t in messages_answered(telegram, chat) for t in expected):
                break
            await asyncio.sleep(0.05)
        assert messages_answered(telegram, chat) == expected
    # Then the work ends: nothing waits in Redis, every lease was let go once its chat was
    # quiet, and no reply waits in an outbox; a duplicate could only have been sent by now.
    await wait_until_settled(two_replicas, [f"telegram:{chat}" for chat in chats])
    for chat in chats:
        assert repeated_answers(telegram, chat) == 0, f"chat {chat}: a duplicate reply"
    # Both replicas answered: the chats' leases were spread between them.
    delivery = two_replicas[0].app.paths.delivery
    for name in ("a", "b"):
        replies = read_jsonl(delivery / f"telegram-outbox-{name}.jsonl").records
        assert any(r["op"] == "add" for r in replies), f"replica {name} answered nothing"


async def test_doctor_checks_redis_and_never_shows_its_password(
    workspace: Path, redis_url: str
) -> None:
    lines: list[str] = []
    healthy = await check_redis(make_settings(workspace, bot_redis_url=redis_url), lines.append)
    assert healthy.line().startswith("ok   redis: 127.0.0.1:")
    assert "appendonly yes" in healthy.line()
    assert lines[0].startswith("...  redis: connecting to 127.0.0.1:")

    dead = f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0"
    failed = await check_redis(make_settings(workspace, bot_redis_url=dead), lines.append)
    assert failed.status == "fail"
    assert "does not answer" in failed.line() and "BOT_REDIS_URL" in failed.line()
    assert "hunter2" not in failed.line() + "".join(lines)


@pytest.mark.slow
def test_a_second_run_on_one_workspace_is_refused_without_redis(
    workspace: Path, telegram: TelegramServer
) -> None:
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
    )
    workspace_lock = FileLock(WorkspacePaths(workspace).run_lock)
    with workspace_lock.acquire(timeout=1):  # as a running `mnemobot run` holds it
        result = subprocess.run(
            [sys.executable, "-m", "mnemobot", "run"],
            capture_output=True,
            text=True,
            env=env,
            cwd=workspace.parent,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2
    # (The lock file this test made is 0644, so the start also logs making it private.)
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("mnemobot:")]
    assert "another `mnemobot run` is serving workspace" in line and "BOT_REDIS_URL" in line
    assert not telegram.calls("getUpdates")

    # With Redis, replicas share the workspace, but two of one name would share an outbox.
    env.update(BOT_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", BOT_REPLICA_ID="twin")
    (workspace / "delivery").mkdir(exist_ok=True)
    with FileLock(workspace / "delivery" / ".replica-twin.lock").acquire(timeout=1):
        twin = subprocess.run(
            [sys.executable, "-m", "mnemobot", "run"],
            capture_output=True,
            text=True,
            env=env,
            cwd=workspace.parent,
            timeout=60,
            check=False,
        )
    assert twin.returncode == 2
    assert twin.stderr.strip() == (
        f"mnemobot: a replica named twin is already serving workspace {workspace}; "
        "give each replica its own BOT_REPLICA_ID"
    )


async def test_a_turn_on_one_replica_sees_what_another_just_remembered(
    two_replicas: list[Replica], telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    a, b = two_replicas
    chat = 7600
    coordination = a.replicas.coordination

    async def say(replica: Replica, text: str, answers: int) -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            update = telegram.build_update(text, chat_id=chat)
            await post_until_taken(client, itertools.cycle([replica.url]), update)
        await telegram.wait_for_messages_async(chat, answers, timeout=15)
        # The chat is quiet again: whoever takes the next message takes its lease.
        deadline = time.monotonic() + 10
        while await coordination.holder(f"telegram:{chat}") is not None:
            assert time.monotonic() < deadline, "the chat's lease was never let go"
            await asyncio.sleep(0.05)

    await say(b, "hello", 1)  # b loads the chat's (empty) memory
    await say(a, "My favourite colour is teal", 2)
    # /new: the conversation no longer carries it, so only memory can bring it back.
    await say(b, "/new", 3)
    await say(b, "what is my favourite colour?", 4)

    last = openai_server.last_request()
    assert "teal" in memory_section(last)
    delivery = b.app.paths.delivery
    answered_by_b = [
        r["data"].get("plain", "")
        for r in read_jsonl(delivery / "telegram-outbox-b.jsonl").records
        if r["op"] == "add"
    ]
    assert any("what is my favourite colour?" in text for text in answered_by_b)


@pytest.mark.parametrize("shared", [True, False])
def test_a_cached_memory_scope_is_read_again_once_another_process_wrote_it(
    workspace: Path, shared: bool
) -> None:
    writer = WorkspaceMemory.open(workspace)
    reader = WorkspaceMemory.open(workspace, shared_files=shared)
    scope = "telegram:7700"
    assert sum(reader.recall.layer_counts(scope).values()) == 0  # loaded, and cached
    writer.record.record_turn(
        scope=scope,
        user_text="My favourite colour is teal",
        assistant_text="Noted.",
        at=time.time(),
        config=MemoryConfig(),
        tz=UTC,
    )
    seen = sum(reader.recall.layer_counts(scope).values())
    # Without `shared_files` (one process per workspace) the cache is trusted as it is.
    assert (seen > 0) is shared
    writer.close()
    reader.close()


async def test_a_replica_that_lost_the_chat_cannot_overwrite_its_session(
    workspace: Path, redis_url: str
) -> None:
    old, new = open_replicas(redis_url), open_replicas(redis_url)
    stores = [RedisSessionStore(workspace / "sessions", LeasedSessions(r)) for r in (old, new)]
    key = "telegram:7800"
    lease = await old.coordination.acquire(key, ttl_ms=200)
    assert lease is not None
    old.leases.held[key] = lease
    async with stores[0].exclusive(key) as session:
        session.messages.append({"role": "user", "content": "first"})
        await stores[0].save_async(session)
    await asyncio.sleep(0.35)  # the old holder stalls past its lease
    taken = await new.coordination.acquire(key, ttl_ms=5_000)
    assert taken is not None
    new.leases.held[key] = taken
    async with stores[1].exclusive(key) as session:
        assert [m["content"] for m in session.messages] == ["first"]
        session.messages.append({"role": "user", "content": "second"})
        await stores[1].save_async(session)

    stale = stores[0].get(key)
    stale.messages.append({"role": "assistant", "content": "late answer"})
    with pytest.raises(LeaseLost):
        await stores[0].save_async(stale)
    async with stores[1].exclusive(key) as session:
        assert [m["content"] for m in session.messages] == ["first", "second"]
    await old.close()
    await new.close()


def test_bad_replica_settings_get_one_line_and_never_show_the_password(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.setenv("BOT_REDIS_URL", "http://:hunter2-secret@redis:6379")
    with pytest.raises(SettingsError) as bad_url:
        load_settings()
    assert str(bad_url.value).startswith("BOT_REDIS_URL is invalid: must start with redis://")
    assert "hunter2" not in str(bad_url.value)

    url = "redis://:hunter2-secret@redis:6379/0"
    settings = make_settings(
        workspace, bot_redis_url=url, bot_webhook_url="https://bot.example.com/telegram"
    )
    assert "hunter2" not in repr(settings)
    assert "hunter2-secret" in secrets_of(settings)  # redacted from every log line
    with pytest.raises(WebhookSettingsError, match="BOT_WEBHOOK_SECRET is not set: replicas"):
        webhook_plan(settings, replicas=True)
