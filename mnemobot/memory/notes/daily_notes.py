"""Legacy daily notes and MEMORY.md: plain Markdown a person can read and edit.

Each turn appends one line to `memory/<scope>/YYYY-MM-DD.md`:

    [HH:mm] User: {user[:200]} | Assistant: {assistant[:300]}

("User" is the speaker's name in a group, "[HH:mm] Anna: ...": who said it; a message
without an answer is its words alone, and the answer a later run of it got, "[HH:mm]
Assistant: ...".)

and each fact a compaction's flush kept, one line the model wrote, never a `User:` one:

    [HH:mm] Noted from the conversation: {fact[:300]}

`legacy_context` renders the scope's MEMORY.md, today's note and the previous days'
notes as prompt sections within a token budget, keeping the newest notes when it must
cut. Files may be hand-edited, so reads never fail on bad UTF-8 and never load a huge
file whole.
"""

from __future__ import annotations

import os
import re
from datetime import date, timedelta, tzinfo
from pathlib import Path

from mnemobot.base.atomic_file import append_bytes, read_text_lenient, write_atomic
from mnemobot.base.file_lock import private_file_lock
from mnemobot.base.tokens import cut_to_tokens, estimate_tokens, max_chars
from mnemobot.config.zones import time_in
from mnemobot.memory.store.items import normalize_content
from mnemobot.memory.store.scope_paths import MEMORY_FILE_NAME
from mnemobot.memory.text.inert_markdown import inert_markdown

# The line put before the newest notes when older ones did not fit the budget.
OMITTED_MARK = "…"

USER_CHARS = 200
# What a line the model wrote (not the user) begins with, after its time.
NOTED_LABEL = "Noted from the conversation"
ASSISTANT_CHARS = 300
# A speaker's name (a Telegram display name, up to 64 characters there) in a line.
SPEAKER_CHARS = 64
# Share of the legacy budget MEMORY.md may take when there are notes to show too.
LONG_TERM_SHARE = 0.5
# Days of daily notes shown as recent context when no memory item matches (the design's
# value; not measured: a week of notes rarely fits the budget anyway).
RECENT_NOTES_DAYS = 7

_HEADER = re.compile(r"^#\s+\d{4}-\d{2}-\d{2}\s*$")


def _flatten(text: str) -> str:
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def format_note_line(
    user_text: str,
    assistant_text: str,
    at: float,
    tz: tzinfo | None,
    speaker: str | None = None,
) -> str:
    """One daily note line (no trailing newline); `speaker`: who said it, in a group.

    A side nobody wrote is left out: a message without an answer (the model failed, the
    user sent /stop) is the words alone, and the answer a later run of that message gets
    is the answer alone (its words are on the line before), not "User:  | Assistant: ..."."""
    clock = time_in(at, tz).strftime("%H:%M")
    who = _flatten(speaker or "").replace("|", " ").strip()[:SPEAKER_CHARS] or "User"
    user = _flatten(user_text)[:USER_CHARS]
    assistant = _flatten(assistant_text)[:ASSISTANT_CHARS]
    if not assistant.strip():
        return f"[{clock}] {who}: {user}"
    if not user.strip():
        return f"[{clock}] Assistant: {assistant}"
    return f"[{clock}] {who}: {user} | Assistant: {assistant}"


def format_noted_line(fact: str, at: float, tz: tzinfo | None) -> str:
    """The daily note line of a fact the model noted (a compaction's flush): its words, not
    the user's (no trailing newline)."""
    clock = time_in(at, tz).strftime("%H:%M")
    return f"[{clock}] {NOTED_LABEL}: {_flatten(fact)[:ASSISTANT_CHARS]}"


def daily_note_path(scope_dir: Path, day: date) -> Path:
    return scope_dir / f"{day.isoformat()}.md"


def append_daily_note(
    scope_dir: Path,
    user_text: str,
    assistant_text: str,
    *,
    at: float,
    tz: tzinfo | None = None,
    speaker: str | None = None,
) -> Path:
    """Append the turn's line to the note of its local day; returns the note's path."""
    line = format_note_line(user_text, assistant_text, at, tz, speaker)
    return _append_lines(scope_dir, [line], at, tz)


