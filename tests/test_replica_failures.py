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

from mnemobot.bot.channels.telegram.intake import bot_id_of, update_entry_id
from mnemobot.bot.delivery.journal import DurableQueue
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


# Crash points of a replica process, by its environment: with MARK_SECONDS, Redis is slow to
# take the mark that a message is answered (as under its fsync-always load: the crash bench
# saw up to 0.5 s on this machine); with DIE_AT_MARK, the replica is SIGKILLed as it is
# about to write that mark of this inbox entry; with DIE_AFTER_REPLY, the moment the Bot API
# accepted that text.
_CRASH_POINTS = """
import asyncio, os, signal
import redis.asyncio
import telegram.ext

_send = telegram.ext.ExtBot.send_message
_execute = redis.asyncio.Redis.execute_command

async def send_message(self, *args, **kwargs):
    sent = await _send(self, *args, **kwargs)
    text = kwargs["text"] if "text" in kwargs else args[1]
    if text == os.environ.get("DIE_AFTER_REPLY", object()):
        os.kill(os.getpid(), signal.SIGKILL)
    return sent

async def execute_command(self, *args, **options):
    keys = [str(a) for a in args[3 : 3 + int(args[2])]] if args[0] == "EVALSHA" else []
    if keys and ":lease:" in keys[0] and any(":pending:" in k for k in keys):
        if os.environ.get("DIE_AT_MARK") in [str(a) for a in args]:
            os.kill(os.getpid(), signal.SIGKILL)
        await asyncio.sleep(float(os.environ.get("MARK_SECONDS", "0")))
    return await _execute(self, *args, **options)

telegram.ext.ExtBot.send_message = send_message
redis.asyncio.Redis.execute_command = execute_command
"""


MESSAGES = ["m1", "m2", "m3", "m4", "m5"]


async def _one_replica_dies_mid_chat(
    workspace: Path,
    redis_url: str,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    chat: int,
    crash: dict[str, str],
    *,
    back_again: bool = False,
) -> None:
    """m1 and m2 go to a replica that dies at its `crash` point while answering m2, with
    m3 waiting behind it; m4 and m5 go to the survivor, which takes the chat over once the
    dead replica's lease runs out. Returns once nothing is left to answer or send (with
    `back_again`, after the dead replica came back under its name, as a supervisor starts
    it again, and went through what its outbox held).

    `{m2}` in the crash point's settings is m2's inbox id."""
    updates = {text: telegram.build_update(text, chat_id=chat) for text in MESSAGES}
    m2 = update_entry_id(bot_id_of(telegram.token), updates["m2"]["update_id"])
    crash = {name: value.replace("{m2}", m2) for name, value in crash.items()}
    victim = spawn_replica(
        "dies",
        workspace,
        redis_url,
        telegram,
        openai_server,
        webhook=True,
        prelude=_CRASH_POINTS,
        env_extra=crash,
    )
    survivor: Replica | None = None
    replicas = [victim]
    try:
        await asyncio.to_thread(
            wait_until,
            lambda: "listening for Telegram webhooks" in victim.log_text(),
            60,
            "the replica to listen",
        )
        survivor = await start_replica("lives", workspace, redis_url, telegram, openai_server)
        assert victim.url is not None
        async with httpx.AsyncClient(timeout=10) as client:
            to_victim = itertools.repeat(victim.url)
            await post_until_taken(client, to_victim, updates["m1"])
            await telegram.wait_for_messages_async(chat, 1, timeout=20)
            await post_until_taken(client, to_victim, updates["m2"])
            await openai_server.wait_for_requests_async(2, timeout=20)
            await post_until_taken(client, to_victim, updates["m3"])
            await asyncio.to_thread(victim.process.wait, 30)
            assert victim.process.returncode == -signal.SIGKILL
            to_survivor = itertools.repeat(survivor.url)
            for text in ("m4", "m5"):
                await post_until_taken(client, to_survivor, updates[text])

        coordination = survivor.replicas.coordination
        outbox = survivor.app.paths.delivery / "telegram-outbox-lives.jsonl"

        async def answered_and_quiet() -> bool:
            # Nothing waits in Redis or in the survivor's outbox: no reply can come any more.
            return (
                "m5" in messages_answered(telegram, chat)
                and not await coordination.keys_with_pending()
                and await coordination.holder(f"telegram:{chat}") is None
                and not DurableQueue(outbox).pending()
            )

        deadline = asyncio.get_running_loop().time() + 30
        while not await answered_and_quiet():
            assert asyncio.get_running_loop().time() < deadline, texts_sent(telegram, chat)
            await asyncio.sleep(0.05)
        if back_again:
            replicas.append(
                spawn_replica("dies", workspace, redis_url, telegram, openai_server, webhook=True)
            )
            its_outbox = outbox.with_name("telegram-outbox-dies.jsonl")
            assert DurableQueue(its_outbox).pending(), "nothing was left to send again"
            await asyncio.to_thread(
                wait_until,
                lambda: not DurableQueue(its_outbox).pending(),
                60,
                "the replica back again to go through its outbox",
            )
    finally:
        await asyncio.to_thread(stop_all, replicas)
        if survivor is not None:
            await survivor.shutdown()


@pytest.mark.slow
async def test_a_reply_delivered_just_before_its_replica_died_is_not_sent_again(
    workspace: Path, redis_url: str, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, FAST_LEASES)
    # Turns take a moment, so m3 arrives while m2 is answered.
    openai_server.responder = lambda body: delay(0.3, echo_responder(body))
    chat = 7600
    crash = {"DIE_AFTER_REPLY": "echo: m2", "MARK_SECONDS": "1"}
    await _one_replica_dies_mid_chat(workspace, redis_url, telegram, openai_server, chat, crash)

    replies = texts_sent(telegram, chat)
    assert replies.count("echo: m2") == 1, replies
    assert messages_answered(telegram, chat) == MESSAGES, replies
    assert repeated_answers(telegram, chat) == 0, replies


@pytest.mark.slow
async def test_the_survivor_finishes_the_preview_the_dead_replica_showed(
    workspace: Path, redis_url: str, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Replies show as they are written, by edits; the dead replica showed m2's.
    leases = FAST_LEASES["telegram"]
    write_runtime_config(workspace, {"telegram": {**leases, "streaming": "edit"}})
    openai_server.tokens_per_second = 6
    chat = 7601
    crash = {"DIE_AT_MARK": "{m2}"}
    await _one_replica_dies_mid_chat(workspace, redis_url, telegram, openai_server, chat, crash)

    replies = texts_sent(telegram, chat)
    # The preview became the survivor's answer: no second copy beside it, no half one left.
    assert messages_answered(telegram, chat) == MESSAGES, replies
    assert repeated_answers(telegram, chat) == 0, replies


@pytest.mark.slow
async def test_a_replica_back_again_does_not_send_what_another_answered_in_its_place(
    workspace: Path, redis_url: str, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, FAST_LEASES)
    openai_server.responder = lambda body: delay(0.3, echo_responder(body))
    chat = 7602
    # Dies with m2's answer in its outbox, not delivered: the survivor answers m2 instead.
    crash = {"DIE_AT_MARK": "{m2}"}
    await _one_replica_dies_mid_chat(
        workspace, redis_url, telegram, openai_server, chat, crash, back_again=True
    )

    replies = texts_sent(telegram, chat)
    assert messages_answered(telegram, chat) == MESSAGES, replies
    assert repeated_answers(telegram, chat) == 0, replies
