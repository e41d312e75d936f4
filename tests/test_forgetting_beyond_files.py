"""Forgetting reaches what holds a chat beyond its memory and session files: the delivery
journals (their entries keep their ids and state), and with replicas the sessions in Redis
(under the chat's lease, so a running turn cannot save the text back) and Redis's
append-only file.

Real files, a real redis-server (append-only), the fake Bot API and model over HTTP, the
real `serve_telegram`; the forget is the memory page's (`Corrections`).
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import threading
import time
from datetime import UTC
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis

from mnemobot.base.atomic_file import read_jsonl
from mnemobot.bot.app import App
from mnemobot.bot.cli.main import main
from mnemobot.bot.cli.web import host_of_app
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry, Redacted
from mnemobot.bot.web.corrections import Corrections
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.upkeep.forgetting import redact_value
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, gated, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import ask
from tests.crash_points import start_to_crash
from tests.replicas_harness import Replica, post_until_taken, redis_url, two_replicas
from tests.telegram_harness import StartBot, start_bot, telegram, until_nothing_pending
from tests.web_harness import bot, files_with

__all__ = ["bot", "redis_url", "start_bot", "telegram", "two_replicas"]  # fixtures used by name


def item_holding(app: App, scope: str, text: str) -> str:
    config = app.runtime.current()
    found = app.memory.recall.search(
        scope, text, config=config.memory, tz=config.assistant.tzinfo()
    )
    assert found, text
    return found[0][0].id


def page_of(app: App) -> Corrections:
    return Corrections(host_of_app(app, str), read_only=False)


def journal_shape(path: Path) -> list[tuple[str, str]]:
    """What makes a journal's entries answered once: each record's op and id, in order."""
    return [(str(r.get("op")), str(r.get("id"))) for r in read_jsonl(path).records]


async def test_a_forgotten_text_leaves_the_delivery_journals_and_their_entries_stay(
    start_bot: StartBot, telegram: TelegramServer, workspace: Path
) -> None:
    bot = await start_bot()
    chat, scope = 5101, "telegram:5101"
    telegram.send_text("My secret bank PIN is Kiwi-4471", chat_id=chat)
    await telegram.wait_for_messages_async(chat, 1, timeout=15)
    await until_nothing_pending(workspace)
    delivery = workspace / "delivery"
    journals = [delivery / "telegram-inbox.jsonl", delivery / "telegram-outbox.jsonl"]
    shapes = [journal_shape(path) for path in journals]
    assert all(b"Kiwi-4471" in path.read_bytes() for path in journals)

    forgotten = await page_of(bot.app).forget(scope, item_holding(bot.app, scope, "PIN"), "t")

    assert any("erase forgotten: erased" in line for line in forgotten.erasure), forgotten
    # (Not the bare number: a random hex id may hold it.)
    assert files_with(workspace, "Kiwi-4471") == []
    # Every entry is still there, done as it was: nothing is answered or sent again.
    assert [journal_shape(path) for path in journals] == shapes
    telegram.send_text("and now?", chat_id=chat)
    await telegram.wait_for_messages_async(chat, 2, timeout=15)
    await until_nothing_pending(workspace)
    assert [m["plain_text"] for m in telegram.sent_messages(chat)] == [
        "echo: My secret bank PIN is Kiwi-4471",
        "echo: and now?",
    ]


def test_a_redacted_journal_keeps_every_entry_live_or_done_and_its_ids(tmp_path: Path) -> None:
    path = tmp_path / "outbox.jsonl"
    queue = DurableQueue(path)
    said = [
        QueuedEntry(f"r{n}", key, {"text": text, "chat_id": 7}, float(n))
        for n, (key, text) in enumerate(
            [
                ("telegram:7", "your code is Zebra-4242, noted"),
                ("telegram:7", "Zebra-4242 again, not yet sent"),
                ("telegram:8", "another chat: Zebra-4242"),
                ("telegram:7", "nothing to forget"),
            ]
        )
    ]
    queue.add(said)
    queue.done(["r0", "r3"])
    shape = journal_shape(path)

    def redact(value: Any) -> tuple[Any, int]:
        return redact_value(value, ["zebra-4242"])

    redacted = queue.redact(lambda key: key == "telegram:7", redact)

    # The finished one is redacted; the live one is still owed its delivery, as written,
    # and counted, so the erasure comes back for it.
    assert (redacted.entries, redacted.live) == (1, 1)
    assert journal_shape(path) == shape
    again = DurableQueue(path)
    assert [(e.id, e.data["text"]) for e in again.pending()] == [
        ("r1", "Zebra-4242 again, not yet sent"),
        ("r2", "another chat: Zebra-4242"),
    ]
    assert again.seen("r0") and again.seen("r3")
    assert b"your code is" not in path.read_bytes()
    # Appends after the redaction land after it, whole; once delivered, it goes too.
    queue.done(["r1"])
    assert queue.redact(lambda key: key == "telegram:7", redact) == Redacted(1, 0)
    assert [e.id for e in DurableQueue(path).pending()] == ["r2"]
    assert path.read_bytes().count(b"Zebra") == 1  # the other chat's


async def say(replica: Replica, telegram: TelegramServer, chat: int, text: str) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        update = telegram.build_update(text, chat_id=chat)
        await post_until_taken(client, itertools.cycle([replica.url]), update)


async def answered(telegram: TelegramServer, replica: Replica, chat: int, count: int) -> None:
    """`count` replies are out and the chat is quiet (its lease let go)."""
    await telegram.wait_for_messages_async(chat, count, timeout=20)
    deadline = time.monotonic() + 15
    while await replica.replicas.coordination.holder(f"telegram:{chat}") is not None:
        assert time.monotonic() < deadline, "the chat's lease was never let go"
        await asyncio.sleep(0.05)


async def aof_rewritten(replica: Replica) -> None:
    deadline = time.monotonic() + 20
    while True:
        info = await replica.replicas.client.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        assert time.monotonic() < deadline, "Redis never finished rewriting its AOF"
        await asyncio.sleep(0.05)


def requests_holding(server: FakeOpenAIServer, text: str) -> int:
    return sum(text.lower() in orjson.dumps(r).decode().lower() for r in server.requests)


async def test_forgetting_on_one_replica_takes_the_text_out_of_the_session_in_redis(
    two_replicas: list[Replica],
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
) -> None:
    a, b = two_replicas
    chat, scope = 7700, "telegram:7700"
    await say(a, telegram, chat, "My safe combination is Mango-9090.")
    await answered(telegram, a, chat, 1)
    await say(a, telegram, chat, "Thanks, and what is the capital of Peru?")
    await answered(telegram, a, chat, 2)
    client = a.replicas.client
    assert b"Mango" in await client.get(f"mnemobot:session:{scope}")
    assert files_with(tmp_path / "redis", "Mango")  # its append-only file

    # Forgotten on the other replica, while `a` holds the chat's session in its cache.
    forgotten = await page_of(b.app).forget(scope, item_holding(b.app, scope, "Mango"), "t")

    assert b"Mango" not in await client.get(f"mnemobot:session:{scope}")
    assert any("Redis asked to rewrite" in line for line in forgotten.erasure), forgotten
    asked = len(openai_server.requests)
    await say(a, telegram, chat, "What's the combination?")
    await answered(telegram, a, chat, 3)
    assert requests_holding(openai_server, "Mango") > 0  # the first turns did carry it
    assert all(
        "mango" not in orjson.dumps(r).decode().lower() for r in openai_server.requests[asked:]
    )
    await say(a, telegram, chat, "/new")
    await answered(telegram, a, chat, 4)
    # Nothing of the chat's files holds it: `a`'s outbox was handed the texts by `b`.
    deadline = time.monotonic() + 10
    while files_with(workspace, "Mango"):
        assert time.monotonic() < deadline, files_with(workspace, "Mango")
        await asyncio.sleep(0.1)
    await aof_rewritten(a)
    assert files_with(tmp_path / "redis", "Mango") == []


async def test_a_turn_running_on_one_replica_cannot_save_a_text_forgotten_on_another(
    two_replicas: list[Replica],
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    a, b = two_replicas
    chat, scope = 7701, "telegram:7701"
    await say(a, telegram, chat, "My bike lock code is Lime-3131.")
    await answered(telegram, a, chat, 1)
    item = item_holding(b.app, scope, "Lime")
    go = threading.Event()
    openai_server.script(gated(go, reply("Noted, thanks.")))
    await say(a, telegram, chat, "Thanks!")
    deadline = time.monotonic() + 15
    while len(openai_server.requests) < 2:
        assert time.monotonic() < deadline, "the second turn never called the model"
        await asyncio.sleep(0.02)

    # `a`'s turn holds the chat, the first message in its session: `b` forgets meanwhile.
    page = page_of(b.app)
    page.erase_wait_seconds = 0.5
    forgetting = asyncio.create_task(page.forget(scope, item, "t"))
    forgotten = await forgetting
    assert "still erasing" in " ".join(forgotten.erasure)
    go.set()
    await answered(telegram, a, chat, 2)
    await page.settled()

    session = await a.replicas.client.get(f"mnemobot:session:{scope}")
    assert b"Lime" not in session and b"Noted, thanks." in session
    asked = len(openai_server.requests)
    await say(a, telegram, chat, "What was the code?")
    await answered(telegram, a, chat, 3)
    assert all(
        "lime" not in orjson.dumps(r).decode().lower() for r in openai_server.requests[asked:]
    )


async def forgotten_on_b_erasure_waiting(a: Replica, b: Replica, scope: str, text: str) -> None:
    """The item holding `text` forgotten on replica `b`: hidden at once, its erasure from
    every file left for later, so the session in Redis still quotes it."""
    item = item_holding(b.app, scope, text)
    await b.app.memory.scopes.run(
        scope, partial(b.app.memory.forget.forget_items, scope, item), write=True
    )
    assert text.encode() in await a.replicas.client.get(f"mnemobot:session:{scope}")


async def test_a_text_whose_erasure_still_waits_never_reaches_the_model_again(
    two_replicas: list[Replica],
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    """The erasure could not hold the chat (a replica kept it busy past the wait): its
    session in Redis still quotes the text until the next maintenance run, hours later.
    The turns meanwhile keep it out of what they send, the user's old words included."""
    a, b = two_replicas
    chat, scope = 7702, "telegram:7702"
    await say(a, telegram, chat, "My locker code is Plum-4242.")
    await answered(telegram, a, chat, 1)
    await forgotten_on_b_erasure_waiting(a, b, scope, "Plum")

    asked = len(openai_server.requests)
    await say(a, telegram, chat, "Which gym did I say I go to?")
    await answered(telegram, a, chat, 2)
    await say(a, telegram, chat, "Plum-4242 is my new code, keep it this time.")
    await answered(telegram, a, chat, 3)
    sent = [orjson.dumps(r).decode() for r in openai_server.requests[asked:]]
    assert len(sent) == 2
    assert "Plum-4242" not in sent[0]
    # Said again on purpose: the message being answered is read as written.
    assert "Plum-4242 is my new code" in sent[1]
    assert "My locker code" not in sent[1]
    assert b"My locker code" not in await a.replicas.client.get(f"mnemobot:session:{scope}")