def append_noted_facts(
    scope_dir: Path, facts: list[str], *, at: float, tz: tzinfo | None = None
) -> Path:
    """Append one `Noted from the conversation` line per fact, in one write."""
    return _append_lines(scope_dir, [format_noted_line(fact, at, tz) for fact in facts], at, tz)


def _append_lines(scope_dir: Path, lines: list[str], at: float, tz: tzinfo | None) -> Path:
    day = time_in(at, tz).date()
    path = daily_note_path(scope_dir, day)
    line = "".join(f"{one}\n" for one in lines)
    try:
        is_new = path.stat().st_size == 0
    except FileNotFoundError:
        is_new = True
    # Header and first line in one write: a reader never sees a note without its header.
    payload = f"# {day.isoformat()}\n\n{line}" if is_new else line
    append_bytes(path, payload.encode())
    return path


# ----------------------------------------------------------------------- reading


def _cut_marker(name: str) -> str:
    return f"\n[… {name} was cut here to fit the memory budget]"


def read_memory_file(path: Path, budget_tokens: int) -> str:
    """Read a hand-edited Markdown file within `budget_tokens` (estimated).

    Invalid UTF-8 becomes U+FFFD; at most `tokens.max_chars(budget_tokens)` characters
    are read however large the file is; a cut file ends with a line saying it was cut.
    """
    if budget_tokens <= 0:
        return ""
    # That many characters always cover the budget; one more tells us the file is longer.
    most = max_chars(budget_tokens)
    text = read_text_lenient(path, max_chars=most + 1).lstrip("\ufeff").rstrip()
    if len(text) <= most and estimate_tokens(text) <= budget_tokens:
        return text
    marker = _cut_marker(path.name)
    room = budget_tokens - estimate_tokens(marker)
    if room <= 0:
        return cut_to_tokens(text, budget_tokens)
    return cut_to_tokens(text, room) + marker


def _read_tail(path: Path, max_chars: int) -> str:
    """The last `max_chars`-or-so characters of a file, starting at a whole line.

    Notes grow at the end and the newest lines matter most, so a huge note is read
    from its end (read_text_lenient reads from the start).
    """
    max_bytes = max_chars * 4 + 4
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - max_bytes)
            handle.seek(start)
            raw = handle.read(max_bytes)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return ""
    text = raw.decode("utf-8", errors="replace")
    if start > 0:
        newline = text.find("\n")
        text = text[newline + 1 :] if newline >= 0 else ""
    return text


def _note_lines(path: Path, budget_tokens: int) -> list[str]:
    text = _read_tail(path, max_chars(max(budget_tokens, 1)) + 64)
    lines = [line.rstrip() for line in text.lstrip("\ufeff").splitlines()]
    return [line for line in lines if line.strip() and not _HEADER.match(line)]


