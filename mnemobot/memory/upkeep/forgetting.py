"""Forgetting that erases, and a chat's memory handed over or wiped.

`MemoryForget.forget` hides an item at once (tombstones, append-only) and notes what
it said in the scope's pending-erasure file (which texts: `memory.upkeep.forgotten_texts`).
`erase_forgotten` — one maintenance step per scope — then removes that text from every
file of the scope: item files rewritten with only live items (the tombstones keep their
fingerprints, a hash, never the text), daily notes redacted line by line, the lines of
MEMORY.md and its archived versions removed, and the conversations of the scope's chats
(sessions and offload logs, forum topics included; with replicas, the sessions in Redis)
redacted message by message (a conversation summary sentence by sentence:
`text_redaction`), each while its turns are kept out (`text_holders`). The pending file
goes last, so a crash mid-way, or a session held by a long turn, leaves the work to the
next run.

Saying a forgotten thing again later, on purpose, is a new statement and is kept: a
tombstone's fingerprint only keeps out copies dated before the forgetting (an old
conversation replayed or extracted again), see `memory.store.item_store`.

`erase_scope` deletes everything a chat's memory and session hold (/forget_me);
`export_scope` packs it into one zip (/export).
"""

from __future__ import annotations

import io
import shutil
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.atomic_file import append_jsonl, write_atomic
from mnemobot.base.counts import counted
from mnemobot.memory.notes.daily_notes import FORGOTTEN_MARK
from mnemobot.memory.store.items import normalize_content
from mnemobot.memory.store.scope_paths import GLOBAL_SCOPE, ScopePaths
from mnemobot.memory.upkeep.text_holders import FILE_SESSION_HOLDS, SessionHolds
from mnemobot.memory.upkeep.text_redaction import holds_forgotten, redact_forgotten

PENDING_FILE_NAME = ".forget_pending.jsonl"
SESSIONS_DIR_NAME = "sessions"
LARGE_RESULTS_DIR_NAME = "large_tool_results"
CONSOLE_HISTORY_NAME = "console-history"
CONSOLE_SCOPE_PREFIX = "console:"


@dataclass(slots=True)
class ErasureReport:
    scope: str
    needles: int = 0
    files_rewritten: list[str] = field(default_factory=list)
    lines_redacted: int = 0
    # Sessions that stayed locked by a running turn: their erasure waits for the next run.
    busy: list[str] = field(default_factory=list)
    # What was redacted outside the workspace's files (a session in Redis), and what was
    # done after (the store asked to drop its old copies).
    elsewhere: list[str] = field(default_factory=list)

    def add(self, other: ErasureReport) -> ErasureReport:
        self.files_rewritten += other.files_rewritten
        self.lines_redacted += other.lines_redacted
        self.busy += other.busy
        self.elsewhere += other.elsewhere
        return self


def pending_path(paths: ScopePaths) -> Path:
    return paths.directory / PENDING_FILE_NAME


def note_forgotten(paths: ScopePaths, needles: Iterable[str]) -> None:
    """Queue texts to erase from the scope's files at the next maintenance run."""
    records = [{"needle": n} for n in dict.fromkeys(normalize_content(n) for n in needles) if n]
    if records:
        append_jsonl(pending_path(paths), records)


def pending_needles(paths: ScopePaths) -> list[str]:
    try:
        data = pending_path(paths).read_bytes()
    except FileNotFoundError:
        return []
    needles: list[str] = []
    for line in data.splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("needle"), str):
            needles.append(record["needle"])
    return list(dict.fromkeys(n for n in needles if n))


def session_files(workspace: Path, scope: str) -> list[Path]:
    """Files of the chat outside its memory directory that hold what was said in it.

    The session and its offload log (a chat's session key is its scope), its large tool
    results, and for the console the terminal's line history.
    """
    directory = workspace / SESSIONS_DIR_NAME
    files = [directory / f"{scope}.json", directory / f"{scope}.log.jsonl"]
    results = workspace / LARGE_RESULTS_DIR_NAME / scope
    if results.is_dir():
        files += sorted(p for p in results.rglob("*") if p.is_file())
    if scope.startswith(CONSOLE_SCOPE_PREFIX):
        files.append(workspace / CONSOLE_HISTORY_NAME)
    return files


# What a tool call's arguments become once they held a forgotten text.
NO_ARGUMENTS = "{}"


