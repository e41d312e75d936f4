"""`mnemobot memory import`: a Telegram Desktop export becomes the chat's memory, once."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemobot.bot.cli.main import main
from tests.conftest import run_mnemobot

CHAT = "telegram:555"


def _export(path: Path, messages: list[dict[str, object]]) -> Path:
    path.write_text(
        json.dumps({"name": "Ada", "type": "personal_chat", "id": 555, "messages": messages})
    )
    return path


def _message(message_id: int, day: int, author: str, text: object) -> dict[str, object]:
    at = datetime(2025, 3, day, 18, 30, tzinfo=UTC)
    return {
        "id": message_id,
        "type": "message",
        "date": at.strftime("%Y-%m-%dT%H:%M:%S"),
        "date_unixtime": str(int(at.timestamp())),
        "from": author,
        "from_id": f"user{len(author)}",
        "text": text,
        "text_entities": [],
    }


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
        line.startswith("- 2025-03-04: ") and "Ada: My sister Lena lives in Graz." in line
        for line in rendered.splitlines()
    )
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
    assert answered["references"] == ["tg:1", "tg:2"]
    question, reply = answered["content"].split("\n", 1)
    assert question == "Ada: Which database should the billing service use?"
    assert reply.startswith("Assistant: Use Postgres for billing.")
    assert len(reply) < 900 < len(advice)
    assert not any(i["content"].startswith("Helper") for i in turns)
    backups = run(workspace, "memory", "pack", "nightly backups", "--chat", CHAT, "--json")
    alone = [i for i in json.loads(backups.stdout)["items"] if "nightly backups" in i["content"]]
    assert [i["references"] for i in alone if i["type"] == "TURN"] == [["tg:3"]]

    again = run(workspace, "memory", "import", str(export), "--chat", CHAT, "--assistant", "Helper")
    assert "imported 0 messages" in again.stdout and "4 already there" in again.stdout
