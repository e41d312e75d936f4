"""Compaction end to end: offload log, summary message, failures, /compact, eviction."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from mnemobot.base.atomic_file import read_jsonl
from mnemobot.bot.app import App, build_app
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.conversation.session import SessionStore
from mnemobot.model.windows import ModelWindow, ModelWindowStore
from mnemobot.plugin import Tool
from mnemobot.systems.compaction.summary_model import CompactionCalls
from mnemobot.systems.compaction.transcript import transcript_lines
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    delay,
    error,
    hang,
    reply,
    system_text,
    tool_call,
    tool_messages,
)
from tests.conftest import CONSOLE_CHAT as CHAT
from tests.conftest import AppFactory, ask, make_settings, write_runtime_config
from tests.crash_points import run_to_crash

LONG = "lorem ipsum dolor sit amet " * 40  # ~1,080 chars, ~270 tokens

# A summary may take half a second here (the bot waits 15 s).
QUICK_SUMMARIES = Tuning(compaction_calls=CompactionCalls(summary_timeout_seconds=0.5))


def is_summary_request(body: dict[str, object]) -> bool:
    return system_text(body).startswith("You compress a chat")


def is_flush_request(body: dict[str, object]) -> bool:
    return system_text(body).startswith("You keep an assistant's long-term memory")


def scripted_responder(body: dict[str, object]) -> object:
    if is_summary_request(body):
        return reply("SESSION INTENT: test\nSUMMARY: talked\nARTIFACTS: none\nNEXT STEPS: none")
    if is_flush_request(body):
        return reply("NO_REPLY")
    return reply("ok")


@pytest.fixture
async def app(make_app: AppFactory, openai_server: FakeOpenAIServer) -> App:
    openai_server.responder = scripted_responder
    return make_app({"compaction": {"maxContextTokens": 1000, "keepLastMessages": 4}})


def offloaded(app: App) -> list[dict[str, object]]:
    return read_jsonl(app.sessions.offload_path_for(CHAT.key)).records


async def test_auto_compaction_at_the_threshold_keeps_pairs_and_loses_nothing(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    # A tool call early on, so the cut has a pair to respect.
    openai_server.script(tool_call("datetime", {}), reply("noted the time"))
    sent = [f"message {i}: {LONG}".strip() for i in range(8)]
    for text in sent:
        assert await ask(app, text) in {"ok", "noted the time"}
    session = app.sessions.get(CHAT.key)
    assert session.messages[0]["role"] == "system"
    assert session.messages[0]["content"].startswith("[Conversation summary]\nSESSION INTENT")
    assert session.metadata["compactions"] >= 1
    # Every user message is in the session or, verbatim, in the offload log.
    everything = [m.get("content") for m in offloaded(app)] + [
        m.get("content") for m in session.messages
    ]
    assert all(text in everything for text in sent)
    # The fake server validates tool-call pairing on every request it gets (400 otherwise).
    assert not [r for r in openai_server.recorded_requests if r.rejected]
    summary_requests = [r for r in openai_server.requests if is_summary_request(r)]
    assert summary_requests and summary_requests[0]["temperature"] == 0.3
    assert summary_requests[0]["max_tokens"] == 500
    assert all(m["role"] != "tool" for m in summary_requests[0]["messages"][1:])


@pytest.mark.parametrize("failure", ["500", "timeout"])
async def test_summary_failure_still_compacts_and_points_at_the_log(
    workspace: Path, openai_server: FakeOpenAIServer, failure: str
) -> None:
    # The fake is a local server: the summary may take llm.requestTimeoutSeconds.
    write_runtime_config(
        workspace,
        {"llm": {"maxRetries": 0, "requestTimeoutSeconds": 0.5}, "compaction": {"enabled": False}},
    )
    app = build_app(make_settings(workspace, openai_server), tuning=QUICK_SUMMARIES)
    for i in range(12):
        await ask(app, f"note {i}")

    def failing(body: dict[str, object]) -> object:
        if is_summary_request(body):
            return error(500, "summary broke") if failure == "500" else hang()
        return reply("NO_REPLY")

    openai_server.responder = failing
    answer = await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    await app.close()
    assert answer.startswith("Compacted: removed 22 messages, kept last 2 (no summary: ")
    session = app.sessions.get(CHAT.key)
    head = session.messages[0]["content"]
    assert "No summary is available" in head and "console:local.log.jsonl" in head
    logged = [m["content"] for m in offloaded(app)]
    assert [f"note {i}" for i in range(11)] == [t for t in logged if t.startswith("note")]
    assert session.messages[1]["content"] == "note 11"


async def test_a_slow_home_server_gets_the_operators_time_for_the_summary(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # A small model on a one-request-at-a-time server takes longer than a hosted model's
    # summary may: the operator's llm.requestTimeoutSeconds applies, and the summary and
    # the facts of the compacted messages are kept.
    write_runtime_config(
        workspace,
        {"llm": {"maxRetries": 0, "requestTimeoutSeconds": 30}, "compaction": {"enabled": False}},
    )
    app = build_app(make_settings(workspace, openai_server), tuning=QUICK_SUMMARIES)
    for i in range(6):
        await ask(app, f"note {i}: my sister Ana visits in May")

    def slow(body: dict[str, object]) -> object:
        if is_summary_request(body):
            return delay(1.0, reply("The user's sister Ana visits in May."))
        return delay(1.0, reply("- Sister Ana visits in May"))

    openai_server.responder = slow
    answer = await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    await app.close()
    assert answer.startswith("Compacted with summary"), answer
    assert "sister Ana visits in May" in app.sessions.get(CHAT.key).messages[0]["content"]


async def test_a_failed_summary_keeps_the_one_before_it(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}, "compaction": {"enabled": False}})
    app = build_app(make_settings(workspace, openai_server), tuning=QUICK_SUMMARIES)
    for i in range(6):
        await ask(app, f"note {i}")

    def summarizing(body: dict[str, object]) -> object:
        if is_summary_request(body):
            return reply("The user is planning a trip to Lisbon in May.")
        return reply("NO_REPLY")

    openai_server.responder = summarizing
    await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    openai_server.responder = scripted_responder
    for i in range(6, 12):
        await ask(app, f"note {i}")
    # The next summary fails (a busy one-slot server times out): the gist so far stays.
    openai_server.responder = lambda body: (
        error(500, "summary broke") if is_summary_request(body) else reply("NO_REPLY")
    )
    answer = await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    await app.close()
    assert "no summary" in answer
    head = app.sessions.get(CHAT.key).messages[0]["content"]
    assert "planning a trip to Lisbon in May" in head
    assert "not summarized" in head and "console:local.log.jsonl" in head


async def test_a_summary_that_times_out_is_not_sent_again(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # A local model server keeps computing a request its client gave up on: a second copy
    # only doubles its work while the chat's next turn waits behind both.
    write_runtime_config(
        workspace, {"llm": {"requestTimeoutSeconds": 0.5}, "compaction": {"enabled": False}}
    )
    app = build_app(make_settings(workspace, openai_server), tuning=QUICK_SUMMARIES)
    for i in range(12):
        await ask(app, f"note {i}")
    openai_server.responder = lambda body: hang() if is_summary_request(body) else reply("NO_REPLY")
    answer = await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    await app.close()
    assert "no summary" in answer
    assert len([r for r in openai_server.requests if is_summary_request(r)]) == 1


async def test_compact_command_replies(workspace: Path, openai_server: FakeOpenAIServer) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    openai_server.responder = scripted_responder
    windows = ModelWindowStore.in_workspace(workspace)
    windows.put(openai_server.base_url, "gpt-4o-mini", ModelWindow(200_000, "overflow error"))
    app = build_app(
        make_settings(workspace, openai_server), tuning=Tuning(background_quiet_seconds=0)
    )
    answer = await app.commands.run(CHAT, ParsedCommand("compact", ""))
    assert answer == "Nothing to compact (session has 0 messages)."
    for i in range(3):
        await ask(app, f"short {i}")
    answer = await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    assert answer == "Compacted with summary: removed 4 messages, kept last 2."
    assert await app.commands.run(CHAT, ParsedCommand("compact", "100")) == (
        "Nothing to compact (session has 2 messages)."
    )
    for out_of_range in ("lots", "-5", "0", "101"):
        assert await app.commands.run(CHAT, ParsedCommand("compact", out_of_range)) == (
            "Usage: /compact [N] - keep the last N messages (1-100, default 10)."
        )
    assert len(app.sessions.get(CHAT.key).messages) == 3  # the summary and the last 2
    assert app.maintenance is not None
    await app.maintenance.maintain(CHAT.key)
    status = app.commands.status_text(CHAT)
    await app.close()
    # Every time /status shows reads the same way (it mixed 2026-11-27T23:54:04Z, a bare
    # date and 2026-11-27 23:51 UTC).
    times = re.findall(r"\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d)?(?: UTC|Z)?)?", status)
    assert len(times) == 3, status
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", t) for t in times), times
    assert f"Compactions: 1, last at {times[1]}" in status


async def test_session_tools_reach_into_the_offload_log(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    await ask(app, "the launch code is amber falcon")
    for i in range(5):
        await ask(app, f"filler {i}")
    await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    openai_server.script(
        tool_call("session_search", {"query": "launch code"}),
        tool_call("session_history", {"count": 12}),
        reply("found it"),
    )
    assert await ask(app, "what was the code?") == "found it"
    search = tool_messages(openai_server.requests[-2])[-1]["content"]
    assert "user: the launch code is amber falcon" in search
    history = tool_messages(openai_server.requests[-1])[-1]["content"]
    assert "user: what was the code?" in history
    assert "user: filler 1" in history  # compacted away, read back from the log


async def test_huge_tool_result_is_evicted_and_read_back_in_pages(
    openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    app = build_app(make_settings(workspace, openai_server))
    big = "".join(f"line {i:06d}\n" for i in range(18_200))  # 200,200 chars
    app.tools.register(Tool("dump", "dump a big log", NoArguments, lambda arguments, ctx: big))
    openai_server.script(tool_call("dump", {}, call_id="call_big"), reply("got it"))
    assert await ask(app, "dump it") == "got it"
    stored = workspace / "large_tool_results" / "console:local" / "call_big.txt"
    assert stored.read_text() == big
    kept = tool_messages(openai_server.requests[-1])[-1]["content"]
    assert len(kept) < 5_000 and "line 000000" in kept and "line 018199" in kept
    assert "large_tool_results/console:local/call_big.txt" in kept
    pages: list[str] = []
    offset = 0
    while True:
        openai_server.script(
            tool_call("read_tool_result", {"result_id": "call_big", "offset": offset}),
            reply("page read"),
        )
        await ask(app, "next page")
        page = tool_messages(openai_server.requests[-1])[-1]["content"]
        body, _, footer = page.rpartition("\n[characters ")
        pages.append(body)
        if "end of result" in footer:
            break
        assert "offset=" in footer, page[-300:]
        offset = int(footer.split("offset=")[1].rstrip("]"))
    await app.close()
    assert "".join(pages) == big


class NoArguments(BaseModel):
    pass


KILLER = """
import asyncio
from pathlib import Path
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.conversation.session import SessionStore
from mnemobot.systems.compaction.compactor import Compactor
from mnemobot.systems.core.llm import LLMError, LLMFailureKind

