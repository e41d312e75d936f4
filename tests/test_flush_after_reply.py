"""A compaction's memory flush on a home server (one request at a time): after the reply,
in the background, never lost when it gives way to a reply or its process stops."""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.app import App
from mnemobot.bot.tuning import Tuning
from mnemobot.conversation.pending_flushes import (
    CLAIM_SECONDS,
    LogLines,
    PendingFlushes,
    claimable,
    claimed,
    failed,
    held_until,
    noted,
    without,
)
from mnemobot.systems.compaction.summary_model import CompactionCalls
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    delay,
    error,
    reply,
    system_text,
    tool_call,
    user_texts,
)
from tests.conftest import CONSOLE_CHAT as CHAT
from tests.conftest import AppFactory, ask

LONG = "lorem ipsum dolor sit amet " * 40  # ~1,080 chars, ~270 tokens
# The fake model server is on 127.0.0.1: a local server, one request at a time.
SMALL_WINDOW = {"compaction": {"maxContextTokens": 1000, "keepLastMessages": 4}}


def is_summary(body: dict[str, Any]) -> bool:
    return system_text(body).startswith("You compress a chat")


def is_flush(body: dict[str, Any]) -> bool:
    return system_text(body).startswith("You keep an assistant's long-term memory")


def semantic_items(workspace: Path) -> str:
    path = workspace / "memory" / "console:local" / "items" / "semantic.jsonl"
    return path.read_text() if path.exists() else ""


def ledger(app: App) -> Path:
    return app.sessions.flush_ledger_path_for(CHAT.key)


def held_then_answered(fact: str, flushes: list[int]) -> Callable[[dict[str, Any]], object]:
    """The model: a short summary; the first flush (counted in `flushes`) still being
    written 30 s later, answering `fact` "said first" (put aside, it must never be kept),
    every later one answering `fact`; a turn's "ok"."""

    def responder(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SUMMARY: talked")
        if is_flush(body):
            flushes.append(1)
            if len(flushes) == 1:
                return delay(30.0, reply(f"- {fact}, said first"))
            return reply(f"- {fact}")
        return reply("ok")

    return responder


async def until(condition: Any, seconds: float = 20.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


async def test_the_flush_waits_for_the_reply_and_its_facts_are_kept(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    def responder(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SESSION INTENT: chat\nSUMMARY: talked\nARTIFACTS: none\nNEXT STEPS: none")
        if is_flush(body):
            return reply("- The user's locker is number 4417")
        return reply("ok")

    openai_server.responder = responder
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0))
    await ask(app, "my locker is number 4417")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
    assert app.maintenance is not None
    await app.maintenance.settled()
    kinds = [
        "summary" if is_summary(r) else "flush" if is_flush(r) else "reply"
        for r in openai_server.requests
    ]
    first_summary = kinds.index("summary")
    # The reply of the turn that compacted came right after its summary; the flush after it.
    assert kinds[first_summary + 1] == "reply", kinds
    assert "flush" in kinds[first_summary + 2 :], kinds
    flush = next(r for r in openai_server.requests if is_flush(r))
    assert "my locker is number 4417" in flush["messages"][1]["content"]
    assert "locker is number 4417" in semantic_items(workspace)
    assert not ledger(app).exists()


async def test_a_flush_put_aside_for_a_reply_is_drawn_again_once(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    flushes: list[int] = []
    openai_server.responder = held_then_answered("The user's boat is named Kestrel", flushes)
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0))
    await ask(app, "my boat is named Kestrel")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
        if flushes:
            break
    await until(lambda: bool(flushes))
    assert await ask(app, "and one more thing") == "ok"
    assert app.maintenance is not None
    await app.maintenance.settled()
    assert len(flushes) >= 2
    kept = [line for line in semantic_items(workspace).splitlines() if "Kestrel" in line]
    assert len(kept) == 1 and "said first" not in kept[0]
    assert not ledger(app).exists()


async def test_a_flush_left_when_the_bot_stopped_runs_after_the_restart(
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
    await ask(app, "my sister lives in Porto")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
    await until(lambda: any(is_flush(r) for r in openai_server.requests))
    await asyncio.wait_for(app.close(), 10)  # not held up by the flush under way
    assert ledger(app).exists()

    def answering(body: dict[str, Any]) -> object:
        if is_flush(body):
            return reply("- The user's sister lives in Porto")
        return hanging(body)

    openai_server.responder = answering
    again = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0))
    await ask(again, "back again")
    assert again.maintenance is not None
    await again.maintenance.settled()
    flush = [r for r in openai_server.requests if is_flush(r)][-1]
    assert "my sister lives in Porto" in flush["messages"][1]["content"]
    assert "sister lives in Porto" in semantic_items(workspace)
    assert not ledger(again).exists()


