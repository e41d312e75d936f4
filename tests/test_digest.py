"""The dated digest: per day, what was said, for questions over the whole history.

"In what order did I bring up the schema, the caching and the deployment?" needs a line of
each of three days; the messages themselves are long (a plan, a schema) and a tight pack
held one or two of them. Each finished day gets a digest in the background (maintenance,
or the end of an import), never while a reply waits; the model, when there is one, adds a
summary of the day; forgetting a message takes its line out of its day's digest."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mnemobot.bot.app import build_app
from mnemobot.bot.cli.main import main
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.notes.digests import is_span_question
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.upkeep.digest_days import (
    DIGEST_MAX_LINES,
    SUMMARY_INSTRUCTIONS,
    digest_content,
)
from mnemobot.memory.upkeep.maintenance import MAINTENANCE_STEPS
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    error,
    reply,
    user_texts,
)
from tests.conftest import CONSOLE_CHAT, make_settings, write_runtime_config
from tests.telegram_exports import export_message

CHAT = "telegram:555"
# The forgotten code as a number of its own: the item files' ids and hashes are hex, and
# in about one run of 120 one of the run's fifteen random ids holds "4711".
FORGOTTEN_CODE = re.compile(r"(?<![0-9a-f])4711(?![0-9a-f])")
ORDER_QUESTION = (
    "In what order did I bring up the database schema, the caching and the deployment "
    "of the budget tracker app?"
)


def filler(topic: str) -> str:
    """The rest of a long message, as people write them to an assistant about a project."""
    return " ".join(
        f"Step {n} of the {topic} touches another corner of the app." for n in range(40)
    )


class Ran:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """`mnemobot ARGS` in this process, with no model unless a server is given."""

    def _run(workspace: Path, *args: str, server: FakeOpenAIServer | None = None) -> Ran:
        monkeypatch.setenv("BOT_WORKSPACE", str(workspace))
        monkeypatch.setenv("BOT_TIMEZONE", "UTC")
        if server is None:
            monkeypatch.delenv("OPENAI_API_KEY", raising=False)
            monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        else:
            monkeypatch.setenv("OPENAI_API_KEY", "test")
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(list(args))
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return _run


def _message(message_id: int, day: int, minute: int, author: str, text: str) -> dict[str, Any]:
    return export_message(message_id, datetime(2025, 3, day, 9, minute, tzinfo=UTC), author, text)


# Day 2: the schema; day 5: caching; day 9: deployment (with a locker code); day 12: a cat.
PROJECT = [
    _message(
        1,
        2,
        0,
        "Ada",
        f"Let's begin the budget tracker app with the database schema. {filler('tables')}",
    ),
    _message(
        2, 2, 1, "Bot", f"Here is a first schema for the budget tracker app. {filler('columns')}"
    ),
    _message(
        3,
        5,
        0,
        "Ada",
        f"Next I want caching for the budget tracker app in Redis. {filler('cache keys')}",
    ),
    _message(4, 5, 1, "Bot", f"A caching plan for the budget tracker app. {filler('expiry')}"),
    _message(
        5,
        9,
        0,
        "Ada",
        f"Now the deployment of the budget tracker app with Docker. {filler('containers')}",
    ),
    _message(
        6, 9, 1, "Bot", f"The deployment steps for the budget tracker app. {filler('images')}"
    ),
    _message(7, 9, 2, "Ada", "The server room locker code is 4711, keep it handy."),
    _message(8, 12, 0, "Ada", "My cat Miso knocked a plant off the shelf."),
]


def _imported(tmp_path: Path, run, soft_budget: int = 500) -> Path:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws"
    write_runtime_config(
        workspace,
        {
            # A failed call is not tried again: the test sees it.
            "llm": {"maxRetries": 0},
            "memory": {
                "softPromptBudgetTokens": soft_budget,
                "maxPromptBudgetTokens": soft_budget,
                "consolidation": {"enabled": False},
            },
        },
    )
    export = tmp_path / "result.json"
    export.write_text(
        json.dumps({"name": "Ada", "type": "personal_chat", "id": 555, "messages": PROJECT})
    )
    done = run(workspace, "memory", "import", str(export), "--chat", CHAT, "--assistant", "Bot")
    assert done.code == 0, done.err
    return workspace


def _pack(workspace: Path, run, question: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    done = run(workspace, "memory", "pack", question, "--chat", CHAT, "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def _refs(pack: dict[str, Any]) -> set[str]:
    return {ref for item in pack["items"] for ref in item["references"]}


def _digests(workspace: Path) -> list[MemoryItem]:
    memory = WorkspaceMemory.open(workspace)
    try:
        found = [i for i in memory.scopes.store(CHAT).items.values() if i.type is ItemType.DIGEST]
    finally:
        memory.close()
    return sorted(found, key=lambda item: item.created_at)


def test_a_question_over_the_history_gets_a_line_of_each_day_in_order(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
) -> None:
    workspace = _imported(tmp_path, run)
    pack = _pack(workspace, run, ORDER_QUESTION)
    # All three days' messages, though three of them would not fit in 500 tokens.
    assert {"tg-export:1", "tg-export:3", "tg-export:5"} <= _refs(pack)
    rendered = pack["rendered"]
    where = [rendered.index(f"[tg-export:{n}, tg-export:{n + 1}] Ada:") for n in (1, 3, 5)]
    assert where == sorted(where)
    assert "2025-03-02: Digest of the day" in rendered
    assert pack["diagnostics"]["totalTokens"] <= 500
    # The cat's day says nothing the question asks about: not shown.
    assert "Miso" not in rendered
    # Another question pays nothing for the digests: its matching turns say it.
    other = _pack(workspace, run, "Which database do we use for the budget tracker app?")
    assert "Digest" not in other["rendered"]


def test_days_are_digested_in_the_background_not_while_a_reply_waits(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
    openai_server: FakeOpenAIServer,
) -> None:
    workspace = tmp_path / "ws"
    write_runtime_config(workspace, {"memory": {"consolidation": {"enabled": False}}})
    config = MemoryConfig()
    memory = WorkspaceMemory.open(workspace)
    said = [
        (datetime(2025, 3, 2, 9, tzinfo=UTC).timestamp(), "Let's plan the database schema."),
        (datetime(2025, 3, 5, 9, tzinfo=UTC).timestamp(), "Now the caching layer, please."),
        (time.time(), "And today: the deployment scripts."),
    ]
    try:
        for number, (at, text) in enumerate(said, start=1):
            memory.record.record_turn(
                scope=CHAT,
                user_text=text,
                assistant_text="Noted.",
                at=at,
                config=config,
                tz=UTC,
                message_refs=[f"tg:{number}"],
                speaker="Ada",
            )
        # What a turn writes holds no digest: the reply never waited for one.
        assert not [
            i for i in memory.scopes.store(CHAT).items.values() if i.type is ItemType.DIGEST
        ]
    finally:
        memory.close()
    # Newest day first.
    openai_server.script(reply("Planned caching."), reply("Planned the database schema."))
    done = run(workspace, "memory", "maintain", "--chat", CHAT, server=openai_server)
    assert done.code == 0, done.err
    assert f"{CHAT}: digest days: wrote 2 day digests, summarized 2" in done.out
    days = _digests(workspace)
    # The finished days only: today goes on.
    assert [d.content.splitlines()[0] for d in days] == [
        "Digest of 2025-03-02 (1 turn):",
        "Digest of 2025-03-05 (1 turn):",
    ]
    assert days[0].content.splitlines()[1:] == [
        "Summary: Planned the database schema.",
        "- [tg:1] Ada: Let's plan the database schema. / Assistant: Noted.",
    ]
    again = run(workspace, "memory", "maintain", "--chat", CHAT, server=openai_server)
    assert "digest days: wrote 0 day digests, summarized 0" in again.out


def test_a_forgotten_message_leaves_its_days_digest_and_every_file(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
    openai_server: FakeOpenAIServer,
) -> None:
    workspace = _imported(tmp_path, run)
    memory = WorkspaceMemory.open(workspace)
    try:
        outcome = memory.forget.forget_matching(CHAT, "locker code")
        assert outcome.items
    finally:
        memory.close()
    day = next(d for d in _digests(workspace) if "2025-03-09" in d.content)
    # The day keeps its digest, without the forgotten line.
    assert "4711" not in day.content and "locker" not in day.content
    assert "[tg-export:5, tg-export:6] Ada: Now the deployment" in day.content
    assert "tg-export:7" not in day.references
    openai_server.script(*(reply(f"Day {n} went fine.") for n in range(4)))
    done = run(workspace, "memory", "maintain", "--chat", CHAT, server=openai_server)
    assert done.code == 0, done.err
    items = workspace / "memory" / CHAT / "items"
    for path in items.rglob("*.jsonl"):
        text = path.read_text()
        assert "locker" not in text and not FORGOTTEN_CODE.search(text), path
    pack = _pack(workspace, run, ORDER_QUESTION)
    assert "tg-export:7" not in _refs(pack) and "tg-export:5" in _refs(pack)


def test_with_a_model_each_day_gets_a_summary_in_the_background(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
    openai_server: FakeOpenAIServer,
) -> None:
    workspace = _imported(tmp_path, run)
    openai_server.script(
        reply("Ada's cat Miso knocked a plant off a shelf."),
        reply("Deployment of the budget tracker app with Docker was planned."),
        error(500, "the model is down"),
    )
    done = run(workspace, "memory", "maintain", "--chat", CHAT, server=openai_server)
    assert done.code == 0, done.err
    line = next(x for x in done.out.splitlines() if "digest days" in x)
    assert "rejected:" in line and "summarized 2" in line
    asked = [
        r for r in openai_server.requests if r["messages"][0]["content"] == SUMMARY_INSTRUCTIONS
    ]
    # Newest day first, each with that day's messages as the material.
    assert "Miso" in user_texts(asked[0])[-1]
    assert "deployment of the budget tracker app" in user_texts(asked[1])[-1]
    assert "caching" in user_texts(asked[2])[-1] and "deployment" not in user_texts(asked[2])[-1]
    by_day = {d.content.splitlines()[0][10:20]: d for d in _digests(workspace)}
    assert by_day["2025-03-09"].content.splitlines()[1] == (
        "Summary: Deployment of the budget tracker app with Docker was planned."
    )
    # The failed day stays extractive, summarized at a later run.
    assert "Summary:" not in by_day["2025-03-05"].content
    pack = _pack(workspace, run, ORDER_QUESTION)
    assert "Summary: Deployment of the budget tracker app" in pack["rendered"]


@pytest.mark.parametrize(
    "question",
    [
        "Can you summarize how my project went?",
        "What have we covered so far?",
        "В каком порядке я упоминал эти задачи?",
        "Fasse bitte zusammen, was wir besprochen haben.",
        "¿En qué orden hablamos de las tareas?",
        "¿Me haces un resumen de lo que hablamos?",
        "总结一下我们的进展",
    ],
)
def test_questions_over_the_history_are_known_in_each_language(question: str) -> None:
    assert is_span_question(question)


@pytest.mark.parametrize(
    "question",
    [
        "What is my cat's name?",
        "Which database did we pick?",
        "Wie spät ist es?",
        "When did I resume playing the drums?",
    ],
)
def test_other_questions_are_not_taken_for_questions_over_the_history(question: str) -> None:
    assert not is_span_question(question)


def test_a_busy_days_digest_stays_within_its_size() -> None:
    start = datetime(2025, 3, 2, tzinfo=UTC).timestamp()
    turns = [
        MemoryItem(
            id=f"t{n}",
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title="",
            content=f"Bo: message {n} " + "x" * 5_000,
            scope=CHAT,
            created_at=start + n,
            updated_at=start + n,
            references=[f"tg:{n}"],
        )
        for n in range(DIGEST_MAX_LINES + 500)
    ]
    made = digest_content("2025-03-02", turns)
    assert made is not None
    content, refs = made
    assert content.splitlines()[0] == "Digest of 2025-03-02 (1500 turns, the first 1000 listed):"
    assert len(content) < 200 * DIGEST_MAX_LINES and len(refs) == DIGEST_MAX_LINES


def test_nothing_new_leaves_a_resting_scope_unloaded(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
    openai_server: FakeOpenAIServer,
) -> None:
    workspace = _imported(tmp_path, run)
    first = run(workspace, "memory", "maintain", "--chat", CHAT, server=openai_server)
    assert "digest days: wrote 0 day digests, summarized 4" in first.out  # the import wrote them
    again = run(workspace, "memory", "maintain", "--chat", CHAT, server=openai_server)
    assert "digest days: nothing new since" in again.out
    assert os.path.exists(workspace / "memory" / CHAT / ".digests_through")


def test_forgetting_a_days_digest_keeps_the_days_messages(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
) -> None:
    workspace = _imported(tmp_path, run)
    day = next(d for d in _digests(workspace) if "2025-03-09" in d.content)
    memory = WorkspaceMemory.open(workspace)
    try:
        assert memory.forget.forget(CHAT, day.id) == [day.id]
        left = memory.scopes.store(CHAT).items.values()
        assert {"tg-export:5", "tg-export:7"} <= {ref for item in left for ref in item.references}
    finally:
        memory.close()
    assert not [d for d in _digests(workspace) if "2025-03-09" in d.content]


def test_a_digest_never_takes_a_messages_place_in_a_search(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
) -> None:
    # A day's list of everything said matches more words than any one message: among the
    # items a question is matched against, it pushed the messages out.
    workspace = _imported(tmp_path, run)
    done = run(workspace, "memory", "search", "deployment caching schema", "--chat", CHAT, "--json")
    assert done.code == 0, done.err
    found = json.loads(done.out)
    assert found and all(hit["type"] == "TURN" for hit in found)
    memory = WorkspaceMemory.open(workspace)
    try:
        forgotten = memory.forget.forget_matching(CHAT, "locker code")
        assert forgotten.items  # the day's digest is written anew, into a loaded scope
        again = memory.recall.search(CHAT, "deployment Docker", config=MemoryConfig(), tz=UTC)
        assert again and all(item.type is ItemType.TURN for item, _ in again)
    finally:
        memory.close()


async def test_a_days_summary_gives_way_to_a_reply_and_is_logged_as_what_it_is(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A one-slot home server writing a day's summary at its pace: a user's message comes.
    # The summary is put aside for the reply; the operator's log says so, not a failure.
    workspace = _imported(tmp_path, run)
    openai_server.one_at_a_time = True
    openai_server.tokens_per_second = 40
    long_summary = " ".join(f"Ada talked about item {i}." for i in range(400))

    def model(body: dict[str, Any]) -> Step:
        summary = body["messages"][0]["content"] == SUMMARY_INSTRUCTIONS  # type: ignore[index]
        return reply(long_summary if summary else "Miso is asleep.")

    openai_server.responder = model
    app = build_app(make_settings(workspace, openai_server))
    try:
        assert app.maintenance is not None
        # The import above ran the CLI, which set up its own logging: listen again.
        logging.getLogger().addHandler(caplog.handler)
        caplog.set_level(logging.INFO, logger="mnemobot.memory.upkeep.maintenance")
        digest_step = tuple(s for s in MAINTENANCE_STEPS if s.name == "digest days")
        maintenance = asyncio.create_task(app.maintenance.maintain(CHAT, digest_step))
        await openai_server.wait_for_requests_async(1)
        outcome = await app.assistant.handle_text(CONSOLE_CHAT, "What is Miso doing?")
        assert outcome is not None and outcome.reply == "Miso is asleep."
        report = await maintenance
    finally:
        logging.getLogger().removeHandler(caplog.handler)
        await app.close()
    [line] = [s.line for s in report.steps]
    assert line.endswith("put aside for a user's reply; done again at the next run"), line
    told = [r for r in caplog.records if "digest days:" in r.getMessage()]
    assert [r.levelno for r in told] == [logging.INFO]
    assert "Summary:" not in "".join(d.content for d in _digests(workspace))


async def test_a_piece_of_a_message_forgotten_while_its_day_is_summarized_stays_out_of_it(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    # The console gives messages no ids: a long one is kept in pieces, and a later piece,
    # which has no line of its own in the day's digest, can be forgotten alone. Forgotten
    # while the model writes the day's summary, it leaves the digest's text as it was; the
    # summary was made from it all the same.
    workspace = tmp_path / "ws"
    write_runtime_config(workspace, {"memory": {"consolidation": {"enabled": False}}})
    scope = "console:local"
    app = build_app(make_settings(workspace, openai_server))
    store = app.memory.scopes.store(scope)
    app.memory.record.record_turn(
        scope=scope,
        user_text=f"Let's plan the move of the server room. {filler('move')}\n\n"
        "The server room locker code is QX-7731-ZEBRA, keep it handy.",
        assistant_text="Noted.",
        at=datetime(2025, 3, 9, 9, tzinfo=UTC).timestamp(),
        config=MemoryConfig(),
        tz=UTC,
    )
    [piece] = [i for i in store.items.values() if "QX-7731" in i.content]
    assert piece.content.startswith("User (continued): ")
    forgotten: list[str] = []

    def model(body: dict[str, Any]) -> Step:
        if not forgotten:
            # The user has the piece forgotten while the day's summary is being written.
            forgotten.extend(app.memory.forget.forget(scope, piece.id))
            # The model's words for it, which no erasure of the piece's words finds.
            return reply("The move of the server room was planned, and its locker's code given.")
        assert "QX-7731" not in user_texts(body)[-1]
        return reply("The move of the server room was planned.")

    openai_server.responder = model
    assert app.maintenance is not None
    digest_step = tuple(s for s in MAINTENANCE_STEPS if s.name == "digest days")
    try:
        first = await app.maintenance.maintain(scope, digest_step)
        held = [i.content for i in store.items.values() if "locker" in i.content]
        # The next run erases what was forgotten, then summarizes the day from what is left.
        second = await app.maintenance.maintain(scope)
        [day] = [
            i for i in app.memory.scopes.store(scope).items.values() if i.type is ItemType.DIGEST
        ]
    finally:
        await app.close()
    assert forgotten == [piece.id]
    assert held == []
    assert first.steps[0].line == "wrote 1 day digest, summarized 0, 1 left for later runs"
    assert f"{scope}: digest days: wrote 0 day digests, summarized 1" in second.lines()
    assert day.content.splitlines()[1] == "Summary: The move of the server room was planned."
    for path in (workspace / "memory" / scope / "items").rglob("*.jsonl"):
        text = path.read_text()
        assert "locker" not in text and "QX-7731" not in text, path
