"""Daily notes, MEMORY.md and the legacy context sections built from them."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from mnemobot.base.tokens import estimate_tokens
from mnemobot.memory.notes.daily_notes import append_daily_note, legacy_context, read_memory_file

BERLIN = ZoneInfo("Europe/Berlin")


def at(day: date, hour: int, minute: int, tz: ZoneInfo = BERLIN) -> float:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz).timestamp()


def test_a_note_line_per_turn_under_a_date_header(tmp_path: Path) -> None:
    scope_dir = tmp_path / "memory" / "telegram:42"
    day = date(2025, 3, 1)
    path = append_daily_note(
        scope_dir, "Where is\nmy order?", "It ships\r\ntoday.", at=at(day, 9, 5), tz=BERLIN
    )
    append_daily_note(scope_dir, "u" * 250, "a" * 400, at=at(day, 23, 59), tz=BERLIN)
    assert path == scope_dir / "2025-03-01.md"
    lines = path.read_text().splitlines()
    assert lines[0] == "# 2025-03-01"
    assert lines[2] == "[09:05] User: Where is my order? | Assistant: It ships today."
    assert lines[3] == f"[23:59] User: {'u' * 200} | Assistant: {'a' * 300}"
    assert len(lines) == 4


def test_the_note_day_and_clock_follow_the_given_time_zone(tmp_path: Path) -> None:
    # 23:30 UTC on March 1st is 00:30 on March 2nd in Berlin.
    moment = at(date(2025, 3, 1), 23, 30, ZoneInfo("UTC"))
    path = append_daily_note(tmp_path, "hi", "hello", at=moment, tz=BERLIN)
    assert path.name == "2025-03-02.md"
    assert "[00:30] User: hi | Assistant: hello" in path.read_text()


def write_note(scope_dir: Path, day: date, *lines: str) -> None:
    scope_dir.mkdir(parents=True, exist_ok=True)
    body = "\n".join(lines)
    (scope_dir / f"{day.isoformat()}.md").write_text(f"# {day.isoformat()}\n\n{body}\n")


def test_legacy_context_has_the_three_sections_in_order(tmp_path: Path) -> None:
    today = date(2025, 3, 10)
    (tmp_path / "MEMORY.md").write_text("- Prefers tea\n- Lives in Oslo\n")
    write_note(tmp_path, today, "[09:00] User: today one | Assistant: ok")
    write_note(tmp_path, date(2025, 3, 9), "[10:00] User: yesterday | Assistant: ok")
    write_note(tmp_path, date(2025, 3, 7), "[11:00] User: three days ago | Assistant: ok")
    write_note(tmp_path, date(2025, 3, 1), "[12:00] User: too old | Assistant: ok")

    text = legacy_context(tmp_path, today, recent_days=7, budget_tokens=1500)
    assert text == (
        "## Long-term Memory\n- Prefers tea\n- Lives in Oslo\n\n"
        "## Today's Notes\n[09:00] User: today one | Assistant: ok\n\n"
        "## Recent Context\n\n"
        "### 2025-03-09\n[10:00] User: yesterday | Assistant: ok\n\n"
        "### 2025-03-07\n[11:00] User: three days ago | Assistant: ok"
    )


def test_empty_sections_are_left_out(tmp_path: Path) -> None:
    today = date(2025, 3, 10)
    assert legacy_context(tmp_path, today, recent_days=7, budget_tokens=1500) == ""
    write_note(tmp_path, date(2025, 3, 8), "[10:00] User: hi there | Assistant: hello")
    assert legacy_context(tmp_path, today, recent_days=7, budget_tokens=1500) == (
        "## Recent Context\n\n### 2025-03-08\n[10:00] User: hi there | Assistant: hello"
    )
    assert legacy_context(tmp_path, today, recent_days=1, budget_tokens=1500) == ""


def test_a_short_budget_keeps_the_newest_notes(tmp_path: Path) -> None:
    today = date(2025, 3, 10)
    write_note(
        tmp_path,
        today,
        *(f"[{h:02d}:00] User: question number {h} | Assistant: answer {h}" for h in range(24)),
    )
    write_note(tmp_path, date(2025, 3, 9), "[10:00] User: yesterday | Assistant: ok")
    (tmp_path / "MEMORY.md").write_text("Long-term fact. " * 500)

    text = legacy_context(tmp_path, today, recent_days=7, budget_tokens=300)
    assert estimate_tokens(text) <= 300
    assert "[23:00] User: question number 23" in text
    assert "[00:00] User: question number 0 " not in text
    assert "## Long-term Memory" in text and "was cut here" in text
    # Newest first: yesterday only gets what is left after today.
    assert "yesterday" not in text

    roomy = legacy_context(tmp_path, today, recent_days=7, budget_tokens=5000)
    assert "yesterday" in roomy and "question number 0 " in roomy


def test_memory_md_with_invalid_utf8_is_read_with_replacement_characters(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"\xef\xbb\xbfLikes caf\xc3\xa9 and \xff\xfe broken bytes\n")
    assert read_memory_file(path, 100) == "Likes café and \ufffd\ufffd broken bytes"
    assert read_memory_file(tmp_path / "missing.md", 100) == ""
    assert read_memory_file(path, 0) == ""


def test_a_10_mb_memory_md_is_cut_to_the_budget_with_a_marker(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    line = "- The customer prefers invoices by email, never by post.\n"
    path.write_text(line * (10 * 1024 * 1024 // len(line)))
    assert path.stat().st_size > 9_000_000

    text = read_memory_file(path, 2000)
    assert estimate_tokens(text) <= 2000
    assert text.startswith("- The customer prefers")
    assert text.endswith("[… MEMORY.md was cut here to fit the memory budget]")
    # Cut at a line end, not in the middle of a fact.
    assert text.split("\n[…")[0].endswith("never by post.")

    cyrillic = tmp_path / "ru.md"
    cyrillic.write_text("Клиент предпочитает счета по почте.\n" * 100_000)
    ru_text = read_memory_file(cyrillic, 500)
    assert estimate_tokens(ru_text) <= 500
    assert "cut here" in ru_text


_APPENDER = """
import sys
from pathlib import Path
from mnemobot.memory.notes.daily_notes import write_memory_file
for n in range(60):
    write_memory_file(Path(sys.argv[1]), f"- {sys.argv[2]} fact {n}", append=True, max_chars=10**5)
"""


def test_two_processes_appending_to_memory_md_keep_every_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "global" / "MEMORY.md"
    path.parent.mkdir()
    writers = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), who]) for who in "ab"]
    assert [w.wait(60) for w in writers] == [0, 0]
    lines = path.read_text().splitlines()
    assert sorted(lines) == sorted(f"- {who} fact {n}" for who in "ab" for n in range(60))
