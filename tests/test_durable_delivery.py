"""Nothing Telegram handed us is lost or answered twice: bad updates, outages, restarts."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    echo_responder,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.redis_server import free_port
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4242
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.02)


async def test_a_malformed_update_costs_one_log_line_and_nothing_else(
    start_bot: StartBot, telegram: TelegramServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    await start_bot()
    telegram.push_update({"message": "not an object"})
    telegram.push_update({"message": {"message_id": 1, "date": "soon", "chat": {"id": 5}}})
    telegram.send_text("still there?", chat_id=USER)
    [answer] = await telegram.wait_for_messages_async(USER, 1)
    assert answer["plain_text"] == "echo: still there?"
    skipped = [r for r in caplog.records if "skipping update" in r.getMessage()]
    assert len(skipped) == 2
    assert all(r.exc_info is None for r in skipped)


async def test_a_reply_that_could_not_be_delivered_goes_out_after_a_restart(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # The model answers only once Telegram is down, so the reply cannot slip out before.
    telegram_down = threading.Event()

    def answer_once_telegram_is_down(request: dict[str, object]) -> Step:
        assert telegram_down.wait(10)
        return echo_responder(request)

    openai_server.responder = answer_once_telegram_is_down
    bot = await start_bot()
    telegram.send_text("are you there?", chat_id=USER)
    await asyncio.to_thread(openai_server.wait_for_requests, 1, 10)
    telegram.set_unreachable(True, status=502)
    telegram_down.set()

    def refused_sends() -> int:
        return sum(call["status"] == 502 for call in telegram.calls("sendMessage"))

    # The bot tried to deliver the reply and Telegram refused it.
    await asyncio.to_thread(wait_until, lambda: refused_sends() >= 1, 15, "a refused send")
    await bot.shutdown()
    assert telegram.sent_messages(USER) == []
    telegram.set_unreachable(False)
    await start_bot()
    [answer] = await telegram.wait_for_messages_async(USER, 1, timeout=15)
    assert answer["plain_text"] == "echo: are you there?"
    assert len(openai_server.requests) == 1  # answered once, delivered later


async def test_a_webhook_retry_after_a_restart_is_not_answered_twice(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    options = {
        "webhook": True,
        "bot_webhook_url": url,
        "bot_webhook_secret": "right-secret",
        "bot_webhook_listen": f"127.0.0.1:{port}",
    }
    update = telegram.build_update("only once, please", chat_id=USER)
    headers = {SECRET_HEADER: "right-secret"}
    bot = await start_bot(**options)
    async with httpx.AsyncClient(timeout=10) as client:
        assert (await client.post(url, json=update, headers=headers)).status_code == 200
        await telegram.wait_for_messages_async(USER, 1)
        await bot.shutdown()
        await start_bot(**options)
        # Telegram did not see our 200 in time and sends it again, to the new process.
        assert (await client.post(url, json=update, headers=headers)).status_code == 200
        later = telegram.build_update("and a new one", chat_id=USER)
        assert (await client.post(url, json=later, headers=headers)).status_code == 200
    sent = await telegram.wait_for_messages_async(USER, 2)
    assert [m["plain_text"] for m in sent] == ["echo: only once, please", "echo: and a new one"]
    assert [user_texts(r)[-1] for r in openai_server.requests] == [
        "only once, please",
        "and a new one",
    ]


async def test_a_workspace_moved_to_another_bot_answers_that_bots_first_messages(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    bot = await start_bot()
    first = telegram.send_text("hello, first bot", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    await bot.shutdown()
    # The same workspace, another token: that bot numbers its updates from its own start,
    # and its first one (from someone else) has the id the first bot's first one had.
    with TelegramServer(token="654321:OTHER-TOKEN") as other:
        bot = await start_bot(server=other)
        try:
            said = other.send_text("hello, second bot", chat_id=USER + 1)
            assert said["update_id"] == first["update_id"]
            [answer] = await other.wait_for_messages_async(USER + 1, 1, timeout=15)
            assert answer["plain_text"] == "echo: hello, second bot"
        finally:
            await bot.shutdown()


async def test_update_ids_kept_before_they_named_their_bot_are_recognised_after_an_upgrade(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    """An inbox an earlier version wrote (ids by update id alone) belongs to the bot that
    upgrades: the last batch, which Telegram sends again after a restart, is not answered
    twice, and what waited is answered once."""
    answered = telegram.build_update("answered before the upgrade", chat_id=USER)
    waiting = telegram.build_update("kept, not yet answered", chat_id=USER)
    key = f"telegram:{USER}"
    records = [
        {"op": "add", "id": f"u:{answered['update_id']}", "key": key, "at": 1.0, "data": answered},
        {"op": "done", "id": f"u:{answered['update_id']}"},
        {"op": "add", "id": f"u:{waiting['update_id']}", "key": key, "at": 2.0, "data": waiting},
    ]
    inbox = workspace / "delivery" / "telegram-inbox.jsonl"
    inbox.parent.mkdir(parents=True)
    inbox.write_text("".join(json.dumps(record) + "\n" for record in records))
    await start_bot()
    telegram.push_update(answered)
    telegram.push_update(waiting)
    telegram.send_text("and a new one", chat_id=USER)
    sent = await telegram.wait_for_messages_async(USER, 2, timeout=15)
    assert [m["plain_text"] for m in sent] == [
        "echo: kept, not yet answered",
        "echo: and a new one",
    ]
    assert [user_texts(r)[-1] for r in openai_server.requests] == [
        "kept, not yet answered",
        "and a new one",
    ]
    assert len(telegram.sent_messages(USER)) == 2


async def test_start_up_waits_for_an_unreachable_bot_api_and_says_so(
    start_bot: StartBot, telegram: TelegramServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    telegram.set_unreachable(True, status=502)

    async def come_back() -> None:
        # Back once start-up has been refused (and so has to wait and try again).
        while not any(call["status"] == 502 for call in telegram.calls("getMe")):
            await asyncio.sleep(0.02)
        telegram.set_unreachable(False)

    returning = asyncio.create_task(come_back())
    await start_bot()
    await returning
    waits = [r for r in caplog.records if "waiting for the Telegram Bot API" in r.getMessage()]
    assert waits, "start-up must say what it is waiting for"
    telegram.send_text("hello after the outage", chat_id=USER)
    [answer] = await telegram.wait_for_messages_async(USER, 1)
    assert answer["plain_text"] == "echo: hello after the outage"


async def test_export_sends_the_chats_memory_as_a_document(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    import io
    import zipfile

    await start_bot()
    telegram.send_text("my bike is a green Gazelle", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    telegram.send_text("/export", chat_id=USER)
    deadline = asyncio.get_running_loop().time() + 10
    while not telegram.documents(USER) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    [document] = telegram.documents(USER)
    assert document["filename"].endswith(".zip") and "memory of this chat" in document["caption"]
    with zipfile.ZipFile(io.BytesIO(document["data"])) as bundle:
        text = b"".join(bundle.read(name) for name in bundle.namelist())
    assert b"green Gazelle" in text