class Down:
    async def complete(self, request):
        raise LLMError(LLMFailureKind.UNAVAILABLE, "down")

async def main():
    store = SessionStore(Path(sys.argv[1]))
    compactor = Compactor(Down(), store, None, chat_model_for=lambda c: "m")
    session = store.get("console:local")
    for i in range(1, 9):
        session.messages.append({"role": "user", "content": f"{sys.argv[2]}-{i} " + "x" * 5000})
        store.save(session)
        if i == 8:
            arm()  # the compaction's offload to the log, or its session save, dies
        await compactor.compact(session, keep_last=3, config=RuntimeConfig(), scope="s")

asyncio.run(main())
"""


def test_a_kill_between_offload_and_save_loses_no_message(tmp_path: Path) -> None:
    # One workspace through three crashes: right after the offload (the session still
    # holds what the log now has too), with half the session written, and just before
    # the new session replaces the old. Each restart compacts what the last one left.
    for attempt, point in enumerate(("after-append", "mid-write", "before-replace")):
        run_to_crash(KILLER, point, str(tmp_path), f"a{attempt}")
        store = SessionStore(tmp_path)
        session = store.get("console:local")
        logged = read_jsonl(store.offload_path_for("console:local")).records

        def labels(messages: list[dict[str, object]]) -> list[str]:
            return [str(m["content"]).split()[0] for m in messages if m["role"] == "user"]

        seen = {
            int(label.split("-")[1])
            for label in labels([*logged, *session.messages])
            if label.startswith(f"a{attempt}-")
        }
        assert seen == set(range(1, 9)), "a message went missing"
        assert len(labels(logged)) == len(set(labels(logged))), "a message was logged twice"
    json.loads((tmp_path / "console:local.json").read_text())


async def test_flush_writes_new_facts_to_memory_and_the_daily_note(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}, "compaction": {"enabled": False}})
    app = build_app(
        make_settings(workspace, openai_server), tuning=Tuning(background_quiet_seconds=0)
    )
    for i in range(6):
        await ask(app, f"chatting about the boat trip, part {i}")
    seen_known: list[str] = []

    def flush_aware(body: dict[str, object]) -> object:
        if is_flush_request(body):
            seen_known.append(str(body["messages"][1]["content"]))  # type: ignore[index]
            return reply(
                "- The user's boat is named Kestrel\n"
                "- [procedure] Restart the bilge pump by holding reset for 5 seconds"
            )
        return scripted_responder(body)

    openai_server.responder = flush_aware
    assert (await app.commands.run(CHAT, ParsedCommand("compact", "2"))).startswith(
        "Compacted with summary"
    )
    # After the reply on this local (one-slot) server.
    assert app.maintenance is not None
    await app.maintenance.settled()
    await app.close()
    assert "KNOWN MEMORY" in seen_known[0] and "boat trip, part 0" in seen_known[0]
    items = workspace / "memory" / "console:local" / "items"
    assert "Kestrel" in (items / "semantic.jsonl").read_text()
    assert "bilge pump" in (items / "procedural.jsonl").read_text()
    notes = "".join(p.read_text() for p in (workspace / "memory" / "console:local").glob("*.md"))
    # The model wrote it down from the conversation: the note does not say the user said it.
    assert "Noted from the conversation: The user's boat is named Kestrel" in notes
    pack = app.memory.recall.build_pack(
        "console:local",
        "what is my boat called",
        now=9e9,
        config=app.assistant.config().memory,
        tz=None,
    )
    assert "Kestrel" in pack.rendered


def test_a_groups_summary_and_flush_see_who_wrote_each_message() -> None:
    # Compaction crosses the group speakers: once summarized, whose words were whose must
    # survive, or the facts flushed from a group lose their owner.
    lines = transcript_lines(
        [
            {"role": "user", "content": "my locker code is QX-7731", "from": "Alex"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "mine is 4410"},
        ],
        200,
        tools=False,
    )
    assert lines == [
        "user (Alex): my locker code is QX-7731",
        "assistant: Noted.",
        "user: mine is 4410",
    ]
