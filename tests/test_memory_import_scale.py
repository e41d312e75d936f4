"""`mnemobot memory import` of a long chat: it says how far it got, and what it holds does
not grow with the export."""

from __future__ import annotations

import io
import json
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mnemobot.bot.channels.telegram.export_file import ExportError, read_export
from mnemobot.bot.cli.memory_import import write_export
from mnemobot.bot.cli.progress import ImportProgress
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.memory.services.scopes import ScopeRuntime
from tests.telegram_exports import export_message
from tests.terminal import run_with_terminal_stderr

CHAT = "telegram:555"


def _export(path: Path, count: int) -> Path:
    """An export of `count` messages, two authors taking turns, a minute apart."""
    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    messages = [
        export_message(
            n, start + timedelta(minutes=n), "Ada" if n % 2 else "Bob", f"message {n} about tea"
        )
        for n in range(1, count + 1)
    ]
    path.write_text(
        json.dumps({"name": "Ada", "type": "personal_chat", "id": 555, "messages": messages})
    )
    return path


def test_an_import_on_a_terminal_counts_the_messages_it_has_read(tmp_path: Path) -> None:
    export = _export(tmp_path / "result.json", 3)
    code, out, err = run_with_terminal_stderr(
        "memory", "import", str(export), "--chat", CHAT, BOT_WORKSPACE=str(tmp_path / "ws")
    )
    assert code == 0, err
    assert "imported 3 messages" in out
    assert "3 of ~3 messages" in err, err
    quiet = _export(tmp_path / "more.json", 4)
    code, out, err = run_with_terminal_stderr(
        "memory",
        "import",
        str(quiet),
        "--chat",
        CHAT,
        "--no-progress",
        BOT_WORKSPACE=str(tmp_path / "ws"),
    )
    assert code == 0, err
    assert "imported 1 message " in out and "3 already there" in out
    assert err == "", err


def test_a_long_import_says_how_far_it_got_in_a_log_at_a_low_rate() -> None:
    """No terminal (a log, a pipe): a line now and then, none for a quick import."""
    now = [100.0]
    log = io.StringIO()
    progress = ImportProgress(300_000, log, every=30, clock=lambda: now[0])
    for read, at in ((1, 100.0), (40_000, 129.0)):
        now[0] = at
        progress.read(read)
    assert log.getvalue() == ""
    for read, at in ((41_000, 131.0), (52_000, 140.0), (90_000, 161.5)):
        now[0] = at
        progress.read(read)
    progress.close()
    assert log.getvalue().splitlines() == [
        "mnemobot: memory import: read 41,000 of ~300,000 messages (13%), 31 s",
        "mnemobot: memory import: read 90,000 of ~300,000 messages (30%), 62 s",
    ]


def test_reading_an_export_holds_one_message_at_a_time(tmp_path: Path) -> None:
    """Parsed whole, an export took 7-9 times its size. Read as a stream, the check holds
    one message and the ids seen (to tell one given twice), the import's reading one
    message."""
    export = _export(tmp_path / "result.json", 40_000)
    size = export.stat().st_size
    tracemalloc.start()
    try:
        chat = read_export(export, UTC)
        _, checked = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        read = sum(1 for _ in chat.messages())
        _, imported = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert chat.count == read == 40_000 and chat.authors == {"Ada", "Bob"}
    assert checked < size * 2 // 3 and imported < size // 5, (checked, imported, size)


def test_a_long_import_leaves_what_it_wrote_to_the_files_as_it_goes(tmp_path: Path) -> None:
    """A scope big enough for an index file is loaded anew every `reload_every` messages:
    its items leave memory, as at a bot's start; none is written twice, none lost."""
    export = read_export(_export(tmp_path / "result.json", 6_000), UTC)
    # A load saves the index file again after reading 2,000 items or more since its save
    # (`memory.store.indexed_load.RESAVE_MIN_ITEMS`).
    scopes = ScopeRuntime(tmp_path / "ws", index_file_min_items=1_000)
    record = MemoryRecord(scopes)
    try:
        done = write_export(record, CHAT, export, config=MemoryConfig(), tz=UTC, reload_every=2_500)
        assert done == (6_000, 0)
        store = scopes.store(CHAT)
        assert scopes.paths(CHAT).index_file.is_file()
        # Without the loads, all 6,000 turns and their digests.
        assert len(store.items.new) < 2_600, len(store.items.new)
        turns = [item for item in store.items.values() if "turn" in item.tags]
        assert sorted(ref for item in turns for ref in item.references) == sorted(
            f"tg-export:{n}" for n in range(1, 6_001)
        )
        assert write_export(
            record, CHAT, export, config=MemoryConfig(), tz=UTC, reload_every=2_500
        ) == (0, 6_000)
    finally:
        scopes.close()


def test_an_export_changed_after_its_check_stops_the_import_with_one_line(
    tmp_path: Path,
) -> None:
    """Read twice (checked, then imported): a file rewritten between is not imported as
    if it were the one checked."""
    path = _export(tmp_path / "result.json", 3)
    chat = read_export(path, UTC)
    _export(path, 4)
    with pytest.raises(ExportError) as raised:
        list(chat.messages())
    assert str(raised.value) == (
        "result.json: changed while it was imported; run the import again (what was "
        "imported stays, nothing is imported twice)"
    )


def test_an_export_rewritten_in_place_while_it_is_imported_says_so(tmp_path: Path) -> None:
    """Review: a file overwritten mid-read (the same inode) read as broken JSON ("trailing
    garbage"), after part of it was imported, and a re-run mixed old and new."""
    path = _export(tmp_path / "result.json", 20_000)
    chat = read_export(path, UTC)
    messages = chat.messages()
    next(messages)
    with path.open("r+b") as file:  # in place: the same inode, other bytes
        file.write(b"[" * 1000)
    with pytest.raises(ExportError) as raised:
        list(messages)  # read to the end: the checked file is not there any more
    assert "changed while it was imported" in str(raised.value)
    # Cut short mid-read, as a new export written over it.
    _export(path, 20_000)
    chat = read_export(path, UTC)
    messages = chat.messages()
    next(messages)
    _export(path, 3)
    with pytest.raises(ExportError) as raised:
        list(messages)
    assert str(raised.value) == (
        "result.json: changed while it was imported; run the import again (what was "
        "imported stays, nothing is imported twice)"
    )