def _redact_value(value: Any, needles: list[str]) -> tuple[Any, int]:
    """A JSON value with every string holding a needle redacted (`redact_forgotten`: the
    forgotten mark, or a conversation summary without the sentences holding one)."""
    if isinstance(value, str):
        if not holds_forgotten(value, needles):
            return value, 0
        return redact_forgotten(value, needles), 1
    if isinstance(value, list):
        count = 0
        out = []
        for element in value:
            new, changed = _redact_value(element, needles)
            out.append(new)
            count += changed
        return out, count
    if isinstance(value, dict):
        count = 0
        result = {}
        for key, element in value.items():
            result[key], changed = _redact_value(element, needles)
            if changed and key == "arguments" and isinstance(element, str):
                # A tool call's arguments stay JSON: servers whose chat template reads the
                # arguments of past calls refuse the next request otherwise.
                result[key] = NO_ARGUMENTS
            count += changed
        return result, count
    return value, 0


def _is_memory_file(path: Path) -> bool:
    # MEMORY.md and its archived versions (archive/MEMORY.<time>.md): a forgotten bullet
    # is removed, not marked, so a rewrite of the file never reads a marker back.
    return path.suffix == ".md" and path.name.startswith("MEMORY")


def _escaped(path: Path, text: str) -> bool:
    """Whether JSON of `path` may hold a needle its raw text does not show: it escapes a
    line break in a string (a needle running over one, as in a summary, is only found
    once the string is read) and a quote."""
    return path.suffix in (".json", ".jsonl") and "\\" in text


def redact_file(path: Path, needles: list[str]) -> int:
    """Redact one file in place (atomically); the number of lines or strings changed."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return 0
    text = data.decode("utf-8", errors="replace")
    if not holds_forgotten(text, needles) and not _escaped(path, text):
        return 0
    changed = 0
    if path.suffix == ".json":
        try:
            new, changed = _redact_value(orjson.loads(data), needles)
        except orjson.JSONDecodeError:
            pass
        else:
            if changed:
                write_atomic(path, orjson.dumps(new, option=orjson.OPT_INDENT_2))
            return changed
    kept: list[str] = []
    for line in text.split("\n"):
        redacted = _redacted_line(path, line, needles)
        if redacted is None:
            kept.append(line)
            continue
        changed += 1
        if not _is_memory_file(path):
            kept.append(redacted)
    if changed:
        write_atomic(path, "\n".join(kept).encode())
    return changed


def _redacted_line(path: Path, line: str, needles: list[str]) -> str | None:
    """A line of a file with the needles redacted; None when it holds none."""
    holds = holds_forgotten(line, needles)
    if path.suffix == ".jsonl" and (holds or _escaped(path, line)):
        try:
            new, count = _redact_value(orjson.loads(line), needles)
        except orjson.JSONDecodeError:
            pass
        else:
            return orjson.dumps(new).decode() if count or holds else None
    if not holds:
        return None
    clock = line[:7] if line.startswith("[") and line[6:7] == "]" else ""
    return f"{clock} {FORGOTTEN_MARK}".strip()


def erase_texts_from_memory_files(
    workspace: Path, paths: ScopePaths, needles: list[str], *, skip: Iterable[Path] = ()
) -> ErasureReport:
    """Redact `needles` from every file of the scope's memory directory but `skip`."""
    report = ErasureReport(paths.scope, needles=len(needles))
    if not needles or not paths.directory.is_dir():
        return report
    skipped = {path.resolve() for path in skip} | {pending_path(paths).resolve()}
    for path in sorted(p for p in paths.directory.rglob("*") if p.is_file()):
        if path.resolve() in skipped or path.name.endswith(".lock"):
            continue
        _redact_into(report, workspace, path, needles)
    return report


def _redact_into(report: ErasureReport, workspace: Path, path: Path, needles: list[str]) -> None:
    changed = redact_file(path, needles)
    if changed:
        report.lines_redacted += changed
        report.files_rewritten.append(str(path.relative_to(workspace)))


def conversation_files(workspace: Path, scope: str) -> dict[str, list[Path]]:
    """The files holding the conversations of the scope's chats, by session key.

    The chat's session and offload log, and those of its forum topics
    (`<scope>:<threadId>`), which share the group's memory; with the global scope, every
    chat's. Large tool results and the console's line history go under the scope's key.
    """
    directory = workspace / SESSIONS_DIR_NAME
    found: dict[str, list[Path]] = {}
    if directory.is_dir():
        patterns = ("*",) if scope == GLOBAL_SCOPE else (scope + ".*", scope + ":*")
        for pattern in patterns:
            for path in directory.glob(pattern):
                for suffix in (".log.jsonl", ".json"):
                    if path.name.endswith(suffix) and path.is_file():
                        found.setdefault(path.name[: -len(suffix)], []).append(path)
                        break
    extra = [p for p in session_files(workspace, scope) if p.parent != directory]
    if extra:
        found.setdefault(scope, []).extend(extra)
    return found


