"""Forgetting erases the text from every file, and nothing that reads memory reads it back.

The crossing: forgetting (the memory tool) x consolidation (MEMORY.md written from notes),
the compaction flush and summary, the chat's session and its offload log, forum topics.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from mnemobot.bot.app import App, build_app
from mnemobot.bot.tuning import Tuning
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    context_text,
    reply,
    system_text,
    tool_call,
    tool_messages,
    user_texts,
)
from tests.conftest import AppFactory, ask, make_settings, write_runtime_config

CHAT = ChatRef("console", "kc", user_id="u1")
SCOPE = "console:kc"
SECRET = b"QX-7731"
CONFIG = MemoryConfig()


def files_with(root: Path, text: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and text in p.read_bytes()
    )


def copying_model(request: dict[str, Any]) -> Step:
    """A model that copies whatever it is shown into the memory it writes: the worst case
    for forgetting. Consolidation gets every note line back as a bullet, the flush every
    user line as a fact, the summary the whole excerpt."""
    system = context_text(request)
    shown = user_texts(request)[-1] if user_texts(request) else ""
    if system.startswith("You maintain the long-term memory file"):
        lines = [line for line in shown.splitlines() if "User:" in line or line.startswith("- [")]
        bullets = [f"- {line.split('User:', 1)[-1].split('|')[0].strip()}" for line in lines]
        return reply("## Notes\n" + "\n".join(bullets or ["- nothing"]) + "\n## Superseded\n- none")
    if system.startswith("You keep an assistant's long-term memory"):
        said = re.findall(r"^user: (.*)$", shown, re.M)
        return reply("\n".join(f"- {line}" for line in said) or "NO_REPLY")
    if system.startswith("You compress a chat"):
        return reply("SUMMARY: " + shown.replace("\n", " ")[-300:])
    return reply(f"echo: {shown}")


@pytest.fixture
async def app(make_app: AppFactory, openai_server: FakeOpenAIServer) -> App:
    openai_server.responder = copying_model
    # Consolidation sent as soon as the server is free (the quiet spell has its own test).
    return make_app(tuning=Tuning(background_quiet_seconds=0))


async def test_forgetting_a_turn_by_id_erases_it_before_consolidation_reads_it(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """The issue's reproduction: one turn, forgotten by id, then maintenance."""
    await ask(app, "My locker code is QX-7731-ZEBRA.", chat=CHAT)
    await ask(app, "I like green tea in the morning.", chat=CHAT)
    [(turn, _)] = [
        hit for hit in app.memory.recall.search(SCOPE, "locker code", config=CONFIG, tz=UTC)[:1]
    ]
    assert turn.type is ItemType.TURN
    openai_server.script(
        tool_call("memory", {"operation": "forget", "id": turn.id}), reply("Forgotten.")
    )
    await ask(app, "forget that turn please", chat=CHAT)
    assert "forgotten" in tool_messages(openai_server.last_request())[-1]["content"]
    assert files_with(workspace, SECRET)  # the session and offload still hold it
    assert app.maintenance is not None

    report = await app.maintenance.maintain(SCOPE)

    lines = report.lines()
    assert any("consolidate: rewrote MEMORY.md" in line for line in lines), lines
    consolidation = [
        user_texts(r)[-1]
        for r in openai_server.requests
        if system_text(r).startswith("You maintain the long-term memory file")
    ]
    assert consolidation and all("QX-7731" not in text for text in consolidation)
    assert files_with(workspace, SECRET) == []
    memory_file = (workspace / "memory" / SCOPE / "MEMORY.md").read_text()
    assert "green tea" in memory_file


