"""`mnemobot memory import`: a Telegram Desktop export becomes the chat's memory, once."""

from __future__ import annotations

import json
import os
import threading
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemobot.bot.cli.main import main
from tests.conftest import run_mnemobot
from tests.telegram_exports import export_message

CHAT = "telegram:555"


def _export(path: Path, messages: list[dict[str, object]]) -> Path:
    path.write_text(
        json.dumps({"name": "Ada", "type": "personal_chat", "id": 555, "messages": messages})
    )
    return path


def _message(message_id: int, day: int, author: str, text: object) -> dict[str, object]:
    return export_message(message_id, datetime(2025, 3, day, 18, 30, tzinfo=UTC), author, text)


MESSAGES = [
    _message(1, 2, "Ada", "Hi Bob!"),
    {
        "id": 2,
        "type": "service",
        "date": "2025-03-02T18:31:00",
        "actor": "Ada",
        "action": "pin_message",
    },
    _message(
        3, 3, "Bob", ["We booked ", {"type": "bold", "text": "Pension Seeblick"}, " for Easter."]
    ),
    _message(4, 4, "Ada", "My sister Lena lives in Graz."),
    _message(5, 5, "Bob", ""),  # a photo without a caption
]


class Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """`mnemobot ARGS` in this process (a subprocess each costs seconds on a busy machine)."""

    def _run(workspace: Path, *args: str) -> Ran:
        monkeypatch.setenv("BOT_WORKSPACE", str(workspace))
        monkeypatch.setenv("BOT_TIMEZONE", "UTC")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        code = main(list(args))
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return _run