def _newest_lines(lines: list[str], budget_tokens: int) -> tuple[list[str], int]:
    """The newest lines that fit (in file order) and their estimated cost."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = estimate_tokens(line) + 1  # + the newline
        if used + cost > budget_tokens:
            if not kept and budget_tokens - used > 8:
                # Even the newest line is too long: show its start rather than nothing.
                kept.append(cut_to_tokens(line, budget_tokens - used - 1) + "…")
                used = budget_tokens
            break
        kept.append(line)
        used += cost
    kept.reverse()
    if len(kept) < len(lines) and kept:
        kept.insert(0, OMITTED_MARK)
    return kept, used


def legacy_context(
    scope_dir: Path, today: date, recent_days: int, budget_tokens: int, *, long_term: bool = True
) -> str:
    """`## Long-term Memory` (without `long_term`: left out), `## Today's Notes`,
    `## Recent Context` within the budget.

    Recent Context has a `### YYYY-MM-DD` per day for the `recent_days` days before
    `today`, newest first. Empty sections are left out. When the budget is short, the
    newest notes are kept first; MEMORY.md gets at most half the budget if there are
    notes to show (all of it otherwise) and is cut with a marker.
    """
    if budget_tokens <= 0:
        return ""
    today_path = daily_note_path(scope_dir, today)
    recent_paths = [
        (day, daily_note_path(scope_dir, day))
        for day in (today - timedelta(days=offset) for offset in range(1, recent_days + 1))
    ]
    recent_paths = [(day, path) for day, path in recent_paths if path.is_file()]
    has_notes = today_path.is_file() or bool(recent_paths)

    long_term_heading = "## Long-term Memory"
    long_term_budget = int(budget_tokens * LONG_TERM_SHARE) if has_notes else budget_tokens
    long_term_text = ""
    if long_term:
        long_term_text = inert_markdown(
            read_memory_file(
                scope_dir / MEMORY_FILE_NAME,
                long_term_budget - estimate_tokens(long_term_heading) - 2,
            )
        )
    remaining = budget_tokens
    sections: list[str] = []
    if long_term_text:
        section = f"{long_term_heading}\n{long_term_text}"
        sections.append(section)
        remaining -= estimate_tokens(section) + 1

    today_heading = "## Today's Notes"
    today_section = ""
    room = remaining - estimate_tokens(today_heading) - 2
    if room > 0:
        lines, used = _newest_lines(_note_lines(today_path, room), room)
        if lines:
            today_section = today_heading + "\n" + "\n".join(lines)
            remaining -= estimate_tokens(today_heading) + 2 + used
    if today_section:
        sections.append(today_section)

    recent_heading = "## Recent Context"
    remaining -= estimate_tokens(recent_heading) + 2
    days: list[str] = []
    for day, path in recent_paths:
        day_heading = f"### {day.isoformat()}"
        room = remaining - estimate_tokens(day_heading) - 2
        if room <= 0:
            break
        lines, used = _newest_lines(_note_lines(path, room), room)
        if not lines:
            continue
        days.append(day_heading + "\n" + "\n".join(lines))
        remaining -= estimate_tokens(day_heading) + 2 + used
    if days:
        sections.append(recent_heading + "\n\n" + "\n\n".join(days))
    return "\n\n".join(sections)


FORGOTTEN_MARK = "[forgotten]"


def redact_daily_notes(scope_dir: Path, needle: str) -> int:
    """Replace every note line containing `needle` (normalized) with a marker; lines changed.

    Forgetting must reach the notes too: with an empty pack they are shown to the model.
    Each changed file is rewritten atomically.
    """
    changed = 0
    for path in sorted(scope_dir.glob("????-??-??.md")):
        text = path.read_bytes().decode("utf-8", errors="replace")
        lines = text.split("\n")
        hits = [i for i, line in enumerate(lines) if needle in normalize_content(line)]
        if not hits:
            continue
        for i in hits:
            clock = lines[i][:7] if lines[i].startswith("[") else ""
            lines[i] = f"{clock} {FORGOTTEN_MARK}".strip()
        write_atomic(path, "\n".join(lines).encode())
        changed += len(hits)
    return changed


class MemoryFileTooLong(ValueError):
    """A MEMORY.md write that would pass its size limit; the file is left as it was."""


def write_memory_file(path: Path, text: str, *, append: bool, max_chars: int) -> int:
    """Replace a scope's MEMORY.md with `text`, or append `text` to it; returns its length.

    Read, change and write happen under the file's lock, so two processes appending at
    once (a running bot and `mnemobot chat` on the same scope) both keep their lines.
    """
    with private_file_lock(path.with_name(f".{path.name}.lock")):
        if append:
            current = read_memory_file(path, 1_000_000) if path.exists() else ""
            text = (current.rstrip() + "\n" + text).strip() if current else text
        if len(text) > max_chars:
            raise MemoryFileTooLong(f"MEMORY.md would exceed {max_chars} characters; shorten it")
        write_atomic(path, (text.rstrip() + "\n").encode())
    return len(text)
