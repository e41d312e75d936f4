"""Replicas on one Redis when things fail: a replica killed with SIGKILL mid-turn, the polling
leader killed, Redis itself gone for a moment. Nothing Telegram saw acknowledged is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    delay,
    echo_responder,
    gated,
    reply,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.redis_server import free_port, running_redis
from tests.conftest import write_runtime_config
from tests.replicas_harness import (
    FAST_LEASES,
    LEADING,
    SECRET,
    SECRET_HEADER,
    Replica,
    messages_answered,
    polls_now,
    post_until_taken,
    redis_url,
    repeated_answers,
    spawn_replica,
    start_replica,
    stop_all,
    texts_sent,
    wait_until,
)
from tests.telegram_harness import telegram

__all__ = ["redis_url", "telegram"]  # fixtures used by name below


@pytest.mark.slow
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
        caplog.set_level(logging.INFO, logger="mnemobot.bot.channels.telegram.sources")
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
        # "before" may be answered again with it, in one reply, if the kill fell between
        # its answer and its mark.
        while "after" not in messages_answered(telegram, 7300):
            assert time.monotonic() - killed_at < 30, "no standby took over within 30 s"
            await asyncio.sleep(0.05)
        took = time.monotonic() - killed_at
    finally:
        await asyncio.to_thread(stop_all, [leader])
        if standby is not None:
            await standby.shutdown()

    assert messages_answered(telegram, 7300) == ["before", "after"]
    # The kill may fall between a reply's send and its mark: one duplicate at most.
    assert repeated_answers(telegram, 7300) <= 1
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


@pytest.mark.slow
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
                {f"c{chat} m{n}" for n in range(per_chat)} <= set(messages_answered(telegram, chat))
                for chat in chats
            )

        await asyncio.to_thread(wait_until, all_answered, 40, "every message answered")
    finally:
        await asyncio.to_thread(stop_all, replicas)

    for chat in chats:
        replies = texts_sent(telegram, chat)
        expected = [f"c{chat} m{n}" for n in range(per_chat)]
        assert all(reply.startswith("echo: ") for reply in replies), replies
        assert messages_answered(telegram, chat) == expected, f"chat {chat}: out of order"
        # One crash: at most one duplicate per chat (a reply sent, not yet marked).
        assert repeated_answers(telegram, chat) <= 1, f"chat {chat}: {replies}"
    for replica in replicas[1:]:
        assert "Traceback" not in replica.log_text()