def test_an_export_is_imported_with_its_dates_and_authors_once(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", MESSAGES)
    # The real command line once, as a person runs it.
    first = run_mnemobot(
        "memory", "import", str(export), "--chat", CHAT, BOT_WORKSPACE=str(workspace)
    )
    assert first.returncode == 0, first.stderr
    assert "imported 3 messages" in first.stdout
    # A progress bar only on a terminal: the captured output has no \r frames.
    assert "\r" not in first.stderr
    pack = run(workspace, "memory", "pack", "where does Lena live?", "--chat", CHAT, "--json")
    lines = [item["content"] for item in json.loads(pack.stdout)["items"]]
    assert any("Ada: My sister Lena lives in Graz." in line for line in lines)
    rendered = json.loads(pack.stdout)["rendered"]
    # Its original day and its author, whatever kind of item shows it.
    assert any(
        (line.startswith("- 2025-03-04: ") or line.startswith("- Fact (said 2025-03-04)"))
        and "Ada: My sister Lena lives in Graz." in line
        for line in rendered.splitlines()
    ), rendered
    booked = run(workspace, "memory", "pack", "Pension Seeblick", "--chat", CHAT, "--json")
    assert (
        "2025-03-03: Bob: We booked Pension Seeblick for Easter."
        in json.loads(booked.stdout)["rendered"]
    )

    stats_before = json.loads(run(workspace, "memory", "stats", "--chat", CHAT, "--json").stdout)
    notes = sorted(p.read_text() for p in (workspace / "memory" / CHAT).glob("2025-*.md"))
    again = run(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert again.returncode == 0, again.stderr
    assert "imported 0 messages" in again.stdout and "3 already there" in again.stdout
    stats_after = json.loads(run(workspace, "memory", "stats", "--chat", CHAT, "--json").stdout)
    assert stats_after["items"] == stats_before["items"]
    assert sorted(p.read_text() for p in (workspace / "memory" / CHAT).glob("2025-*.md")) == notes


def test_a_malformed_export_says_where_and_writes_nothing(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws"
    broken = [dict(m) for m in MESSAGES]
    broken[3]["date"] = "the fourth of March"
    export = _export(tmp_path / "result.json", broken)
    result = run(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "mnemobot: result.json: messages[3].date: not a date ('the fourth of March'; "
        "expected YYYY-MM-DDTHH:MM:SS)"
    ]
    assert not (workspace / "memory" / CHAT).exists()
    (tmp_path / "result.json").write_text('{"name": "x", "messages": [')
    result = run(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert result.returncode == 2 and "result.json: not JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_chat_without_its_channel_is_refused_in_one_line(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    # Found live: "--chat 5003" imported into a scope the bot never reads.
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", MESSAGES)
    result = run(workspace, "memory", "import", str(export), "--chat", "5003")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "mnemobot: --chat '5003' names no channel; give the chat as the bot names it, "
        "e.g. telegram:5003 or console:local"
    ]
    assert not (workspace / "memory" / "5003").exists()


def test_an_unreadable_export_gets_one_line_and_leaves_the_workspace_free(  # type: ignore[no-untyped-def]
    tmp_path: Path, run
) -> None:
    workspace = tmp_path / "ws"
    unreadable = tmp_path / "result.json"
    unreadable.mkdir()  # a folder where the file should be: unreadable even for root
    result = run(workspace, "memory", "import", str(unreadable), "--chat", CHAT)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("mnemobot: ") and "result.json: cannot read it" in line, line
    # The workspace is free at once: the next command does not find it held.
    export = _export(tmp_path / "export.json", MESSAGES)
    again = run(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert again.returncode == 0, again.stderr
    assert "imported 3 messages" in again.stdout


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        # Past any calendar: the import printed a traceback after writing the messages before.
        ({"date_unixtime": str(10**20)}, "date_unixtime: 100000000000000000000 is in the future"),
        # The store's last day: it was "imported", an episode filed under 9999-12-31.
        ({"date_unixtime": "253402300799"}, "date_unixtime: 9999-12-31 23:59 UTC is in the future"),
        ({"date_unixtime": "-5"}, "date_unixtime: 1969-12-31 23:59 UTC is before 1970"),
        (
            {"date": "9999-12-31T23:59:59", "date_unixtime": None},
            "date: 9999-12-31 23:59 UTC is in the future",
        ),
    ],
)
def test_a_date_no_message_can_have_stops_the_import_before_anything_is_written(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
    changes: dict[str, object],
    said: str,
) -> None:
    workspace = tmp_path / "ws"
    messages = [dict(m) for m in MESSAGES]
    messages[3].update(changes)
    messages[3] = {k: v for k, v in messages[3].items() if v is not None}
    result = run(
        workspace,
        "memory",
        "import",
        str(_export(tmp_path / "result.json", messages)),
        "--chat",
        CHAT,
    )
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip().splitlines() == [
        f"mnemobot: result.json: messages[3].{said}; no message was sent then: correct the "
        "date or remove the message"
    ]
    # Checked whole first: the messages before it were not written either.
    assert not (workspace / "memory" / CHAT).exists()


def _one_message(**fields: object) -> list[dict[str, object]]:
    return [{**_message(1, 2, "Ada", "Hi"), **fields}]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            '{"name": "x", "messages": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "result.json: not a chat export (nested over 1024 levels deep)",
        ),
        (
            {"name": "x", "messages": {"0": {}}},
            "result.json: no 'messages' list; export a single chat as JSON (result.json)",
        ),
        ({"messages": [[1, 2]]}, "result.json: messages[0]: not an object"),
        ({"messages": _one_message(id="7")}, "result.json: messages[0].id: not a whole number"),
        (
            {"messages": _one_message(date_unixtime=True)},
            "result.json: messages[0].date_unixtime: not a number (True)",
        ),
        (
            {"messages": _one_message(date_unixtime=[1])},
            "result.json: messages[0].date_unixtime: not a number ([1])",
        ),
        (
            {"messages": _one_message(text=42)},
            "result.json: messages[0].text: not text (expected a string or a list of parts)",
        ),
        (
            {"messages": _one_message(text=["a", 5])},
            'result.json: messages[0].text[1]: not a text part (a string or {"text": ...})',
        ),
        (
            {"messages": _one_message(**{"from": {"name": "Ada"}})},
            "result.json: messages[0].from: not a name",
        ),
        # What no Telegram message holds: a long import of one "message" (2 s here, an
        # hour for the file's whole budget).
        (
            {"messages": _one_message(text="word " * 20_000)},
            "result.json: messages[0].text: 100,000 characters, more than an imported message "
            "may hold (8,192); correct or remove the message",
        ),
        (
            {"messages": _one_message(**{"from": "A" * 100_000})},
            "result.json: messages[0].from: 100,000 characters, not a name",
        ),
    ],
)
def test_a_hostile_export_gets_one_line_and_writes_nothing(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
    content: object,
    said: str,
) -> None:
    workspace = tmp_path / "ws"
    export = tmp_path / "result.json"
    export.write_text(content if isinstance(content, str) else json.dumps(content))
    result = run(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip().splitlines() == [f"mnemobot: {said}"]
    assert not (workspace / "memory" / CHAT).exists()


def test_an_export_larger_than_the_budget_is_refused_without_reading_it(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
) -> None:
    """200 MB (sparse: no disk spent) and an endless pipe: neither is read past the budget."""
    workspace = tmp_path / "ws"
    big = tmp_path / "result.json"
    with big.open("wb") as file:
        file.write(b'{"name": "x", "messages": [')
        file.truncate(200 * 2**20)
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = run(workspace, "memory", "import", str(big), "--chat", CHAT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "mnemobot: result.json: 200 MB, more than an import reads at once (64 MB); export the "
        "chat in parts (Telegram Desktop: Export chat history, From and To dates) and import each"
    ]
    assert peak < 2**20 and time.monotonic() - started < 5, (peak, time.monotonic() - started)

    # A pipe says no size: it is read up to the budget, and no further.
    pipe = tmp_path / "export.pipe"
    os.mkfifo(pipe)
    written = 0

    def feed() -> None:
        nonlocal written
        chunk = b"[" + b" " * (2**20 - 1)
        try:
            with pipe.open("wb") as sink:
                while written < 300 * 2**20:
                    sink.write(chunk)
                    written += len(chunk)
        except BrokenPipeError:
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    tracemalloc.start()
    try:
        result = run(workspace, "memory", "import", str(pipe), "--chat", CHAT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    feeder.join(10)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "mnemobot: export.pipe: more than an import reads at once (64 MB); export the "
        "chat in parts (Telegram Desktop: Export chat history, From and To dates) and import each"
    ]
    assert written < 70 * 2**20 and peak < 80 * 2**20, (written, peak)
    assert not (workspace / "memory" / CHAT).exists()


def test_an_assistants_messages_become_the_replies_of_the_messages_they_answer(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
) -> None:
    workspace = tmp_path / "ws"
    advice = "Use Postgres for billing. " + "Here is why, step by step. " * 80
    export = _export(
        tmp_path / "result.json",
        [
            _message(1, 2, "Ada", "Which database should the billing service use?"),
            _message(2, 2, "Helper", advice),
            _message(3, 3, "Helper", "One more thing: turn on nightly backups."),
            _message(4, 4, "Ada", "My sister Lena lives in Graz."),
        ],
    )
    wrong = run(workspace, "memory", "import", str(export), "--chat", CHAT, "--assistant", "Bot")
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines() == [
        f"mnemobot: --assistant: no message of {export} is from 'Bot'; its authors: Ada, Helper"
    ]
    assert not (workspace / "memory" / CHAT).exists()

    done = run(workspace, "memory", "import", str(export), "--chat", CHAT, "--assistant", "Helper")
    assert done.returncode == 0, done.stderr
    assert "imported 4 messages" in done.stdout
    pack = run(workspace, "memory", "pack", "billing database", "--chat", CHAT, "--json")
    turns = [i for i in json.loads(pack.stdout)["items"] if i["type"] == "TURN"]
    # The question and its answer are one turn, as the bot keeps its own; the answer cut
    # like a live reply (800 characters), not kept whole as someone's long message.
    (answered,) = [i for i in turns if "billing service" in i["content"]]
    assert answered["references"] == ["tg-export:1", "tg-export:2"]
    question, reply = answered["content"].split("\n", 1)
    assert question == "Ada: Which database should the billing service use?"
    assert reply.startswith("Assistant: Use Postgres for billing.")
    assert len(reply) < 900 < len(advice)
    assert not any(i["content"].startswith("Helper") for i in turns)
    backups = run(workspace, "memory", "pack", "nightly backups", "--chat", CHAT, "--json")
    alone = [i for i in json.loads(backups.stdout)["items"] if "nightly backups" in i["content"]]
    assert [i["references"] for i in alone if i["type"] == "TURN"] == [["tg-export:3"]]

    again = run(workspace, "memory", "import", str(export), "--chat", CHAT, "--assistant", "Helper")
    assert "imported 0 messages" in again.stdout and "4 already there" in again.stdout


def test_an_export_of_a_chat_with_a_bot_keeps_the_bots_messages_as_its_replies(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
) -> None:
    """Telegram Desktop writes a chat with a bot as `bot_chat`, the bot's id as the chat's:
    its messages are the replies to what the person said, as the bot keeps its own turns,
    without the person having to know `--assistant`."""
    at = datetime(2025, 3, 2, 18, 30, tzinfo=UTC)
    messages = [
        export_message(1, at, "Ada", "Which database should billing use?", from_id="user555"),
        export_message(2, at, "Helper", "Use Postgres, with nightly backups.", from_id="user777"),
        # Someone else's name in the export is never taken for the bot.
        export_message(3, at, "Ada", "And for the cache?", from_id="user555"),
    ]
    export = tmp_path / "result.json"
    export.write_text(
        json.dumps({"name": "Helper", "type": "bot_chat", "id": 777, "messages": messages})
    )

    done = run(tmp_path / "ws", "memory", "import", str(export), "--chat", CHAT)
    assert done.returncode == 0, done.stderr
    assert "imported 3 messages" in done.stdout
    assert "Helper's messages kept as replies" in done.stdout
    pack = run(tmp_path / "ws", "memory", "pack", "billing Postgres", "--chat", CHAT, "--json")
    turns = [i for i in json.loads(pack.stdout)["items"] if i["type"] == "TURN"]
    (answered,) = [i for i in turns if "billing" in i["content"]]
    assert answered["references"] == ["tg-export:1", "tg-export:2"]
    assert answered["content"].splitlines() == [
        "Ada: Which database should billing use?",
        "Assistant: Use Postgres, with nightly backups.",
    ]

    # A person named as the bot is (found live: every message became the bot's, and none
    # of the person's facts was kept): the bot is told by its id.
    same_name = [
        export_message(1, at, "Ada", "My sister Lena lives in Graz.", from_id="user555"),
        export_message(2, at, "Ada", "Noted: Lena lives in Graz.", from_id="user777"),
    ]
    export.write_text(
        json.dumps({"name": "Ada", "type": "bot_chat", "id": 777, "messages": same_name})
    )
    named = run(tmp_path / "ws3", "memory", "import", str(export), "--chat", CHAT)
    assert named.returncode == 0, named.stderr
    assert "Ada (bot)'s messages kept as replies" in named.stdout
    pack = run(tmp_path / "ws3", "memory", "pack", "Lena Graz", "--chat", CHAT, "--json")
    contents = [i["content"] for i in json.loads(pack.stdout)["items"] if i["type"] == "TURN"]
    assert contents == ["Ada: My sister Lena lives in Graz.\nAssistant: Noted: Lena lives in Graz."]
    # Named by the name it has in the file, or by the one it was given: the bot still.
    for given in ("Ada", "Ada (bot)"):
        workspace = tmp_path / f"ws-{given}"
        told = run(workspace, "memory", "import", str(export), "--chat", CHAT, "--assistant", given)
        assert told.returncode == 0, told.stderr
        pack = run(workspace, "memory", "pack", "Lena Graz", "--chat", CHAT, "--json")
        told_turns = [i["content"] for i in json.loads(pack.stdout)["items"] if i["type"] == "TURN"]
        assert told_turns == contents, given
    export.write_text(
        json.dumps({"name": "Helper", "type": "bot_chat", "id": 777, "messages": messages})
    )

    alone = run(tmp_path / "ws2", "memory", "import", str(export), "--chat", CHAT, "--no-assistant")
    assert alone.returncode == 0, alone.stderr
    assert "kept as replies" not in alone.stdout
    pack = run(tmp_path / "ws2", "memory", "pack", "billing Postgres", "--chat", CHAT, "--json")
    refs = [i["references"] for i in json.loads(pack.stdout)["items"] if i["type"] == "TURN"]
    assert ["tg-export:1"] in refs and ["tg-export:2"] in refs


def test_one_message_of_a_hostile_size_is_refused_without_building_it(
    tmp_path: Path,
    run,  # type: ignore[no-untyped-def]
) -> None:
    """Found in review: one "message" holding 60 MB of empty objects in a field no one
    reads took 1.4 GB to build before it was checked."""
    at = datetime(2025, 3, 2, 18, 30, tzinfo=UTC)
    first = export_message(1, at, "Ada", "Hello")
    hostile = json.dumps(export_message(2, at, "Ada", "Hi"))[:-1] + ', "photo": ['
    export = tmp_path / "result.json"
    with export.open("w") as out:
        out.write('{"name": "Ada", "type": "personal_chat", "id": 555, "messages": [')
        out.write(json.dumps(first) + ", " + hostile)
        out.write(", ".join(["{}"] * 400_000))
        out.write("]}]}")
    tracemalloc.start()
    try:
        result = run(tmp_path / "ws", "memory", "import", str(export), "--chat", CHAT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "mnemobot: result.json: messages[1]: more than 100,000 values, no chat message; "
        "export the chat again from Telegram Desktop"
    ]
    assert peak < 60 * 2**20, peak
    assert not (tmp_path / "ws" / "memory" / CHAT).exists()
