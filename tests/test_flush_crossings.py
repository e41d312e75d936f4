"""A home server's memory flush left for later where other features cross it: a ledger not
of ours, a text forgotten or a chat erased while it runs, another chat's reply putting it
aside, the bot moved to a hosted API."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.systems.compaction.summary_model import CompactionCalls
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    delay,
    gated,
    reply,
    tool_call,
    user_texts,
)
from tests.conftest import CONSOLE_CHAT as CHAT
from tests.conftest import AppFactory, ask
from tests.test_flush_after_reply import (
    LONG,
    SMALL_WINDOW,
    held_then_answered,
    is_flush,
    is_summary,
    ledger,
    semantic_items,
    until,
)


async def test_a_ledger_not_of_ours_costs_no_reply_and_no_flush(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    def responder(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SUMMARY: talked")
        if is_flush(body):
            return reply("- The user's dog is called Biscuit")
        return reply("ok")

    openai_server.responder = responder
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0))
    ledger(app).parent.mkdir(parents=True, exist_ok=True)
    ledger(app).write_text('{"waiting": 7}')
    assert await ask(app, "my dog is called Biscuit") == "ok"
    for i in range(7):
        assert await ask(app, f"message {i}: {LONG}") == "ok"
    assert app.maintenance is not None
    await app.maintenance.settled()
    assert "dog is called Biscuit" in semantic_items(workspace)
    assert not ledger(app).exists()


async def test_a_text_forgotten_between_the_parts_of_a_flush_never_reaches_the_next(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    first_part_answers = threading.Event()
    flushes: list[str] = []

    def responder(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SUMMARY: talked")
        if is_flush(body):
            shown = body["messages"][1]["content"]
            flushes.append(shown)
            found = "- The user's locker code is QX-7731" if "QX-7731" in shown else "NO_REPLY"
            if len(flushes) == 1:
                return gated(first_part_answers, reply(found))
            return reply(found)
        if body["messages"][-1]["role"] == "user" and user_texts(body)[-1] == "forget it":
            return tool_call("memory", {"operation": "forget", "query": "QX-7731-ZEBRA"})
        return reply("ok")

    openai_server.responder = responder
    # Room for a long answer leaves little for the excerpt: the flush takes several calls.
    openai_server.context_window = 4096
    openai_server.window_reported_by = "llamacpp"
    calls = CompactionCalls(summary_max_output_tokens=3_400)
    tuning = Tuning(compaction_calls=calls, background_quiet_seconds=0)
    app = make_app({"compaction": {"maxContextTokens": 1600, "keepLastMessages": 4}}, tuning=tuning)
    await ask(app, f"message 0: {LONG}")
    await ask(app, f"My locker code is QX-7731-ZEBRA. {LONG}")
    for i in range(1, 9):
        await ask(app, f"message {i}: {LONG}")
        if ledger(app).exists():
            break
    await until(lambda: bool(flushes))
    assert "QX-7731" not in flushes[0], "the code must be in the flush's second part"
    gate = app.assistant.gate
    # A turn of another chat still readying its reply (a voice message being transcribed)
    # when the first part is answered: the second waits for it, and the user forgets.
    async with gate.turn("console:other"):
        waiting = gate.background_waiting
        first_part_answers.set()
        await until(lambda: gate.background_waiting == waiting + 1)
        await ask(app, "forget it")
    forgetting = [r for r in openai_server.requests if r["messages"][-1]["role"] == "tool"]
    assert "forgotten" in str(forgetting[-1]["messages"][-1]["content"])
    await until(lambda: not ledger(app).exists())
    assert app.maintenance is not None
    await app.maintenance.settled()
    assert len(flushes) >= 2
    assert all("QX-7731" not in shown for shown in flushes[1:])
    assert "QX-7731" not in semantic_items(workspace)


async def test_a_flush_put_aside_for_another_chats_reply_goes_on_without_a_new_message(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    flushes: list[int] = []
    openai_server.responder = held_then_answered("The user's bike is a red Bianchi", flushes)
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0))
    await ask(app, "my bike is a red Bianchi")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
        if ledger(app).exists():
            break
    await until(lambda: bool(flushes))
    # Someone else writes to the bot; this chat's user says nothing more.
    assert await ask(app, "hello", ChatRef("console", "other", user_id="u2")) == "ok"
    await until(lambda: not ledger(app).exists())
    kept = [line for line in semantic_items(workspace).splitlines() if "Bianchi" in line]
    assert len(kept) == 1 and "said first" not in kept[0]


async def test_a_flush_left_on_a_home_server_runs_once_the_bot_uses_a_hosted_one(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    def hanging(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SUMMARY: talked")
        if is_flush(body):
            return delay(60.0, reply("- too late"))
        return reply("ok")

    openai_server.responder = hanging
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0))
    await ask(app, "my brother lives in Ghent")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
    await until(lambda: any(is_flush(r) for r in openai_server.requests))
    await asyncio.wait_for(app.close(), 10)
    assert ledger(app).exists()

    def answering(body: dict[str, Any]) -> object:
        if is_flush(body):
            return reply("- The user's brother lives in Ghent")
        return hanging(body)

    openai_server.responder = answering
    # The operator moved the bot to a server without a slot limit (a hosted API).
    hosted = {**SMALL_WINDOW, "llm": {"serverSlots": 0}}
    again = make_app(hosted, tuning=Tuning(background_quiet_seconds=0))
    await ask(again, "back again")
    await until(lambda: not ledger(again).exists())
    assert "brother lives in Ghent" in semantic_items(workspace)


async def test_a_flush_under_way_when_the_chat_is_erased_keeps_nothing(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    flush_answers = threading.Event()

    def responder(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SUMMARY: talked")
        if is_flush(body):
            return gated(flush_answers, reply("- The user's locker is number 4417"))
        return reply("ok")

    openai_server.responder = responder
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0))
    await ask(app, "my locker is number 4417")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
        if ledger(app).exists():
            break
    await until(lambda: any(is_flush(r) for r in openai_server.requests))
    # The model is still writing the facts when the user erases the chat.
    await app.commands.run(CHAT, ParsedCommand("forget_me", ""))
    done = await app.commands.run(CHAT, ParsedCommand("forget_me", "confirm"))
    assert done.startswith("Erased."), done
    flush_answers.set()
    assert app.maintenance is not None
    await app.maintenance.settled()
    assert "4417" not in semantic_items(workspace)
    left = [p for p in workspace.rglob("*") if p.is_file() and b"4417" in p.read_bytes()]
    assert left == []
