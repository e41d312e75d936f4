"""On a model server that answers one request at a time (a local one), users' replies go
first: background calls wait while a reply is in flight, each background call has its own
time limit from when it is sent, and the after-compaction throttle survives a restart."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextvars import Context
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.delivery.replicas import open_replicas
from mnemobot.bot.delivery.turn_board import RedisTurnBoard
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.bot.llm.model_gate import ModelGate, server_slots
from mnemobot.bot.llm.window_reports import is_local_endpoint
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.maintenance import last_report
from mnemobot.systems.compaction.summary_model import CompactionCalls
from mnemobot.systems.core.llm import ChatRequest
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    delay,
    gated,
    reply,
    system_text,
)
from mnemobot_tooling.redis_server import running_redis
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config

SCOPE = "console:local"
CONSOLIDATION = "You maintain the long-term memory file"
SUMMARY = "You compress a chat"
FLUSH = "You keep an assistant's long-term memory"
REWRITE = "## About the user\n- Has a cat named Miso\n\n## Superseded\n- none"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 10, 0, tzinfo=UTC).timestamp()

    def __call__(self) -> float:
        return self.now


def kind(body: dict[str, object]) -> str:
    system = system_text(body)
    for name in (CONSOLIDATION, SUMMARY, FLUSH):
        if system.startswith(name):
            return name
    return "reply"


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for `condition`, checking as the event loop turns."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition did not come true in time")
        await asyncio.sleep(0.01)


@pytest.fixture
async def eager_app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[App]:
    """Background work sent as soon as the server is free, no quiet spell after a turn: for
    what happens to a call already under way."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    built = build_app(
        make_settings(workspace, openai_server), tuning=Tuning(background_quiet_seconds=0)
    )
    yield built
    await built.close()


def test_a_local_server_has_one_slot_and_a_hosted_api_no_limit() -> None:
    for url in ("http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://ollama:11434"):
        assert is_local_endpoint(url) and server_slots("auto", url) == 1
    for url in ("http://192.168.1.20:8000/v1", "http://[::1]:8080/v1", "http://gpu.lan/v1"):
        assert server_slots("auto", url) == 1
    for url in (None, "https://api.openai.com/v1", "https://api.deepseek.com", "http://8.8.8.8"):
        assert not is_local_endpoint(url) and server_slots("auto", url) == 0
    assert server_slots(3, "https://api.openai.com/v1") == 3


