"""Replicas on one Redis: every message answered once, in order per chat, whoever takes it.

Real redis-server processes (tests/redis_server.py), the fake Bot API and fake LLM over HTTP,
the real `serve_telegram` of each replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

from bot.app import App
from bot.delivery.redis_coordination import LeaseLost
from bot.doctor import check_redis
from bot.startup import secrets_of
from bot.telegram.replicas import LeasedSessions, Replicas, build_replica_app, open_replicas
from bot.telegram.run import WebhookSettingsError, serve_telegram, webhook_plan
from config.runtime import MemoryConfig
from config.settings import SettingsError, load_settings
from config.workspace import WorkspacePaths
from memory.atomic_file import read_jsonl
from memory.redis_sessions import RedisSessionStore
from memory.service import MemoryService
from tests.conftest import make_settings, subprocess_env, write_runtime_config
from tests.fakes.openai_server import FakeOpenAIServer, delay, echo_responder, gated, reply
from tests.fakes.telegram_server import TelegramServer
from tests.redis_server import free_port, running_redis
from tests.telegram_harness import telegram
from tests.test_memory_e2e import memory_section

__all__ = ["telegram"]  # fixture used by name below

SECRET = "replica-secret_1"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Short leases and sweeps, so a test sees a takeover in a second or two.
FAST_LEASES = {"telegram": {"leaseSeconds": 3, "pollerLeaseSeconds": 3, "sweepSeconds": 0.2}}
LEADING = "this replica polls Telegram now"


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
    *,
    webhook: bool = True,
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
            webhook=webhook,
            poll_timeout_seconds=1,
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
    # Nothing is left waiting, and every lease was let go once its chat was quiet.
    coordination = two_replicas[0].replicas.coordination
    assert await coordination.keys_with_pending() == []
    assert [await coordination.holder(f"telegram:{chat}") for chat in chats] == [None] * len(chats)
    # Both replicas answered: the chats' leases were spread between them.
    delivery = two_replicas[0].app.paths.delivery
    for name in ("a", "b"):
        replies = read_jsonl(delivery / f"telegram-outbox-{name}.jsonl").records
        assert any(r["op"] == "add" for r in replies), f"replica {name} answered nothing"


# -- replicas as `mnemobot run` processes ------------------------------------------------------


@dataclass
class ReplicaProcess:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    url: str | None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def spawn_replica(
    name: str,
    workspace: Path,
    redis_url: str,
    telegram: TelegramServer,
    llm: FakeOpenAIServer,
    *,
    webhook: bool,
) -> ReplicaProcess:
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=llm.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS="*",
        BOT_REDIS_URL=redis_url,
        BOT_REPLICA_ID=name,
        BOT_LOG_LEVEL="INFO",
    )
    url = None
    if webhook:
        port = free_port()
        url = f"http://127.0.0.1:{port}/hook"
        env.update(
            BOT_WEBHOOK_URL=url, BOT_WEBHOOK_SECRET=SECRET, BOT_WEBHOOK_LISTEN=f"127.0.0.1:{port}"
        )
    log = workspace.parent / f"replica-{name}.log"
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", *(["--webhook"] if webhook else [])],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
            cwd=workspace.parent,
        )
    return ReplicaProcess(name, process, log, url)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def stop_all(replicas: list[ReplicaProcess]) -> None:
    for replica in replicas:
        if replica.process.poll() is None:
            replica.process.send_signal(signal.SIGTERM)
    for replica in replicas:
        try:
            replica.process.wait(20)
        except subprocess.TimeoutExpired:
            replica.process.kill()
            replica.process.wait()


def texts_sent(telegram: TelegramServer, chat: int) -> list[str]:
    return [m["plain_text"] for m in telegram.sent_messages(chat)]


def polls_now(replica: ReplicaProcess) -> bool | None:
    """Whether the replica's log last said it polls (True) or stands by; None before either."""
    text = replica.log_text()
    leading = text.rfind(LEADING)
    standing = text.rfind("standing by")
    if leading < 0 and standing < 0:
        return None
    return leading > standing