def erase_texts_from_conversations(
    workspace: Path,
    scope: str,
    needles: list[str],
    *,
    wait_seconds: float,
    holds: SessionHolds = FILE_SESSION_HOLDS,
) -> ErasureReport:
    """Redact `needles` from the scope's sessions and offload logs (`conversation_files`),
    and from the copies `holds` keeps elsewhere (sessions in Redis).

    Each session is redacted while `holds` keeps its turns out (its lock file, or the
    chat's lease): a turn running in this or another process would otherwise save its copy
    of the conversation over the redacted one. A session still held after `wait_seconds`
    is left for the next run (named in `busy`).
    """
    report = ErasureReport(scope, needles=len(needles))
    if not needles:
        return report
    directory = workspace / SESSIONS_DIR_NAME
    files = conversation_files(workspace, scope)
    keys = set(files) | set(holds.stored_keys(scope))

    def redact(value: Any) -> tuple[Any, int]:
        return _redact_value(value, needles)

    for key in sorted(keys):
        with holds.hold(directory, key, wait_seconds) as held:
            if not held:
                report.busy.append(key)
                continue
            for path in files.get(key, []):
                _redact_into(report, workspace, path, needles)
            stored = holds.redact_stored(key, redact)
            if stored:
                report.lines_redacted += stored
                report.elsewhere.append(f"session {key}")
    return report


def redact_value(value: Any, needles: list[str]) -> tuple[Any, int]:
    """`value` (JSON) with every string holding one of `needles` replaced by the forgotten
    mark, and how many were."""
    return _redact_value(value, needles)


def finish_erasure(paths: ScopePaths, erased: Iterable[str]) -> None:
    """Take the erased texts off the pending file; texts forgotten meanwhile stay on it.

    The caller holds the scope's lock (as `forget` does while noting texts)."""
    done = set(erased)
    left = [needle for needle in pending_needles(paths) if needle not in done]
    if not left:
        pending_path(paths).unlink(missing_ok=True)
        return
    write_atomic(pending_path(paths), b"".join(orjson.dumps({"needle": n}) + b"\n" for n in left))


def erase_scope(workspace: Path, scope: str) -> list[str]:
    """Delete the scope's memory directory and the chat's session files; paths removed."""
    paths = ScopePaths(workspace, scope)
    removed: list[str] = []
    if paths.directory.is_dir():
        count = sum(1 for p in paths.directory.rglob("*") if p.is_file())
        shutil.rmtree(paths.directory)
        removed.append(f"{paths.directory.relative_to(workspace)}/ ({counted(count, 'file')})")
    directory = workspace / SESSIONS_DIR_NAME
    results = workspace / LARGE_RESULTS_DIR_NAME / scope
    if results.is_dir():
        shutil.rmtree(results)
        removed.append(f"{results.relative_to(workspace)}/")
    chat_files = [p for p in session_files(workspace, scope) if p.name != CONSOLE_HISTORY_NAME]
    # The session's lock file stays: another process may hold it, and it holds no text.
    for path in chat_files:
        if path.exists():
            path.unlink()
            removed.append(str(path.relative_to(workspace)))
    for path in directory.glob(f"{scope}.json.*") if directory.is_dir() else []:
        # Set-aside copies of an unreadable session file.
        path.unlink()
        removed.append(str(path.relative_to(workspace)))
    return removed


def _internal(relative: Path) -> bool:
    """A file of the bot's own upkeep, not memory: a lock, the maintenance record, the
    consolidation watermark, texts waiting to be erased (every one a dot-file)."""
    return any(part.startswith(".") for part in relative.parts) or relative.suffix == ".lock"


def export_scope(workspace: Path, scope: str) -> bytes:
    """One zip of the chat's memory: MEMORY.md, daily notes, item files (JSONL), archive;
    not the bot's own upkeep files (`_internal`)."""
    paths = ScopePaths(workspace, scope)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        if paths.directory.is_dir():
            for path in sorted(paths.directory.rglob("*")):
                relative = path.relative_to(paths.directory)
                if path.is_file() and not _internal(relative):
                    archive.write(path, f"memory/{relative}")
        archive.writestr(
            "README.txt",
            f"Memory of chat {scope}.\n"
            "MEMORY.md: long-term memory. YYYY-MM-DD.md: daily notes.\n"
            "items/: remembered items, one JSON object a line (episodic per day, semantic,"
            ' procedural); a line with "tombstone" marks a forgotten item.\n',
        )
    return buffer.getvalue()
