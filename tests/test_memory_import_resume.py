"""`mnemobot memory import` killed at any moment, then run again: the chat's memory is what an
import never killed leaves, nothing lost and nothing twice.

Found in review: a message's turn item (which names the message) was written before the
items derived from it (a fact promoted, a standing preference, an older value marked
replaced); a kill between them, and the next run, finding the message's ref, skipped it:
what was derived was lost for good."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.store.items import ItemType
from tests.conftest import run_mnemobot
from tests.crash_points import run_to_crash
from tests.telegram_exports import export_message

CHAT = "telegram:555"


def _at(day: int, minute: int = 30) -> datetime:
    return datetime(2025, 3, day, 18, minute, tzinfo=UTC)


# Each message past the first derives items of its own; no two of a day share a minute,
# so a day's digest lists them in one order whatever their ids.
MESSAGES = [
    export_message(1, _at(2), "Ada", "Hi Bob!"),
    export_message(2, _at(3), "Ada", "My sister Lena lives in Graz."),
    export_message(3, _at(3, 45), "Ada", "Please always answer me in short bullet points."),
    export_message(4, _at(4), "Ada", "I live in Berlin."),
    export_message(5, _at(5), "Ada", "I moved to Munich last week."),
    export_message(6, _at(5, 50), "Ada", "Please always answer me in German."),
]

# The import, killed at the crash point: the first append to a file whose path holds
# argv[3] of bytes holding argv[4] (`tests.crash_points`).
KILLED_IMPORT = """
from mnemobot.bot.cli.main import main

workspace, export, inside, holding = sys.argv[1:5]
os.environ.update(BOT_WORKSPACE=workspace, BOT_TIMEZONE="UTC")
arm(inside=inside, holding=holding.encode())
main(["memory", "import", export, "--chat", "telegram:555", "--no-progress", *sys.argv[5:]])
"""


def _export(path: Path, messages: list[dict[str, object]], **chat: object) -> Path:
    fields = {"name": "Ada", "type": "personal_chat", "id": 555, **chat}
    path.write_text(json.dumps({**fields, "messages": messages}))
    return path


def _import(workspace: Path, export: Path, *args: str) -> str:
    done = run_mnemobot(
        "memory",
        "import",
        str(export),
        "--chat",
        CHAT,
        "--no-progress",
        *args,
        BOT_WORKSPACE=str(workspace),
        BOT_TIMEZONE="UTC",
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def scope_files(workspace: Path) -> dict[str, str]:
    """Every file of the chat's memory, its item ids numbered in the order they appear (an
    import gives new ones each time; all else of two imports of one export is the same)."""
    root = workspace / "memory" / CHAT
    ids: dict[str, str] = {}

    def numbered(found: re.Match[str]) -> str:
        return ids.setdefault(found.group(0), f"#{len(ids)}")

    return {
        str(path.relative_to(root)): re.sub(r"\b[0-9a-f]{32}\b", numbered, path.read_text())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The scope's files after an import never killed."""
    folder = tmp_path_factory.mktemp("clean")
    workspace = folder / "ws"
    _import(workspace, _export(folder / "result.json", MESSAGES))
    files = scope_files(workspace)
    assert '"type":"PREFERENCE"' in files["items/semantic.jsonl"]
    return files


@pytest.mark.parametrize(
    ("point", "inside", "holding"),
    [
        # The turn's item written, not the standing preference derived from it.
        ("after-append", "items/episodic", "tg-export:3"),
        ("mid-append", "items/episodic", "tg-export:3"),
        # Its daily note line only (a run again wrote the line twice).
        ("after-append", "2025-03-03.md", "bullet points"),
        # The new value's fact written, the old value (Berlin) not yet marked replaced.
        ("after-append", "semantic.jsonl", "tg-export:5"),
        ("mid-append", "semantic.jsonl", "tg-export:5"),
        # The message's entry in the import's journal cut short, or whole and nothing else.
        ("mid-append", ".import-journal", "tg-export:3"),
        ("after-append", ".import-journal", "tg-export:3"),
    ],
    ids=[
        "turn-item-only",
        "turn-item-half",
        "note-line-only",
        "new-value-only",
        "durable-half",
        "journal-half",
        "journal-only",
    ],
)
def test_a_killed_import_run_again_leaves_what_an_import_never_killed_leaves(
    tmp_path: Path, clean: dict[str, str], point: str, inside: str, holding: str
) -> None:
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", MESSAGES)
    run_to_crash(KILLED_IMPORT, point, str(workspace), str(export), inside, holding)

    _import(workspace, export)
    assert scope_files(workspace) == clean