def test_replicas_never_draw_the_same_lines_until_a_claim_runs_out(tmp_path: Path) -> None:
    now = [1_000.0]
    log = tmp_path / "console:local.log.jsonl"
    log.write_text(
        "".join(f'{{"role": "user", "content": "m{i}", "at": "t{i}"}}\n' for i in range(5))
    )
    one = PendingFlushes(tmp_path, clock=lambda: now[0])
    other = PendingFlushes(tmp_path, clock=lambda: now[0])
    noted_lines = one.note_last("console:local", 3, "t2")
    assert (noted_lines.start, noted_lines.end) == (2, 5)
    claimed_lines = one.claim("console:local")
    assert [m["content"] for m in one.messages("console:local", claimed_lines)] == [
        "m2",
        "m3",
        "m4",
    ]
    assert other.claim("console:local") == []
    now[0] += CLAIM_SECONDS + 1  # the first replica was killed
    assert other.claim("console:local") == claimed_lines
    other.finish("console:local", claimed_lines)
    assert not other.waiting("console:local")


def test_lines_of_a_log_begun_again_give_nothing(tmp_path: Path) -> None:
    log = tmp_path / "console:local.log.jsonl"
    log.write_text('{"role": "user", "content": "old", "at": "t0"}\n')
    pending = PendingFlushes(tmp_path)
    lines = pending.note_last("console:local", 1, "t0")
    # The chat was erased (/forget_me) and talked again: the same line is another message.
    log.write_text('{"role": "user", "content": "new", "at": "t9"}\n')
    assert pending.messages("console:local", [lines]) == []


spans = st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 20), st.floats(0, 100)), max_size=8
).map(lambda xs: [LogLines(start, start + size, at) for start, size, at in xs])


