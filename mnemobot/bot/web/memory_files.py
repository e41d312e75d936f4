"""A chat's plain files, as the page shows them: daily notes by day, MEMORY.md and its
earlier versions, a diff between two.

Reads are bounded (a hand-edited file may be huge) and lenient (bad UTF-8 shows as �).
Lines holding a text forgotten but not yet erased from every file are left out, as the
bot leaves them out of its prompt.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from mnemobot.base.atomic_file import read_text_lenient
from mnemobot.memory.notes.memory_rewrite import entries
from mnemobot.memory.notes.memory_versions import archive_dir, find_version, list_versions
from mnemobot.memory.notes.memory_versions import read_memory_text as read_memory_version
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts

# A day's note is a line per turn (about 500 characters): 500k characters are a
# thousand turns, more than any day of a person's chat.
MAX_NOTE_CHARS = 500_000
# MEMORY.md is capped at 40k characters by the memory tool; a hand edit may be longer.
MAX_MEMORY_CHARS = 200_000
CURRENT = "current"


@dataclass(frozen=True, slots=True)
class NoteDay:
    day: str
    path: Path
    # Older than `DAILY_RETENTION_DAYS` (memory.maintenance): moved to archive/.
    archived: bool


def note_days(paths: ScopePaths) -> list[NoteDay]:
    """Every day with a note, the newest first."""
    found: dict[str, NoteDay] = {}
    for folder, archived in ((archive_dir(paths), True), (paths.directory, False)):
        if not folder.is_dir():
            continue
        for path in folder.glob("????-??-??.md"):
            try:
                date.fromisoformat(path.stem)
            except ValueError:
                continue
            found[path.stem] = NoteDay(path.stem, path, archived)
    return [found[day] for day in sorted(found, reverse=True)]


def note_lines(day: NoteDay, forgotten: ForgottenTexts) -> list[str]:
    text = forgotten.keep_lines(read_text_lenient(day.path, max_chars=MAX_NOTE_CHARS))
    return [line for line in text.splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class MemoryFileVersion:
    """MEMORY.md now (`name` "current") or an archived version (its UTC timestamp)."""

    name: str
    path: Path
    saved_at: float | None
    entries: int
    size: int


def memory_versions(paths: ScopePaths) -> list[MemoryFileVersion]:
    """The current MEMORY.md (if any), then its earlier versions, the newest first."""
    found = []
    if paths.memory_file.is_file():
        text = read_memory_version(paths.memory_file, MAX_MEMORY_CHARS)
        size = paths.memory_file.stat().st_size
        found.append(MemoryFileVersion(CURRENT, paths.memory_file, None, len(entries(text)), size))
    for version in list_versions(paths):
        text = read_memory_version(version.path, MAX_MEMORY_CHARS)
        saved = version.saved_at.timestamp()
        count = len(entries(text))
        found.append(MemoryFileVersion(version.version, version.path, saved, count, version.size))
    return found


def memory_text(paths: ScopePaths, name: str, forgotten: ForgottenTexts) -> str | None:
    """MEMORY.md now or as version `name`; None when there is no such version."""
    if name == CURRENT:
        if not paths.memory_file.is_file():
            return None
        path = paths.memory_file
    else:
        version = find_version(paths, name)
        if version is None:
            return None
        path = version.path
    return forgotten.keep_lines(read_memory_version(path, MAX_MEMORY_CHARS))


@dataclass(frozen=True, slots=True)
class DiffLine:
    # "add", "remove", "same" or "hunk" (the @@ line saying where).
    kind: str
    text: str


def diff_lines(old: str, new: str) -> list[DiffLine]:
    """What changed from `old` to `new`, line by line, with three lines of context."""
    found = []
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3))
    # After the two header lines (--- and +++), which a changed line can look like.
    for line in lines[2:]:
        if line.startswith("@@"):
            found.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            found.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            found.append(DiffLine("remove", line[1:]))
        else:
            found.append(DiffLine("same", line[1:]))
    return found