def test_a_reply_sharing_its_messages_turn_is_finished_with_it(tmp_path: Path) -> None:
    """In a chat with a bot, a message and the bot's reply are one turn naming both: a kill
    in it leaves neither message listed without the other, and a run again, even with
    `--no-assistant`, finishes the turn as it began (it imports neither alone)."""
    messages = [
        export_message(1, _at(2), "Ada", "Hi!", from_id="user555"),
        export_message(
            2, _at(3), "Ada", "Please always answer me in short bullet points.", from_id="user555"
        ),
        export_message(3, _at(3, 31), "Helper", "Sure, short bullet points.", from_id="user777"),
        export_message(4, _at(4), "Ada", "My sister Lena lives in Graz.", from_id="user555"),
    ]
    export = _export(tmp_path / "result.json", messages, name="Helper", type="bot_chat", id=777)
    _import(tmp_path / "clean", export)
    clean = scope_files(tmp_path / "clean")
    assert '"references":["tg-export:2","tg-export:3"]' in clean["items/episodic/2025-03-03.jsonl"]

    for rerun in ((), ("--no-assistant",)):
        workspace = tmp_path / f"ws{len(rerun)}"
        run_to_crash(
            KILLED_IMPORT, "after-append", str(workspace), str(export), "episodic", "tg-export:3"
        )
        _import(workspace, export, *rerun)
        files = scope_files(workspace)
        if not rerun:
            assert files == clean
        listed = files["imported-messages.txt"].split()
        assert sorted(listed) == [f"tg-export:{n}" for n in range(1, 5)], rerun
        assert files["items/semantic.jsonl"] == clean["items/semantic.jsonl"], rerun
        assert files["items/episodic/2025-03-03.jsonl"] == clean["items/episodic/2025-03-03.jsonl"]


def test_an_export_changed_before_the_run_again_adds_its_new_messages(tmp_path: Path) -> None:
    """The message a kill cut short is finished as the run that began it wrote it; an
    export written again since (a later one, with more messages) adds what it has new."""
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", MESSAGES[:4])
    run_to_crash(
        KILLED_IMPORT, "after-append", str(workspace), str(export), "episodic", "tg-export:3"
    )
    _export(export, MESSAGES)
    _import(workspace, export)
    _import(tmp_path / "clean", export)
    assert scope_files(workspace) == scope_files(tmp_path / "clean")


@pytest.mark.parametrize("point", ["mid-append", "after-append"])
def test_a_message_cut_short_and_written_over_since_is_left_as_it_was(
    tmp_path: Path, point: str
) -> None:
    """Between the kill and the run again something else wrote after the message's bytes
    (the bot: a live message of the same day), cut or whole: the file is not cut back, nor
    the message finished after what followed it, and the import goes on with the rest,
    saying so."""
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", MESSAGES)
    run_to_crash(KILLED_IMPORT, point, str(workspace), str(export), "episodic", "tg-export:3")
    scopes = ScopeRuntime(workspace)
    try:
        MemoryRecord(scopes).record_turn(
            scope=CHAT,
            user_text="Lunch with Lena at noon.",
            assistant_text="Enjoy!",
            at=_at(3, 50).timestamp(),
            config=MemoryConfig(),
            tz=UTC,
            message_refs=["tg:99"],
        )
    finally:
        scopes.close()

    said = _import(workspace, export)
    assert "the message tg-export:3 was cut short by an earlier import" in said, said
    assert not (workspace / "memory" / CHAT / ".import-journal").exists()
    scopes = ScopeRuntime(workspace)
    try:
        items = list(scopes.store(CHAT).items.values())
    finally:
        scopes.close()
    turns = [i.references for i in items if i.type is ItemType.TURN]
    assert ["tg:99"] in turns
    assert sorted(ref for refs in turns for ref in refs if ref.startswith("tg-export:")) == [
        f"tg-export:{n}" for n in range(1, 7)
    ]
    assert any(i.content == "Ada: Please always answer me in German." for i in items)


def test_a_message_written_whole_before_the_kill_is_not_reported_cut_short(
    tmp_path: Path,
) -> None:
    """Killed after a message's last append (its refs listed), while the next was being
    read: the journal holds the message whole. Its files rewritten since (a compaction
    keeps one version of the Berlin fact message 5 marked replaced) leave nothing to
    finish and nothing lost: no warning that the message was cut short (found in review)."""
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", MESSAGES)
    run_to_crash(
        KILLED_IMPORT,
        "after-append",
        str(workspace),
        str(export),
        "imported-messages.txt",
        "tg-export:5",
    )
    assert (workspace / "memory" / CHAT / ".import-journal").exists()
    scopes = ScopeRuntime(workspace)
    try:
        scopes.store(CHAT).compact_files()
    finally:
        scopes.close()

    said = _import(workspace, export)
    assert "cut short" not in said, said
    assert not (workspace / "memory" / CHAT / ".import-journal").exists()
    scopes = ScopeRuntime(workspace)
    try:
        items = list(scopes.store(CHAT).items.values())
    finally:
        scopes.close()
    assert any(i.content == "Ada: Please always answer me in German." for i in items)
