"""Consolidation of a chat's MEMORY.md with the fake OpenAI server as the model."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import time
from datetime import date
from pathlib import Path

import pytest
from filelock import FileLock

from mnemobot.bot.app import App, build_app
from mnemobot.bot.cli.main import main
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.memory.notes.daily_notes import write_memory_file
from mnemobot.memory.notes.memory_rewrite import parse_rewrite
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.consolidation import consolidate_scope
from mnemobot.memory.upkeep.maintenance import MaintenanceReport, StepResult
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, error, hang, reply, user_texts
from tests.conftest import CONSOLE_CHAT, AppFactory, ask, make_settings, write_runtime_config

SCOPE = "telegram:1001"
OTHER = "telegram:2002"
OLD_MEMORY = (
    "## About the user\n- Has a cat named Miso\n- Works as a nurse\n- Plays the cello on Sundays\n"
)


def consolidate_step(report: MaintenanceReport) -> StepResult:
    return next(step for step in report.steps if step.name == "consolidate")


def scope_paths(workspace: Path, scope: str = SCOPE) -> ScopePaths:
    return ScopePaths(workspace, scope)


def write_note(workspace: Path, scope: str, day: str, *lines: str) -> Path:
    path = scope_paths(workspace, scope).daily_note(date.fromisoformat(day))
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{line}\n" for line in lines)
    if path.exists():
        path.write_text(path.read_text() + body)
    else:
        path.write_text(f"# {day}\n\n{body}")
    return path


def maintain_cli(workspace: Path, server: FakeOpenAIServer, *args: str) -> tuple[int, str]:
    """`mnemobot memory maintain ARGS` in this process; (exit code, stdout)."""
    os.environ.update(
        BOT_WORKSPACE=str(workspace), OPENAI_API_KEY="test", OPENAI_BASE_URL=server.base_url
    )
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["memory", "maintain", *args])
        return code, out.getvalue()
    finally:
        for name in ("BOT_WORKSPACE", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
            os.environ.pop(name, None)


def consolidation_requests(server: FakeOpenAIServer) -> list[str]:
    """The material (user message) of every consolidation request, oldest first."""
    return [
        user_texts(r)[-1]
        for r in server.requests
        if "MEMORY.md" in r["messages"][0]["content"] and "CURRENT MEMORY.md" in user_texts(r)[-1]
    ]


def say(workspace: Path, server: FakeOpenAIServer, text: str) -> None:
    """One turn of the console chat, through the whole bot, in a bot run of its own."""

    async def turn() -> None:
        app = build_app(make_settings(workspace, server))
        try:
            await ask(app, text)
        finally:
            await app.close()

    asyncio.run(turn())


def test_paris_then_berlin_leaves_berlin_in_memory(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    say(workspace, openai_server, "I live in Paris")
    openai_server.script(reply("## About the user\n- Lives in Paris\n\n## Superseded\n- none"))
    code, out = maintain_cli(workspace, openai_server, "--chat", "console:local")
    assert code == 0, out
    steps = out.splitlines()
    assert [line.split(": ")[1] for line in steps] == [
        "erase forgotten",
        "consolidate",
        "archive notes",
        "prune sessions",
        "reindex",
        "digest days",
        "embed items",
    ]
    assert "rewrote MEMORY.md" in steps[1]
    say(workspace, openai_server, "I moved to Berlin")
    openai_server.script(
        reply(
            "## About the user\n- Lives in Berlin (earlier: Paris)\n\n## Superseded\n"
            "- Lives in Paris"
        )
    )
    code, out = maintain_cli(workspace, openai_server, "--chat", "console:local")
    assert code == 0 and "1 superseded" in out
    first, second = consolidation_requests(openai_server)
    assert "I live in Paris" in first
    # The second run reads the current file and only what is newer than the watermark.
    assert "- Lives in Paris" in second and "I moved to Berlin" in second
    assert "I live in Paris" not in second
    memory = (workspace / "memory" / "console:local" / "MEMORY.md").read_text()
    assert "Berlin" in memory and "Lives in Paris" not in memory
    archived = list((workspace / "memory" / "console:local" / "archive").glob("MEMORY.*.md"))
    assert len(archived) == 1 and "- Lives in Paris" in archived[0].read_text()


@pytest.fixture
async def app(make_app: AppFactory) -> App:
    # A MEMORY.md rewrite is a model call like any other: llm.requestTimeoutSeconds.
    # Sent as soon as the server is free: the quiet spell after a turn has its own test.
    return make_app(
        {"llm": {"requestTimeoutSeconds": 0.5}}, tuning=Tuning(background_quiet_seconds=0)
    )


def seed_scope(workspace: Path) -> ScopePaths:
    paths = scope_paths(workspace)
    paths.directory.mkdir(parents=True)
    paths.memory_file.write_text(OLD_MEMORY)
    write_note(workspace, SCOPE, "2026-11-20", "[10:00] User: my sister Ana visits in May")
    return paths


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (reply("I'm sorry, I can't help with that."), "no bullet entries"),
        (reply(""), "empty file"),
        (reply("- a fact that goes on\n" * 1_000), "over the cap of 4000"),
        (reply("## About\n- Has a cat", finish_reason="length"), "cut off"),
        (hang(), "did not answer within 0.5 s"),
        (error(500, "boom"), "the model call failed"),
        (reply("- Sister Ana visits in May"), "drops 3 of 3 entries"),
        # A model that answers with what it was given (found live with an echoing model;
        # a weak local one off its format does the same): the prompt as the new file.
        (
            reply(
                "CURRENT MEMORY.md:\n"
                + OLD_MEMORY
                + "\nNEW CONVERSATION NOTES:\n- [10:00] User: my sister Ana visits in May"
            ),
            "the model answered with what it was given",
        ),
    ],
    ids=["garbage", "empty", "huge", "cut-off", "timeout", "server-error", "loss", "echo"],
)
async def test_a_bad_rewrite_changes_nothing_and_is_retried(
    make_app: AppFactory,
    workspace: Path,
    openai_server: FakeOpenAIServer,
    answer: object,
    why: str,
) -> None:
    # Half a second for the model that hangs; the others, streamed from a local server
    # (a rewrite gives way to replies), may take longer than that to arrive.
    timeout = 0.5 if "did not answer" in why else 30
    app = make_app({"llm": {"requestTimeoutSeconds": timeout}})
    paths = seed_scope(workspace)
    assert app.maintenance is not None
    openai_server.script(answer)  # type: ignore[arg-type]
    report = await app.maintenance.maintain(SCOPE)
    line = consolidate_step(report).line
    assert line.startswith("rejected: ") and why in line, line
    assert paths.memory_file.read_text() == OLD_MEMORY
    assert not (paths.directory / ".consolidation_state").exists()
    assert not (paths.directory / "archive").exists()
    # The next run reads the same material again and may succeed.
    openai_server.script(reply(OLD_MEMORY + "- Sister Ana visits in May\n## Superseded\n- none"))
    report = await app.maintenance.maintain(SCOPE)
    line = consolidate_step(report).line
    assert line.startswith("rewrote MEMORY.md"), line
    assert "sister Ana visits in May" in consolidation_requests(openai_server)[-1]
    assert "Ana visits in May" in paths.memory_file.read_text()


@pytest.mark.parametrize(
    "answer", ["1. The new file is:\n(empty)", "- Here is the memory file:\n- (empty)"]
)
async def test_a_first_rewrite_that_is_no_memory_file_is_rejected(
    app: App, workspace: Path, openai_server: FakeOpenAIServer, answer: str
) -> None:
    # Found live with SmolLM2 on a chat with no MEMORY.md yet: "1. The new file is:" over
    # the prompt's "(empty)" became the file every later request of the chat carried.
    paths = scope_paths(workspace)
    paths.directory.mkdir(parents=True)
    write_note(workspace, SCOPE, "2026-11-20", "[10:00] User: my sister Ana visits in May")
    assert app.maintenance is not None
    openai_server.script(reply(answer))
    line = consolidate_step(await app.maintenance.maintain(SCOPE)).line
    assert line.startswith("rejected: "), line
    assert not paths.memory_file.exists()


async def test_dropping_entries_needs_them_named_as_superseded(
    app: App, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    paths = seed_scope(workspace)
    superseded: list[tuple[str, list[str]]] = []
    assert app.maintenance is not None
    app.maintenance.on_superseded = lambda scope, entries, at: superseded.append((scope, entries))
    kept = "## About the user\n- Works as a nurse\n- Sister Ana visits in May\n"
    openai_server.script(reply(kept))
    report = await app.maintenance.maintain(SCOPE)
    assert "drops 2 of 3 entries" in consolidate_step(report).line
    assert paths.memory_file.read_text() == OLD_MEMORY and not superseded
    openai_server.script(
        reply(kept + "\n## Superseded\n- Has a cat named Miso\n- Plays the cello on Sundays")
    )
    report = await app.maintenance.maintain(SCOPE)
    assert "3 -> 2 entries, 2 superseded" in consolidate_step(report).line
    assert paths.memory_file.read_text() == kept
    assert superseded == [(SCOPE, ["Has a cat named Miso", "Plays the cello on Sundays"])]


async def test_nothing_new_means_no_model_call(
    app: App, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    seed_scope(workspace)
    assert app.maintenance is not None
    openai_server.script(reply(OLD_MEMORY + "- Sister Ana visits in May\n"))
    await app.maintenance.maintain(SCOPE)
    calls = len(openai_server.requests)
    report = await app.maintenance.maintain(SCOPE)
    assert consolidate_step(report).line == "nothing new since the last run"
    assert len(openai_server.requests) == calls


async def test_one_chats_consolidation_reads_nothing_of_another(
    app: App, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_note(workspace, SCOPE, "2026-11-20", "[10:00] User: my locker code is 4711")
    write_note(workspace, OTHER, "2026-11-20", "[10:00] User: my password is swordfish")
    scope_paths(workspace, OTHER).memory_file.write_text("- Bob keeps bees\n")
    (workspace / "memory" / "MEMORY.md").write_text("- operator notes\n")
    openai_server.responder = lambda body: reply("- a fact\n")
    assert app.maintenance is not None
    await app.maintenance.maintain(SCOPE)
    (request,) = consolidation_requests(openai_server)
    assert "4711" in request
    assert "swordfish" not in request and "bees" not in request and "operator" not in request
    # Every scope at once: each request still holds one scope only.
    await app.maintenance.maintain_all()
    requests = consolidation_requests(openai_server)[1:]
    assert len(requests) == 1 and "swordfish" in requests[0] and "4711" not in requests[0]
    assert (workspace / "memory" / "MEMORY.md").read_text() == "- operator notes\n"


def test_history_lists_versions_and_restore_puts_one_back(
    workspace: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = seed_scope(workspace)
    openai_server.script(
        reply(
            "- Has a cat named Miso\n- Works as a nurse\n- Plays the cello\n"
            "- Sister Ana visits in May\n"
        )
    )
    assert maintain_cli(workspace, openai_server, "--chat", SCOPE)[0] == 0
    write_note(workspace, SCOPE, "2026-11-21", "[09:00] User: Ana cancelled her visit")
    openai_server.script(
        reply(
            "- Has a cat named Miso\n- Works as a nurse\n- Plays the cello\n"
            "## Superseded\n- Sister Ana visits in May"
        )
    )
    assert maintain_cli(workspace, openai_server, "--chat", SCOPE)[0] == 0
    os.environ["BOT_WORKSPACE"] = str(workspace)
    try:
        capsys.readouterr()
        assert main(["memory", "history", "--chat", SCOPE]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith("current  3 entries")
        versions = [line.split()[0] for line in out[1:]]
        assert len(versions) == 2 and versions == sorted(versions, reverse=True)
        oldest = versions[-1]
        assert main(["memory", "restore", "--chat", SCOPE, oldest]) == 0
        assert paths.memory_file.read_text() == OLD_MEMORY
        assert len(list((paths.directory / "archive").glob("MEMORY.*.md"))) == 3
        assert main(["memory", "restore", "--chat", SCOPE, "20000101T000000Z"]) == 2
        assert "memory history --chat" in capsys.readouterr().err
    finally:
        os.environ.pop("BOT_WORKSPACE", None)


def test_a_memory_tool_append_during_a_run_is_kept(workspace: Path) -> None:
    paths = seed_scope(workspace)

    def complete(instructions: str, material: str) -> str:
        # The memory tool appends while the model is still writing.
        write_memory_file(paths.memory_file, "- Likes jazz", append=True, max_chars=40_000)
        return OLD_MEMORY + "- Sister Ana visits in May\n"

    outcome = consolidate_scope(paths, complete=complete, items=list, now=time.time())
    assert outcome.changed, outcome.line
    text = paths.memory_file.read_text()
    assert "- Likes jazz" in text and "Ana visits in May" in text


async def test_a_scope_is_never_maintained_twice_at_once(app: App, workspace: Path) -> None:
    paths = seed_scope(workspace)
    # Another process (a `mnemobot memory maintain`) holds the scope.
    with FileLock(paths.directory / ".maintenance.lock"):
        assert app.maintenance is not None
        report = await app.maintenance.maintain(SCOPE)
    assert report.skipped and not report.steps
    assert paths.memory_file.read_text() == OLD_MEMORY


def test_retention_archives_old_notes_and_deletes_old_sessions(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"memory": {"consolidation": {"enabled": False}}})
    old_day = time.strftime("%Y-%m-%d", time.localtime(time.time() - 100 * 86_400))
    new_day = time.strftime("%Y-%m-%d", time.localtime(time.time() - 10 * 86_400))
    old_note = write_note(workspace, SCOPE, old_day, "[10:00] User: long ago")
    new_note = write_note(workspace, SCOPE, new_day, "[10:00] User: lately")
    sessions = workspace / "sessions"
    sessions.mkdir()
    stale = time.time() - 200 * 86_400
    for name in (f"{SCOPE}.json", f"{SCOPE}.log.jsonl", f"{SCOPE}:77.json", f"{OTHER}.json"):
        (sessions / name).write_text("{}")
        os.utime(sessions / name, (stale, stale))
    (sessions / f"{SCOPE}:78.json").write_text("{}")  # a topic still in use
    code, out = maintain_cli(workspace, openai_server, "--chat", SCOPE)
    assert code == 0, out
    assert "archive notes: archived 1 note older than 90 days" in out
    assert "prune sessions: deleted 2 sessions, 1 offload log" in out
    assert not old_note.exists() and new_note.exists()
    assert (scope_paths(workspace).directory / "archive" / old_note.name).exists()
    left = sorted(p.name for p in sessions.iterdir())
    assert left == [f"{SCOPE}:78.json", f"{OTHER}.json"]
    # 0 keeps everything.
    write_runtime_config(
        workspace,
        {"memory": {"sessionRetentionDays": 0, "consolidation": {"enabled": False}}},
    )
    code, out = maintain_cli(workspace, openai_server, "--chat", OTHER)
    assert "kept all (memory.sessionRetentionDays is 0)" in out
    assert (sessions / f"{OTHER}.json").exists()
    assert not openai_server.requests


async def test_status_shows_the_last_maintenance(
    app: App, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    chat = ChatRef("telegram", "1001", user_id="1001")
    assert "Maintenance: not run yet" in app.commands.status_text(chat)
    seed_scope(workspace)
    openai_server.script(reply(OLD_MEMORY + "- Sister Ana visits in May\n"))
    assert app.maintenance is not None
    await app.maintenance.maintain(SCOPE)
    status = app.commands.status_text(chat)
    assert "Maintenance: last run " in status and "consolidate: rewrote MEMORY.md" in status
    assert "reindex: " in status


async def test_a_compaction_starts_maintenance_once_per_half_hour(
    app: App, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    app.start_background()
    assert app.maintenance is not None
    for text in ("I live in Paris", "I like tea", "I have a dog"):
        await ask(app, text)
    last = workspace / "memory" / "console:local" / ".maintenance_last.json"
    await app.commands.run(CONSOLE_CHAT, ParsedCommand("compact", "1"))
    await app.maintenance.settled()
    first = json.loads(last.read_text())
    assert [s["name"] for s in first["steps"]][:2] == ["erase forgotten", "consolidate"]
    await ask(app, "I have a cat too")
    await ask(app, "and a bird")
    await app.commands.run(CONSOLE_CHAT, ParsedCommand("compact", "1"))
    # A run this compaction started would have ended (and written its report) by now.
    await app.maintenance.settled()
    assert json.loads(last.read_text())["at"] == first["at"]
    assert len(consolidation_requests(openai_server)) == 1


def test_bench_consolidation_counts_calls_and_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [
        {"speaker": "A" if n % 2 == 0 else "B", "dia_id": f"D1:{n}", "text": f"line {n} " * 20}
        for n in range(40)
    ]
    data = tmp_path / "conversations.json"
    data.write_text(json.dumps([{"conversation": {"session_1": turns}}]))
    assert main(["bench", "consolidation", str(data), "--every", "10", "20", "--json"]) == 0
    every_10, every_20 = json.loads(capsys.readouterr().out)
    assert every_10["turns"] == 20 and every_10["calls"] == 2 and every_20["calls"] == 1
    assert every_10["per100Turns"]["calls"] == 10
    assert every_10["input_tokens"] > every_20["input_tokens"] > 20 * 40


async def test_the_tick_maintains_every_scope_and_stopping_cancels_a_waiting_run(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    app = build_app(
        make_settings(workspace, openai_server), tuning=Tuning(maintenance_interval_hours=1e-4)
    )
    paths = seed_scope(workspace)
    other = scope_paths(workspace, OTHER)
    write_note(workspace, OTHER, "2026-11-20", "[10:00] User: I keep bees")
    other.memory_file.write_text("- Bob\n")
    openai_server.script(reply(OLD_MEMORY + "- Sister Ana visits in May\n"), hang())
    app.start_background()
    try:
        for _ in range(300):
            if len(consolidation_requests(openai_server)) == 2:
                break
            await asyncio.sleep(0.02)
        assert len(consolidation_requests(openai_server)) == 2
    finally:
        started = time.monotonic()
        await app.close()
    # The bot stops at once, though the model never answers the second scope's run.
    assert time.monotonic() - started < 5
    assert "Ana visits in May" in paths.memory_file.read_text()
    assert other.memory_file.read_text() == "- Bob\n"
    assert not (other.directory / ".consolidation_state").exists()


@pytest.mark.parametrize(
    ("answer", "memory", "superseded"),
    [
        ("- Lives in Berlin\n\n## Superseded\n- none", "- Lives in Berlin", []),
        (
            "Here is the updated MEMORY.md:\n\n```markdown\n## About\n- Lives in Berlin\n```\n"
            "Superseded: Lives in Paris",
            "## About\n- Lives in Berlin",
            ["Lives in Paris"],
        ),
        ("- a\n**Superseded:**\n- b\n- c", "- a", ["b", "c"]),
    ],
    ids=["plain", "fenced-with-preface", "bold-heading"],
)
def test_the_rewrite_and_its_superseded_entries_are_read_from_common_answer_shapes(
    answer: str, memory: str, superseded: list[str]
) -> None:
    rewrite = parse_rewrite(answer)
    assert (rewrite.memory, rewrite.superseded) == (memory, superseded)