async def test_consolidation_waits_while_a_reply_is_made(
    eager_app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    app = eager_app
    await ask(app, "My cat is called Miso.")
    answer_now = threading.Event()

    def model(body: dict[str, object]) -> Step:
        if kind(body) == CONSOLIDATION:
            return reply(REWRITE)
        return gated(answer_now, reply("Miso is asleep."))

    openai_server.responder = model
    openai_server.clear()
    turn = asyncio.create_task(app.assistant.handle_text(CONSOLE_CHAT, "What is Miso doing?"))
    await openai_server.wait_for_requests_async(1)
    assert app.maintenance is not None
    maintenance = asyncio.create_task(app.maintenance.maintain(SCOPE))
    # The rewrite is ready to be sent, and waits: the reply is being made.
    gate = app.assistant.gate
    await until(lambda: gate.background_waiting == 1)
    assert [kind(body) for body in openai_server.requests] == ["reply"]
    answer_now.set()
    outcome = await turn
    assert outcome is not None and outcome.reply == "Miso is asleep."
    report = await maintenance
    kinds = [kind(body) for body in openai_server.requests]
    assert kinds[0] == "reply" and set(kinds[1:]) == {CONSOLIDATION}
    assert "rewrote MEMORY.md" in next(s.line for s in report.steps if s.name == "consolidate")


async def test_work_that_can_wait_waits_for_a_quiet_spell_after_a_reply(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Found live on llama-cpp-python: consolidation sent the moment a reply was out took
    the server's one slot, and the user's next message, 4 s later, waited 35 s for the
    server to finish reading the abandoned prompt. It now waits for a quiet spell."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    app = build_app(
        make_settings(workspace, openai_server), tuning=Tuning(background_quiet_seconds=1.5)
    )
    try:
        await ask(app, "My cat is called Miso.")

        def model(body: dict[str, object]) -> Step:
            return reply(REWRITE if kind(body) == CONSOLIDATION else "Miso is asleep.")

        openai_server.responder = model
        openai_server.clear()
        assert app.maintenance is not None
        maintenance = asyncio.create_task(app.maintenance.maintain(SCOPE))
        await until(lambda: app.assistant.gate.background_waiting == 1)
        # The user answers within the spell: the reply goes first.
        outcome = await app.assistant.handle_text(CONSOLE_CHAT, "What is Miso doing?")
        assert outcome is not None and outcome.reply == "Miso is asleep."
        report = await maintenance
    finally:
        await app.close()
    kinds = [kind(body) for body in openai_server.requests]
    assert kinds[0] == "reply" and set(kinds[1:]) == {CONSOLIDATION}, kinds
    assert "rewrote MEMORY.md" in next(s.line for s in report.steps if s.name == "consolidate")


async def test_a_rewrite_under_way_gives_way_to_a_reply_and_is_done_again_later(
    eager_app: App,
    openai_server: FakeOpenAIServer,
    workspace: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A one-slot server writing a long rewrite at its pace: a user's message comes. The
    # rewrite is closed (the server stops it), the reply goes, the next run rewrites.
    app = eager_app
    await ask(app, "My cat is called Miso.")
    openai_server.one_at_a_time = True
    openai_server.tokens_per_second = 40
    long_rewrite = REWRITE + "\n" + " ".join(f"- detail {i}" for i in range(600))

    def model(body: dict[str, object]) -> Step:
        return reply(long_rewrite if kind(body) == CONSOLIDATION else "Miso is asleep.")

    openai_server.responder = model
    openai_server.clear()
    assert app.maintenance is not None
    caplog.set_level(logging.INFO, logger="mnemobot")
    # `memory maintain` run in this process by another test quiets this logger.
    caplog.set_level(logging.INFO, logger="mnemobot.memory.upkeep.maintenance")
    maintenance = asyncio.create_task(app.maintenance.maintain(SCOPE))
    await openai_server.wait_for_requests_async(1)
    assert openai_server.requests[0].get("stream") is True

    outcome = await app.assistant.handle_text(CONSOLE_CHAT, "What is Miso doing?")
    assert outcome is not None and outcome.reply == "Miso is asleep."
    report = await maintenance
    consolidate = next(s.line for s in report.steps if s.name == "consolidate")
    assert "rewrote MEMORY.md" not in consolidate and "put aside" in consolidate
    assert not (workspace / "memory" / SCOPE / "MEMORY.md").exists()
    # The operator's log tells it as what it is, not as a failed model call.
    told = [r for r in caplog.records if "consolidate:" in r.getMessage()]
    assert [r.levelno for r in told] == [logging.INFO]
    assert "consolidate: put aside for a user's reply; done again at the next run" in (
        told[0].getMessage()
    )
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]

    openai_server.tokens_per_second = 0
    again = await app.maintenance.maintain(SCOPE)
    assert "rewrote MEMORY.md" in next(s.line for s in again.steps if s.name == "consolidate")


async def test_the_flush_has_its_own_time_limit_behind_the_summary(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # A one-slot server: the flush is answered only after the summary (it follows the
    # reply). Each takes 0.7 s of a 1 s limit; the flush's counts from when it is sent.
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}, "compaction": {"enabled": False}})
    calls = CompactionCalls(summary_timeout_seconds=1)
    tuning = Tuning(compaction_calls=calls, background_quiet_seconds=0)
    app = build_app(make_settings(workspace, openai_server), tuning=tuning)
    try:
        for index in range(6):
            await ask(app, f"note {index}: I prefer oolong tea in the morning")
        openai_server.one_at_a_time = True

        def model(body: dict[str, object]) -> Step:
            if kind(body) == SUMMARY:
                return delay(0.7, reply("SESSION INTENT: tea\nSUMMARY: tea\nARTIFACTS: none"))
            if kind(body) == FLUSH:
                return delay(0.7, reply("- Prefers oolong tea in the morning"))
            return reply("ok")

        openai_server.responder = model
        answer = await app.commands.run(CONSOLE_CHAT, ParsedCommand("compact", "2"))
        assert answer.startswith("Compacted with summary"), answer
        assert app.maintenance is not None
        await app.maintenance.settled()
        items = app.memory.scopes.store(SCOPE).items.values()
        assert any("Prefers oolong tea in the morning" in item.content for item in items)
    finally:
        await app.close()