async def test_a_standby_polls_within_seconds_of_the_leaders_death(
    workspace: Path,
    redis_url: str,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_runtime_config(workspace, FAST_LEASES)
    leader = spawn_replica("p1", workspace, redis_url, telegram, openai_server, webhook=False)
    standby: Replica | None = None
    try:
        await asyncio.to_thread(wait_until, lambda: bool(polls_now(leader)), 60, "p1 to poll")
        caplog.set_level(logging.INFO, logger="bot.telegram.replicas")
        standby = await start_replica(
            "p2", workspace, redis_url, telegram, openai_server, webhook=False
        )
        telegram.send_text("before", chat_id=7300)
        await telegram.wait_for_messages_async(7300, 1, timeout=15)
        assert "another replica polls Telegram; standing by" in caplog.messages

        leader.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(leader.process.wait)
        killed_at = time.monotonic()
        telegram.send_text("after", chat_id=7300)
        while "echo: after" not in texts_sent(telegram, 7300):
            assert time.monotonic() - killed_at < 30, "no standby took over within 30 s"
            await asyncio.sleep(0.05)
        took = time.monotonic() - killed_at
    finally:
        await asyncio.to_thread(stop_all, [leader])
        if standby is not None:
            await standby.shutdown()

    replies = texts_sent(telegram, 7300)
    assert list(dict.fromkeys(replies)) == ["echo: before", "echo: after"]
    # The kill may fall between a reply's send and its mark: one duplicate at most.
    assert len(replies) <= 3
    assert LEADING + " (poller lease taken)" in caplog.messages
    # The lease is 3 s here (15 s by default): the standby took over well within 30 s.
    assert took < 10, took


async def test_redis_down_mid_turn_loses_nothing_and_says_so_once(
    workspace: Path,
    tmp_path: Path,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_runtime_config(workspace, FAST_LEASES)
    port, folder = free_port(), tmp_path / "redis-data"
    redis = contextlib.ExitStack()
    url = redis.enter_context(running_redis(folder, port=port))
    replica = await start_replica("solo", workspace, url, telegram, openai_server)
    release = threading.Event()
    openai_server.script(gated(release, reply("first answer")))
    chat = 7400
    first = telegram.build_update("first", chat_id=chat)
    second = telegram.build_update("second", chat_id=chat)
    urls = itertools.cycle([replica.url])
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            await post_until_taken(client, urls, first)
            await openai_server.wait_for_requests_async(1, timeout=10)
            # Redis goes away while the first turn waits on the model.
            await asyncio.to_thread(redis.close)
            release.set()
            refused = await client.post(replica.url, json=second, headers={SECRET_HEADER: SECRET})
            assert refused.status_code == 500  # not kept: Telegram keeps it and retries
            retrying = asyncio.create_task(post_until_taken(client, urls, second))
            await asyncio.sleep(1)
            await asyncio.to_thread(redis.enter_context, running_redis(folder, port=port))
            await retrying
            sent = await telegram.wait_for_messages_async(chat, 2, timeout=20)
    finally:
        release.set()
        await replica.shutdown()
        redis.close()

    assert [m["plain_text"] for m in sent] == ["first answer", "echo: second"]
    lines = [r.getMessage() for r in caplog.records]
    assert len([line for line in lines if line.startswith("Redis unreachable")]) == 1, lines
    assert "Redis reachable again" in lines


async def test_sigkill_of_a_replica_mid_turn_loses_no_message(
    workspace: Path, redis_url: str, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, FAST_LEASES)
    # Turns take a moment, so the kill lands while some are waiting on the model.
    openai_server.responder = lambda body: delay(0.15, echo_responder(body))
    names = ("w1", "w2", "w3")
    replicas = [
        spawn_replica(name, workspace, redis_url, telegram, openai_server, webhook=True)
        for name in names
    ]
    listening = "listening for Telegram webhooks"
    chats = [7500 + n for n in range(6)]
    per_chat = 6
    updates = {
        chat: [telegram.build_update(f"c{chat} m{n}", chat_id=chat) for n in range(per_chat)]
        for chat in chats
    }
    try:
        await asyncio.to_thread(
            wait_until,
            lambda: all(listening in r.log_text() for r in replicas),
            60,
            "three replicas to listen",
        )
        urls = itertools.cycle([r.url for r in replicas if r.url])
        async with httpx.AsyncClient(timeout=10) as client:

            async def chat_sender(chat: int) -> None:
                for update in updates[chat]:
                    await post_until_taken(client, urls, update)
                    await asyncio.sleep(0.05)

            senders = asyncio.gather(*(chat_sender(chat) for chat in chats))
            await openai_server.wait_for_requests_async(8, timeout=20)
            victim = replicas[0]
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait()
            # Back with the same name: it delivers what its outbox still held.
            replicas.append(
                spawn_replica("w1", workspace, redis_url, telegram, openai_server, webhook=True)
            )
            await senders

        def all_answered() -> bool:
            return all(
                {f"echo: c{chat} m{n}" for n in range(per_chat)} <= set(texts_sent(telegram, chat))
                for chat in chats
            )

        await asyncio.to_thread(wait_until, all_answered, 40, "every message answered")
    finally:
        await asyncio.to_thread(stop_all, replicas)

    for chat in chats:
        replies = texts_sent(telegram, chat)
        expected = [f"echo: c{chat} m{n}" for n in range(per_chat)]
        assert list(dict.fromkeys(replies)) == expected, f"chat {chat}: out of order"
        # One crash: at most one duplicate per chat (a reply sent, not yet marked).
        assert len(replies) - per_chat <= 1, f"chat {chat}: {replies}"
    for replica in replicas[1:]:
        assert "Traceback" not in replica.log_text()


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
            [sys.executable, "-m", "bot", "run"],
            capture_output=True,
            text=True,
            env=env,
            cwd=workspace.parent,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "another `mnemobot run` is serving workspace" in line and "BOT_REDIS_URL" in line
    assert not telegram.calls("getUpdates")

    # With Redis, replicas share the workspace, but two of one name would share an outbox.
    env.update(BOT_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", BOT_REPLICA_ID="twin")
    (workspace / "delivery").mkdir(exist_ok=True)
    with FileLock(workspace / "delivery" / ".replica-twin.lock").acquire(timeout=1):
        twin = subprocess.run(
            [sys.executable, "-m", "bot", "run"],
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
    await say(b, "what is my favourite colour?", 3)

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
    writer = MemoryService(workspace)
    reader = MemoryService(workspace, shared_files=shared)
    scope = "telegram:7700"
    assert sum(reader.layer_counts(scope).values()) == 0  # loaded, and cached
    writer.record_turn(
        scope=scope,
        user_text="My favourite colour is teal",
        assistant_text="Noted.",
        at=time.time(),
        config=MemoryConfig(),
        tz=UTC,
    )
    seen = sum(reader.layer_counts(scope).values())
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
