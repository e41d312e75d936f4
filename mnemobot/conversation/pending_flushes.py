"""The memory flushes a compaction left for later: which lines of a chat's offload log
still wait for their facts to be drawn into memory.

On a model server that answers one request at a time (a home one), a compaction's memory
flush before the reply kept the user waiting for a second long model call: live on a
2,048-token window, the summary took 21 s, the flush 25 s, then the reply 28 s. The
compacted messages are already in the chat's append-only offload log when the session is
rewritten, so the flush can wait: the compaction notes the log's lines here (`note_last`)
and the flush runs in the background once the reply is out.

A ledger per chat (`SessionStore.flush_ledger_path_for`) holds only line numbers and times
(no text: forgetting has nothing to redact here); erasing the session erases it too. It is
changed under its own lock file, so replicas sharing the workspace never draw the same
lines at once: a flush `claim`s its lines for `CLAIM_SECONDS`, and `finish`es them when
their facts are kept, or `release`s them when it had to give way to a reply. A process
killed meanwhile leaves its claim to expire; the lines are drawn again after that. The
functions on the ledger's entries are pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.base.file_lock import private_file_lock
from mnemobot.conversation.session import (
    FLUSH_LEDGER_DIR_NAME,
    InvalidSessionKey,
    Message,
    check_session_key,
    flush_ledger_path,
)

# How long a claim keeps other flushes (another replica's, or this process's after a
# restart) off its lines. It covers the wait at a home server's gate behind the chat's
# replies and the flush calls themselves (each at most llm.requestTimeoutSeconds, 120 s by
# default); a flush killed with the process is drawn again this long after its claim.
CLAIM_SECONDS = 15 * 60
# A ledger bigger than this is not read (it holds a few entries of line numbers: one
# this size was not written by us).
LEDGER_MAX_BYTES = 1_000_000


@dataclass(frozen=True, slots=True)
class LogLines:
    """Lines `start` to `end` (not included) of a chat's offload log, compacted at `at`
    (seconds since the epoch); the first of them was written at `first_at` (its message's
    own time, to tell a log begun again after an erasure)."""

    start: int
    end: int
    at: float
    first_at: str | None = None
    # The memory scope its facts go to (a start of the bot resumes it without a turn).
    scope: str | None = None


def noted(entries: Sequence[dict[str, Any]], lines: LogLines) -> list[dict[str, Any]]:
    """`entries` with `lines` waiting for a flush; the same lines once (a compaction
    killed before it saved the session offloads the same messages again)."""
    kept = [dict(entry) for entry in entries if _lines_of(entry) != (lines.start, lines.end)]
    entry: dict[str, Any] = {"start": lines.start, "end": lines.end, "at": lines.at}
    if lines.first_at is not None:
        entry["firstAt"] = lines.first_at
    if lines.scope is not None:
        entry["scope"] = lines.scope
    return [*kept, entry]


def claimable(entries: Sequence[dict[str, Any]], now: float) -> list[LogLines]:
    """The lines no flush holds at `now`: never claimed, or claimed by one that is late."""
    return [
        LogLines(
            entry["start"],
            entry["end"],
            _number(entry.get("at"), now),
            first if isinstance(first := entry.get("firstAt"), str) else None,
            scope if isinstance(scope := entry.get("scope"), str) else None,
        )
        for entry in entries
        if _lines_of(entry) is not None and _number(entry.get("claimedUntil"), 0.0) <= now
    ]


def claimed(
    entries: Sequence[dict[str, Any]], lines: Sequence[LogLines], until: float | None
) -> list[dict[str, Any]]:
    """`entries` with `lines` held until `until` (None: let go)."""
    chosen = {(line.start, line.end) for line in lines}
    changed = []
    for entry in entries:
        entry = dict(entry)
        if _lines_of(entry) in chosen:
            entry.pop("claimedUntil", None)
            if until is not None:
                entry["claimedUntil"] = until
        changed.append(entry)
    return changed


def held_until(entries: Sequence[dict[str, Any]], now: float) -> float | None:
    """When the first claim still held at `now` runs out; None when none is held."""
    held = [
        until
        for entry in entries
        if _lines_of(entry) is not None and (until := _number(entry.get("claimedUntil"), 0.0)) > now
    ]
    return min(held, default=None)


def failed(
    entries: Sequence[dict[str, Any]], lines: Sequence[LogLines], retry_at: float, most: int
) -> tuple[list[dict[str, Any]], list[LogLines]]:
    """`entries` after a flush of `lines` failed: each tried again from `retry_at`, or
    dropped after `most` tries (returned, so that the caller can say so)."""
    chosen = {(line.start, line.end) for line in lines}
    kept, dropped_spans = [], set()
    for entry in entries:
        entry = dict(entry)
        span = _lines_of(entry)
        if span in chosen:
            tries = int(_number(entry.get("tries"), 0)) + 1
            if tries >= most:
                dropped_spans.add(span)
                continue
            entry["tries"] = tries
            entry["claimedUntil"] = retry_at
        kept.append(entry)
    return kept, [line for line in lines if (line.start, line.end) in dropped_spans]


def without(entries: Sequence[dict[str, Any]], lines: Sequence[LogLines]) -> list[dict[str, Any]]:
    """`entries` less `lines` (their facts are kept)."""
    done = {(line.start, line.end) for line in lines}
    return [dict(entry) for entry in entries if _lines_of(entry) not in done]


def _number(value: Any, default: float) -> float:
    return float(value) if type(value) in (int, float) else default


def _lines_of(entry: dict[str, Any]) -> tuple[int, int] | None:
    start, end = entry.get("start"), entry.get("end")
    if type(start) is not int or type(end) is not int or not 0 <= start < end:
        return None
    return start, end


class PendingFlushes:
    """The ledgers of the chats' sessions in `directory` (see the module docstring).
    Blocking file work: call from a worker thread."""

    def __init__(self, directory: Path, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.directory = directory
        self.clock = clock

    def ledger_path(self, key: str) -> Path:
        return flush_ledger_path(self.directory, key)

    def offload_path(self, key: str) -> Path:
        return self.directory / f"{check_session_key(key)}.log.jsonl"

    def waiting(self, key: str) -> bool:
        """Whether the chat has lines waiting (cheap: the ledger exists)."""
        return self.ledger_path(key).exists()

    def log_state(self, key: str) -> tuple[int, int, int] | None:
        """The offload log's inode, size and change time (None: there is none): an
        erasure rewrites it, an append grows it."""
        try:
            stat = self.offload_path(key).stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_size, stat.st_mtime_ns

    def note_last(
        self, key: str, count: int, first_at: str | None, scope: str | None = None
    ) -> LogLines:
        """Note the offload log's last `count` lines (a compaction's, just appended; the
        first of them written at `first_at`; their facts go to `scope`) as waiting for a
        flush; returns them."""
        path = self.offload_path(key)
        end = _line_count(path)
        lines = LogLines(max(0, end - count), end, self.clock(), first_at, scope)
        with self._locked(key):
            self._write(key, noted(self._read(key), lines))
        return lines

    def claim(self, key: str) -> list[LogLines]:
        """Hold the chat's waiting lines that no one holds, for `CLAIM_SECONDS`."""
        now = self.clock()
        with self._locked(key):
            entries = self._read(key)
            free = claimable(entries, now)
            if free:
                self._write(key, claimed(entries, free, now + CLAIM_SECONDS))
        return free

    def waiting_keys(self) -> list[str]:
        """The chats with lines waiting (a start of the bot resumes them)."""
        folder = self.directory / FLUSH_LEDGER_DIR_NAME
        if not folder.is_dir():
            return []
        keys = [p.name[: -len(".json")] for p in folder.glob("*.json") if p.is_file()]
        return sorted(key for key in keys if _valid_key(key))

    def scope_of(self, key: str) -> str | None:
        """The memory scope the chat's waiting lines go to, as noted."""
        with self._locked(key):
            entries = self._read(key)
        return next((e["scope"] for e in entries if isinstance(e.get("scope"), str)), None)

    def held_until(self, key: str) -> float | None:
        """When a claim on the chat's lines held by another flush (a replica's, or one of a
        process that was killed) runs out; None when none is held."""
        with self._locked(key):
            return held_until(self._read(key), self.clock())

    def failed(
        self, key: str, lines: Sequence[LogLines], retry_seconds: float, most: int
    ) -> list[LogLines]:
        """A flush of `lines` failed: try them again in `retry_seconds`, up to `most`
        tries in all; returns those given up."""
        with self._locked(key):
            entries, given_up = failed(self._read(key), lines, self.clock() + retry_seconds, most)
            self._write(key, entries)
        return given_up

    def release(self, key: str, lines: Sequence[LogLines]) -> None:
        with self._locked(key):
            self._write(key, claimed(self._read(key), lines, None))

    def finish(self, key: str, lines: Sequence[LogLines]) -> None:
        with self._locked(key):
            self._write(key, without(self._read(key), lines))

    def messages(self, key: str, lines: Sequence[LogLines]) -> list[Message]:
        """The offload log's messages on `lines`. A torn or unreadable line is skipped;
        lines the log no longer has (pruned), or whose first message is not the one noted
        (the log was erased and begun again), give nothing."""
        spans = sorted((line.start, line.end) for line in lines)
        if not spans:
            return []
        last = max(end for _, end in spans) - 1
        read: dict[int, Message] = {}
        try:
            with open(self.offload_path(key), "rb") as handle:
                for number, raw in enumerate(handle):
                    if number > last:
                        break
                    # Spans are checked, never counted out: a hand-made ledger may name
                    # lines far past the log's end.
                    if not any(start <= number < end for start, end in spans):
                        continue
                    try:
                        record = orjson.loads(raw)
                    except orjson.JSONDecodeError:
                        continue
                    if isinstance(record, dict) and isinstance(record.get("role"), str):
                        read[number] = record  # type: ignore[assignment]
        except FileNotFoundError:
            return []
        found: list[Message] = []
        for line in sorted(lines, key=lambda line: line.start):
            first = read.get(line.start)
            if line.first_at is not None and (first is None or first.get("at") != line.first_at):
                continue
            found += [read[n] for n in sorted(read) if line.start <= n < line.end]
        return found

    def _locked(self, key: str) -> Any:
        path = self.ledger_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        return private_file_lock(path.with_suffix(".lock"))

    def _read(self, key: str) -> list[dict[str, Any]]:
        path = self.ledger_path(key)
        try:
            if path.stat().st_size > LEDGER_MAX_BYTES:
                return []
            value = orjson.loads(path.read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return []
        entries = value.get("waiting") if isinstance(value, dict) else None
        if not isinstance(entries, list):
            return []
        return [entry for entry in entries if isinstance(entry, dict)]

    def _write(self, key: str, entries: list[dict[str, Any]]) -> None:
        path = self.ledger_path(key)
        if not entries:
            path.unlink(missing_ok=True)
            return
        write_atomic(path, orjson.dumps({"waiting": entries}))


def _valid_key(key: str) -> bool:
    try:
        check_session_key(key)
    except InvalidSessionKey:
        return False
    return True


def _line_count(path: Path) -> int:
    """Lines of `path` (its newlines: appends always end a line)."""
    count = 0
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                count += chunk.count(b"\n")
    except FileNotFoundError:
        return 0
    return count