async def test_a_text_whose_erasure_waits_is_kept_out_of_earlier_tool_calls_too(
    two_replicas: list[Replica],
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    """Found in a review: the turns kept a forgotten text out of the messages' words but
    not out of the arguments of the tool calls that held it (the memory tool's `add`), and
    the next request quoted the code again; the erasure itself redacts them."""
    a, b = two_replicas
    chat, scope = 7703, "telegram:7703"
    openai_server.script(
        tool_call("memory", {"operation": "add", "content": "Locker code: Plum-4343."}),
        reply("Noted."),
    )
    await say(a, telegram, chat, "Remember my locker code Plum-4343.")
    await answered(telegram, a, chat, 1)
    await forgotten_on_b_erasure_waiting(a, b, scope, "Plum")

    asked = len(openai_server.requests)
    await say(a, telegram, chat, "Which gym did I say I go to?")
    await answered(telegram, a, chat, 2)
    sent = [orjson.dumps(r).decode() for r in openai_server.requests[asked:]]
    held = [
        r[r.find("Plum-4343") - 300 : r.find("Plum-4343") + 50] for r in sent if "Plum-4343" in r
    ]
    assert sent and not held, held
    assert b"Plum-4343" not in await a.replicas.client.get(f"mnemobot:session:{scope}")


async def test_a_text_whose_erasure_waits_is_kept_out_of_the_chats_earlier_messages_tools(
    bot: App, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Found in a review: while the erasure waited, session_search and session_history read
    the forgotten text back from the chat's log of earlier messages (a /new put it there),
    and the model was handed it again."""
    chat = ChatRef("console", "lk", user_id="u1", user_name="Anna")
    await ask(bot, "My locker code is Plum-4545.", chat=chat)
    bot.assistant.reset_session(chat)
    item = item_holding(bot, chat.key, "Plum")
    await bot.memory.scopes.run(
        chat.key, partial(bot.memory.forget.forget_items, chat.key, item), write=True
    )
    assert files_with(workspace, "Plum-4545"), "the erasure did not wait"

    asked = len(openai_server.requests)
    openai_server.script(
        tool_call("session_search", {"query": "locker code"}),
        tool_call("session_history", {"count": 20}),
        reply("I no longer know it."),
    )
    await ask(bot, "What was my locker code?", chat=chat)
    sent = [orjson.dumps(r).decode() for r in openai_server.requests[asked:]]
    assert len(sent) == 3 and "locker code" in sent[1], sent
    assert not any("Plum-4545" in request for request in sent), sent


GATE = "Peach-5150"


def forgotten_with_no_bot(workspace: Path, redis_url: str) -> tuple[redis.Redis, Path]:
    """A chat whose gate code was forgotten while no bot ran: its turn in memory, its
    session in Redis, its finished reply in a replica's outbox; the erasure still to do."""
    scope, said = "telegram:7800", f"My gate code is {GATE}."
    memory = WorkspaceMemory.open(workspace)
    try:
        memory.record.record_turn(
            scope=scope,
            user_text=said,
            assistant_text=f"echo: {said}",
            at=time.time(),
            config=MemoryConfig(),
            tz=UTC,
        )
        item = memory.recall.search(scope, "gate code", config=MemoryConfig(), tz=UTC)[0][0]
        memory.forget.forget(scope, item.id)
    finally:
        memory.close()
    session = {"id": scope, "channelType": "telegram", "chatId": "7800"}
    session |= {"messages": [{"role": "user", "content": said}], "metadata": {}, "state": {}}
    session |= {"createdAt": "2026-11-29T10:00:00Z", "updatedAt": "2026-11-29T10:00:00Z"}
    client = redis.Redis.from_url(redis_url)
    client.set(f"mnemobot:session:{scope}", orjson.dumps(session))
    outbox = DurableQueue(workspace / "delivery" / "telegram-outbox-a.jsonl")
    outbox.add([QueuedEntry("r1", scope, {"text": f"echo: {said}"}, 1.0)])
    outbox.done(["r1"])
    return client, outbox.path


def maintain_env(workspace: Path, redis_url: str, llm: FakeOpenAIServer) -> dict[str, str]:
    return {
        "BOT_WORKSPACE": str(workspace),
        "BOT_REDIS_URL": redis_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": llm.base_url,
    }


def test_memory_maintain_erases_from_redis_sessions_and_the_journals_with_no_bot_running(
    workspace: Path,
    redis_url: str,
    openai_server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, outbox = forgotten_with_no_bot(workspace, redis_url)
    for name, value in maintain_env(workspace, redis_url, openai_server).items():
        monkeypatch.setenv(name, value)

    assert main(["memory", "maintain", "--chat", "telegram:7800"]) == 0

    assert GATE.encode() not in client.get("mnemobot:session:telegram:7800")
    assert files_with(workspace, GATE) == []
    assert journal_shape(outbox) == [("add", "r1"), ("done", "r1")]
    client.close()


# `mnemobot memory maintain`, killed as it is about to put the redacted outbox in place.
MAINTAIN_UNTIL_OUTBOX = """
arm(inside="telegram-outbox-a")
from mnemobot.bot.cli.main import main
raise SystemExit(main(["memory", "maintain", "--chat", "telegram:7800"]))
"""


def test_an_erasure_killed_mid_way_is_finished_by_the_next_run(
    workspace: Path,
    redis_url: str,
    openai_server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, outbox = forgotten_with_no_bot(workspace, redis_url)
    env = maintain_env(workspace, redis_url, openai_server)
    killed = start_to_crash(MAINTAIN_UNTIL_OUTBOX, "before-replace", env=env, cwd=workspace)
    _, err = killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL, err[-2000:]
    # Cut after the session in Redis and the memory files, before the journal: the
    # journal is whole as it was, and the text is still pending.
    assert GATE.encode() not in client.get("mnemobot:session:telegram:7800")
    assert files_with(workspace / "memory", GATE) == []
    pending = workspace / "memory" / "telegram:7800" / ".forget_pending.jsonl"
    assert b"peach-5150" in pending.read_bytes()
    assert GATE.encode() in outbox.read_bytes()
    assert journal_shape(outbox) == [("add", "r1"), ("done", "r1")]

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["memory", "maintain", "--chat", "telegram:7800"]) == 0

    assert files_with(workspace, GATE) == [] and not pending.exists()
    assert journal_shape(outbox) == [("add", "r1"), ("done", "r1")]
    assert not DurableQueue(outbox).pending() and DurableQueue(outbox).seen("r1")
    client.close()


async def test_the_reply_of_the_turn_that_forgot_does_not_stay_in_the_journals(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    bot = await start_bot()
    bot.app.start_background()  # as `mnemobot run` does: the erasure right after the turn
    chat = 5102
    telegram.send_text("My locker code is QX-7731-ZEBRA.", chat_id=chat)
    await telegram.wait_for_messages_async(chat, 1, timeout=15)
    openai_server.script(
        tool_call("memory", {"operation": "forget", "query": "locker code"}),
        reply("Done: I removed your locker code QX-7731-ZEBRA."),
    )
    # A slow Telegram: the answer waits in the outbox while the erasure runs.
    delivered = threading.Event()
    telegram.hold("sendMessage", delivered)
    telegram.send_text("forget my locker code", chat_id=chat)
    memory = workspace / "memory" / f"telegram:{chat}"
    deadline = time.monotonic() + 15
    while files_with(memory, "QX-7731-ZEBRA"):
        assert time.monotonic() < deadline, "the erasure never reached the memory files"
        await asyncio.sleep(0.02)
    delivered.set()
    await telegram.wait_for_messages_async(chat, 2, timeout=15)
    # The user reads the answer as it was written; it is erased after its delivery.
    assert "QX-7731-ZEBRA" in telegram.sent_messages(chat)[-1]["plain_text"]
    assert bot.app.maintenance is not None
    await bot.app.maintenance.settled()
    await until_nothing_pending(workspace)
    assert files_with(workspace, "QX-7731-ZEBRA") == []
    assert bot.app.memory.forget.scopes_to_erase() == []