async def test_the_after_compaction_throttle_survives_a_restart(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(
        workspace,
        {"llm": {"maxRetries": 0}, "compaction": {"enabled": False}},
    )

    def model(body: dict[str, object]) -> Step:
        if kind(body) == CONSOLIDATION:
            return reply(REWRITE)
        if kind(body) == SUMMARY:
            return reply("SESSION INTENT: cat\nSUMMARY: cat\nARTIFACTS: none")
        if kind(body) == FLUSH:
            return reply("NO_REPLY")
        return reply("ok")

    openai_server.responder = model
    clock = Clock()

    async def compact_in_a_new_run() -> None:
        app = build_app(
            make_settings(workspace, openai_server),
            clock=clock,
            tuning=Tuning(background_quiet_seconds=0),
        )
        app.start_background()
        try:
            for index in range(4):
                await ask(app, f"My cat Miso likes box number {index}.")
            assert (await app.commands.run(CONSOLE_CHAT, ParsedCommand("compact", "2"))).startswith(
                "Compacted"
            )
            assert app.maintenance is not None
            await app.maintenance.settled()
        finally:
            await app.close()

    await compact_in_a_new_run()
    first = last_report(ScopePaths(workspace, SCOPE))
    assert first is not None and first.at == clock.now
    # Ten minutes later, after a restart: within AFTER_COMPACTION_MIN_MINUTES (30).
    clock.now += 600
    await compact_in_a_new_run()
    again = last_report(ScopePaths(workspace, SCOPE))
    assert again is not None and again.at == first.at
    # Past the 30 minutes it runs again.
    clock.now += 1800
    await compact_in_a_new_run()
    later = last_report(ScopePaths(workspace, SCOPE))
    assert later is not None and later.at == clock.now


async def test_with_replicas_a_background_call_waits_for_a_turn_of_another_replica(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    with running_redis(tmp_path / "redis") as url:
        replicas = open_replicas(url)
        try:

            def board(name: str) -> RedisTurnBoard:
                return RedisTurnBoard(replicas.client, namespace="test", replica_id=name)

            serving = ModelGate(lambda: 1, board("a"))
            model = OpenAIChatModel(
                api_key="test",
                base_url=openai_server.base_url,
                gate=ModelGate(lambda: 1, board("b")),
            )
            request = ChatRequest(
                messages=[{"role": "system", "content": CONSOLIDATION}],
                model="m",
                temperature=0,
                max_output_tokens=64,
                timeout_seconds=5,
            )
            turn_ended = asyncio.Event()
            async with serving.turn("telegram:1"):
                # Replica b's consolidation is ready while replica a makes a reply (in a
                # process of its own: no turn of this one around it).
                call = asyncio.create_task(model.complete(request), context=Context())
                await until(lambda: model.gate.background_waiting == 1)
                turn_ended.set()
            answer = await call
            assert turn_ended.is_set() and answer.content
            assert len(openai_server.requests) == 1
            await model.close()
        finally:
            await replicas.close()