@given(spans, st.floats(0, 200), st.floats(0, 200))
def test_the_ledger_keeps_every_noted_span_until_it_is_finished(
    lines: list[LogLines], claim_at: float, later: float
) -> None:
    entries: list[dict[str, Any]] = []
    for line in lines:
        entries = noted(entries, line)
    distinct = {(line.start, line.end) for line in lines}
    free = claimable(entries, claim_at)
    assert {(line.start, line.end) for line in free} == distinct
    held = claimed(entries, free, claim_at + 10)
    assert claimable(held, claim_at) == []
    again = claimable(held, max(later, claim_at + 10))
    assert {(line.start, line.end) for line in again} == distinct
    assert claimable(claimed(held, free, None), claim_at) == free
    done = free[: len(free) // 2]
    left = claimable(without(held, done), claim_at + 10)
    assert {(line.start, line.end) for line in left} == distinct - {
        (line.start, line.end) for line in done
    }


async def test_a_text_forgotten_before_the_flush_runs_never_reaches_it(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    def responder(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SUMMARY: talked")
        if is_flush(body):
            shown = body["messages"][1]["content"]
            return reply(
                "- The user's locker code is QX-7731" if "QX-7731" in shown else "NO_REPLY"
            )
        if body["messages"][-1]["role"] == "user" and user_texts(body)[-1] == "forget it":
            return tool_call("memory", {"operation": "forget", "query": "QX-7731-ZEBRA"})
        return reply("ok")

    openai_server.responder = responder
    # The flush waits for the chat to be quiet for a moment: the user forgets meanwhile.
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=1.5))
    await ask(app, "My locker code is QX-7731-ZEBRA.")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
    assert ledger(app).exists()
    await ask(app, "forget it")
    forgetting = [r for r in openai_server.requests if r["messages"][-1]["role"] == "tool"]
    assert "forgotten" in str(forgetting[-1]["messages"][-1]["content"])
    assert app.maintenance is not None
    await until(lambda: not ledger(app).exists())
    await app.maintenance.settled()
    flushes = [r for r in openai_server.requests if is_flush(r)]
    assert flushes and all("QX-7731" not in str(r) for r in flushes)
    assert "QX-7731" not in semantic_items(workspace)


async def test_a_flush_put_aside_by_a_reply_goes_on_without_another_message(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # Found live (llama-cpp-python, 2,048-token window): a short question asked while the
    # flush ran put it aside, and its facts waited for whatever the user wrote next, which
    # may be never. The turn that puts a flush aside started too early to start it again.
    flushes: list[int] = []
    openai_server.responder = held_then_answered("The user's boat is named Kestrel", flushes)
    # A quiet spell, so that the flush starts between the turns, not during the next.
    app = make_app(SMALL_WINDOW, tuning=Tuning(background_quiet_seconds=0.5))
    await ask(app, "my boat is named Kestrel")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
        if ledger(app).exists():
            break
    await until(lambda: bool(flushes))
    summaries = sum(1 for r in openai_server.requests if is_summary(r))
    assert await ask(app, "ok?") == "ok"
    # That turn did not compact: only its reply put the flush aside.
    assert sum(1 for r in openai_server.requests if is_summary(r)) == summaries
    await until(lambda: len(flushes) >= 2)
    await until(lambda: not ledger(app).exists())
    kept = [line for line in semantic_items(workspace).splitlines() if "Kestrel" in line]
    assert len(kept) == 1 and "said first" not in kept[0]


async def test_a_flush_a_killed_process_held_runs_at_the_next_start_without_a_message(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # A process compacted, claimed the lines for its flush and was killed (kill -9): the
    # ledger still holds its claim. The chat never writes again.
    sessions = workspace / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    said = "2026-11-01T10:00:00Z"
    (sessions / "console:local.log.jsonl").write_text(
        f'{{"role": "user", "content": "my cat is called Miso", "at": "{said}"}}\n'
    )
    ledger_file = PendingFlushes(sessions).ledger_path("console:local")
    PendingFlushes(sessions).note_last("console:local", 1, said, "console:local")
    held = json.loads(ledger_file.read_text())
    held["waiting"][0]["claimedUntil"] = time.time() + 1.5
    ledger_file.write_text(json.dumps(held))

    def responder(body: dict[str, Any]) -> object:
        if is_flush(body):
            return reply("- The user's cat is called Miso")
        return reply("ok")

    openai_server.responder = responder
    app = make_app(tuning=Tuning(background_quiet_seconds=0))
    app.start_background()
    await until(lambda: not ledger_file.exists())
    flush = next(r for r in openai_server.requests if is_flush(r))
    assert "my cat is called Miso" in flush["messages"][1]["content"]
    await until(lambda: "cat is called Miso" in semantic_items(workspace))


async def test_a_flush_that_failed_is_tried_again_then_let_go(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    flushes: list[int] = []

    def responder(body: dict[str, Any]) -> object:
        if is_summary(body):
            return reply("SUMMARY: talked")
        if is_flush(body):
            flushes.append(1)
            if len(flushes) == 1:
                return error(500, "the server restarted")
            shown = body["messages"][1]["content"]
            said = "my locker is number 4417" in shown
            return reply("- Noted by the flush: gym locker 4417" if said else "NO_REPLY")
        return reply("ok")

    openai_server.responder = responder
    calls = CompactionCalls(flush_retry_seconds=0.5, flush_tries=2)
    # Sent once the chat is quiet for a second: after the last message, with no reply to
    # give way to, so the first try fails at the server.
    tuning = Tuning(background_quiet_seconds=1.0, compaction_calls=calls)
    app = make_app(SMALL_WINDOW, tuning=tuning)
    await ask(app, "my locker is number 4417")
    for i in range(7):
        await ask(app, f"message {i}: {LONG}")
    await until(lambda: "Noted by the flush" in semantic_items(workspace))
    assert len(flushes) >= 2
    # A server that keeps failing: the lines are let go after the last try.
    openai_server.responder = lambda body: error(500, "down") if is_flush(body) else responder(body)
    for i in range(7):
        await ask(app, f"later message {i}: {LONG}")
    await until(lambda: not ledger(app).exists())


def test_a_claim_held_and_a_failure_counted_in_the_ledger() -> None:
    lines = [LogLines(0, 2, 1.0), LogLines(2, 5, 2.0)]
    entries: list[dict[str, Any]] = []
    for line in lines:
        entries = noted(entries, line)
    assert held_until(entries, 10.0) is None
    held = claimed(entries, lines[:1], 50.0)
    assert held_until(held, 10.0) == 50.0 and held_until(held, 60.0) is None
    once, given_up = failed(held, lines[:1], 70.0, 2)
    assert given_up == [] and claimable(once, 60.0) == [lines[1]]
    assert claimable(once, 70.0) == lines
    twice, given_up = failed(once, lines[:1], 90.0, 2)
    assert given_up == lines[:1] and claimable(twice, 100.0) == [lines[1]]


def test_a_span_far_past_the_log_reads_only_the_log(tmp_path: Path) -> None:
    log = tmp_path / "console:local.log.jsonl"
    log.write_text('{"role": "user", "content": "m0", "at": "t0"}\n')
    pending = PendingFlushes(tmp_path)
    # A hand-made ledger: lines the log never had are not counted one by one.
    huge = LogLines(0, 10**12, 0.0, "t0")
    tracemalloc.start()
    try:
        found = pending.messages("console:local", [huge])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [m["content"] for m in found] == ["m0"]
    assert peak < 1 << 20