async def test_forget_in_plain_words_finds_every_item_and_says_what_went(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await ask(app, "My locker code is QX-7731-ZEBRA.", chat=CHAT)
    await ask(app, "Reminder: the locker code QX-7731-ZEBRA opens the gym locker.", chat=CHAT)
    await ask(app, "My favourite tea is sencha.", chat=CHAT)
    (workspace / "memory" / SCOPE / "MEMORY.md").write_text(
        "## About the user\n- Gym locker code: QX-7731-ZEBRA\n- Likes sencha\n"
    )
    openai_server.script(
        tool_call("memory", {"operation": "forget", "query": "locker code"}),
        reply("Done: I removed your locker code QX-7731-ZEBRA from my memory."),
    )
    await ask(app, "forget my locker code", chat=CHAT)

    answer = tool_messages(openai_server.last_request())[-1]["content"]
    assert answer.startswith("forgotten 2 items and 3 lines of MEMORY.md"), answer
    assert answer.count("[episodic/turn]") == 2 and "locker code" in answer
    # Taken out of the conversation the model sees from now on.
    assert all("QX-7731" not in text for text in user_texts(openai_server.last_request()))
    hits = app.memory.recall.search(SCOPE, "locker code QX-7731-ZEBRA", config=CONFIG, tz=UTC)
    assert all("QX-7731" not in item.content for item, _ in hits[:5])
    # Hidden before any file is rewritten: the next request shows it nowhere.
    await ask(app, "what do you know about my locker and my tea?", chat=CHAT)
    assert "QX-7731" not in str(openai_server.last_request())
    assert "sencha" in context_text(openai_server.last_request())

    await app.maintenance.maintain(SCOPE)  # type: ignore[union-attr]

    # Gone from every file, the forgetting turn's own reply included.
    assert files_with(workspace, SECRET) == []
    assert "sencha" in (workspace / "memory" / SCOPE / "MEMORY.md").read_text()


async def test_a_query_matching_too_much_forgets_nothing(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    memory = app.memory
    for n in range(25):
        memory.record.record_turn(
            scope=SCOPE,
            user_text=f"Meeting notes {n}: the project budget was discussed again.",
            assistant_text="Noted.",
            at=time.time() - 3600 + n,
            config=CONFIG,
            tz=UTC,
        )
    openai_server.script(
        tool_call("memory", {"operation": "forget", "query": "project budget"}), reply("ok")
    )
    await ask(app, "forget the project budget", chat=CHAT)
    answer = tool_messages(openai_server.last_request())[-1]["content"]
    assert answer.startswith("nothing forgotten: 25 items"), answer
    assert memory.recall.stats(SCOPE).tombstones == 0


def say(memory: WorkspaceMemory, text: str, at: float, scope: str = SCOPE) -> None:
    memory.record.record_turn(
        scope=scope,
        user_text=text,
        assistant_text="Noted.",
        at=at,
        config=CONFIG,
        tz=UTC,
        message_refs=[f"tg:{int(at)}"],
    )


def test_a_fact_goes_with_its_turn_and_the_turn_with_its_facts(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    now = time.time()
    say(memory, "My address is 12 Baker Street. I work as a nurse.", now - 60)
    say(memory, "I like hiking on weekends.", now - 30)
    items = memory.scopes.store(SCOPE).items.values()
    fact = next(i for i in items if i.layer is Layer.SEMANTIC and "Baker" in i.content)
    nurse = next(i for i in items if i.layer is Layer.SEMANTIC and "nurse" in i.content)

    gone = memory.forget.forget(SCOPE, fact.id)

    left = {i.id: i for i in memory.scopes.store(SCOPE).items.values()}
    assert all("Baker" not in i.content for i in left.values())
    turns = [i for i in left.values() if i.type is ItemType.TURN]
    assert [t.content.startswith("User: I like hiking") for t in turns] == [True]
    # The turn went with the fact; the other fact said in it is a fact of its own.
    assert nurse.id in left and len(gone) >= 3

    # Forgetting a turn takes every fact learned from it.
    hiking_turn = turns[0]
    memory.forget.forget(SCOPE, hiking_turn.id)
    assert all("hiking" not in i.content for i in memory.scopes.store(SCOPE).items.values())


def test_the_erasure_waits_for_a_turn_holding_the_session_and_reaches_topics(
    tmp_path: Path,
) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    scope = "telegram:-100"
    say(memory, "The alarm code is 4471-AX-9.", time.time() - 10, scope=scope)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    message = '{"role": "user", "content": "The alarm code is 4471-AX-9."}'
    for key in (scope, f"{scope}:7"):  # the group and one of its forum topics
        (sessions / f"{key}.json").write_text(f'{{"id": "{key}", "messages": [{message}]}}')
        (sessions / f"{key}.log.jsonl").write_text(message + "\n")
    turn = next(iter(memory.scopes.store(scope).items.values()))
    memory.forget.forget(scope, turn.id)

    lock = FileLock(sessions / f"{scope}:7.lock")
    with lock:  # a turn of the topic is running
        report = memory.forget.erase_forgotten(scope, session_wait_seconds=0.1)
    assert report.busy == [f"{scope}:7"]
    assert memory.forget.scopes_to_erase() == [scope]  # left for the next run
    assert files_with(tmp_path, b"4471-AX-9") == [
        f"sessions/{scope}:7.json",
        f"sessions/{scope}:7.log.jsonl",
    ]

    report = memory.forget.erase_forgotten(scope)
    assert report.busy == [] and memory.forget.scopes_to_erase() == []
    assert files_with(tmp_path, b"4471-AX-9") == []


async def test_compaction_never_sends_a_forgotten_text(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(
        workspace,
        {"llm": {"maxRetries": 0}, "compaction": {"maxContextTokens": 1000, "keepLastMessages": 2}},
    )
    openai_server.responder = copying_model
    app = build_app(
        make_settings(workspace, openai_server), tuning=Tuning(background_quiet_seconds=0)
    )
    try:
        await ask(app, "My locker code is QX-7731-ZEBRA.", chat=CHAT)
        [(turn, _)] = app.memory.recall.search(SCOPE, "locker code", config=CONFIG, tz=UTC)[:1]
        app.memory.forget.forget(SCOPE, turn.id)  # pending erasure: the session still holds it
        before = len(openai_server.requests)
        for n in range(6):
            await ask(app, f"Long note {n}: " + "lorem ipsum dolor sit amet " * 30, chat=CHAT)
        # The flush follows the reply on this local (one-slot) server.
        assert app.maintenance is not None
        await app.maintenance.settled()
        sent = openai_server.requests[before:]
        summaries = [r for r in sent if system_text(r).startswith("You compress a chat")]
        flushes = [r for r in sent if system_text(r).startswith("You keep an assistant's")]
        assert summaries and flushes
        assert all("QX-7731" not in str(r) for r in summaries + flushes)
        facts = [i.content for i in app.memory.scopes.store(SCOPE).items.values()]
        assert all("QX-7731" not in fact for fact in facts)
    finally:
        await app.close()


async def test_a_running_bot_erases_the_files_right_after_the_turn(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    app.start_background()
    await ask(app, "My locker code is QX-7731-ZEBRA.", chat=CHAT)
    openai_server.script(
        tool_call("memory", {"operation": "forget", "query": "locker code"}),
        reply("Done: I removed your locker code QX-7731-ZEBRA."),
    )
    await ask(app, "forget my locker code", chat=CHAT)
    # The erasure's last step, after the files, takes the texts off the pending list.
    deadline = time.monotonic() + 10
    while (
        files_with(workspace, SECRET) or app.memory.forget.scopes_to_erase()
    ) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert files_with(workspace, SECRET) == []
    assert app.memory.forget.scopes_to_erase() == []


def test_forgetting_the_statement_that_replaced_a_fact_leaves_the_fact_current(
    tmp_path: Path,
) -> None:
    """ "I moved to Berlin" forgotten: "I live in Paris" is what memory holds again, not an
    earlier value of nothing."""
    memory = WorkspaceMemory.open(tmp_path)
    try:
        now = time.time()
        say(memory, "I live in Paris.", now - 120)
        say(memory, "I moved to Berlin.", now - 60)
        items = memory.scopes.store(SCOPE).items.values()
        paris = next(i for i in items if i.layer is Layer.SEMANTIC and "Paris" in i.content)
        berlin = next(i for i in items if i.layer is Layer.SEMANTIC and "Berlin" in i.content)
        assert paris.superseded_by is not None

        memory.forget.forget(SCOPE, berlin.id)

        store = memory.scopes.store(SCOPE)
        assert all("Berlin" not in i.content for i in store.items.values())
        again = store.get(paris.id)
        assert again is not None and not again.is_superseded
        pack = memory.recall.build_pack(SCOPE, "where do I live?", now=now, config=CONFIG, tz=UTC)
        lines = [p.item.content for p in pack.items if "Paris" in p.item.content]
        assert lines and "earlier" not in pack.rendered
    finally:
        memory.close()


def test_an_erased_tool_call_keeps_arguments_a_server_can_read(tmp_path: Path) -> None:
    """The memory tool's `add` quoted the code in its call: erased, its arguments stay JSON
    (they were the bare "[forgotten]", which servers whose chat template reads the past
    calls' arguments refuse, every later turn of the chat with them)."""
    memory = WorkspaceMemory.open(tmp_path)
    scope = "telegram:-101"
    say(memory, "The alarm code is 5582-BX-3.", time.time() - 10, scope=scope)
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "memory", "arguments": '{"content": "alarm code 5582-BX-3"}'},
    }
    messages = [
        {"role": "user", "content": "The alarm code is 5582-BX-3."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "added"},
    ]
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / f"{scope}.json").write_text(json.dumps({"id": scope, "messages": messages}))
    turn = next(iter(memory.scopes.store(scope).items.values()))
    memory.forget.forget(scope, turn.id)
    memory.forget.erase_forgotten(scope)
    memory.close()

    kept = json.loads((sessions / f"{scope}.json").read_text())["messages"]
    assert "5582" not in json.dumps(kept)
    arguments = kept[1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {}
