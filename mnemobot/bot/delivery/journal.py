"""DurableQueue: entries kept on disk from the moment they are accepted until marked done.

One mechanism carries both directions of a chat:

- the inbox holds every update Telegram handed us, written (and fsynced) before Telegram is
  told we have it, until its reply is out;
- the outbox holds every reply that could not be delivered yet, until Telegram takes it.

The file is an append-only JSONL journal, one whole line per record:

    {"op": "add", "id": "...", "key": "telegram:42", "at": 1700000000.0, "data": {...}}
    {"op": "done", "id": "..."}
    {"op": "seen", "ids": ["...", ...]}      (first line after a rewrite: the dedupe window)

Replaying it gives the live entries (added, not done) in the order they were added, and the
ids seen recently (live or done), so an entry that arrives again after a restart (a webhook
retry, a re-delivered update) is recognised. The window is bounded: the oldest ids are
forgotten first. When done records outnumber live ones, the journal is rewritten whole
(temp file, fsync, rename), so it stays small and a crash mid-rewrite leaves the old file.

Methods do file I/O and are synchronous; async callers run them in a worker thread. A lock
makes them safe to call from several threads; two processes must not share one journal
(the workspace lock of `mnemobot run` sees to that).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.atomic_file import append_bytes, read_jsonl, write_atomic

log = logging.getLogger(__name__)

# Rewrite the journal once this many done records have piled up and they outnumber the
# live entries: often enough to keep replay fast, rarely enough to cost nothing per entry.
REWRITE_AFTER_DONE = 2_000


@dataclass(frozen=True, slots=True)
class Redacted:
    """What `DurableQueue.redact` did: finished entries redacted, live ones left holding
    a text."""

    entries: int
    live: int


@dataclass(frozen=True, slots=True)
class QueuedEntry:
    """One accepted item: its id, the chat (or other key) it belongs to, and its data."""

    id: str
    key: str
    data: dict[str, Any]
    # When it was accepted, by the bot's clock (kept for reading the journal, not used).
    at: float

    def record(self) -> dict[str, Any]:
        return {"op": "add", "id": self.id, "key": self.key, "at": self.at, "data": self.data}


class DurableQueue:
    """Accepted entries on disk until done; a bounded memory of ids already seen."""

    def __init__(self, path: Path, *, remembered_ids: int = 100_000) -> None:
        self.path = path
        self.remembered_ids = remembered_ids
        self._lock = threading.Lock()
        self._live: OrderedDict[str, QueuedEntry] = OrderedDict()
        # Ids seen, oldest first; a value of True means the entry is done.
        self._seen: OrderedDict[str, bool] = OrderedDict()
        self._done_records = 0
        self.skipped_lines = 0
        self._commit_lock = threading.Lock()
        self._queued: list[bytes] = []
        self._tickets = 0
        self._committed = 0
        # Ids being written by an `add` that has not returned yet.
        self._writing: set[str] = set()
        # Live ids whose `add` could not be written (see `add(in_memory_on_failure=...)`).
        self._in_memory: set[str] = set()
        self._replay()

    # -- reading -------------------------------------------------------------------------------

    def _replay(self) -> None:
        read = read_jsonl(self.path)
        self.skipped_lines = read.skipped
        if read.skipped:
            log.warning("%s: skipped %d torn or corrupt lines", self.path.name, read.skipped)
        for record in read.records:
            op = record.get("op")
            if op == "seen":
                for entry_id in record.get("ids") or ():
                    self._remember(str(entry_id), done=True)
            elif op == "add":
                entry = _entry_from(record)
                if entry is None:
                    self.skipped_lines += 1
                    continue
                if entry.id not in self._seen:
                    self._live[entry.id] = entry
                    self._remember(entry.id, done=False)
            elif op == "done":
                entry_id = str(record.get("id"))
                self._live.pop(entry_id, None)
                self._remember(entry_id, done=True)
                self._done_records += 1

    def pending(self, key: str | None = None) -> list[QueuedEntry]:
        """Live entries in the order they were added (of one key, or all)."""
        with self._lock:
            return [e for e in self._live.values() if key is None or e.key == key]

    def pending_keys(self) -> list[str]:
        with self._lock:
            return list(dict.fromkeys(e.key for e in self._live.values()))

    def seen(self, entry_id: str) -> bool:
        with self._lock:
            return entry_id in self._seen

    def is_live(self, entry_id: str) -> bool:
        with self._lock:
            return entry_id in self._live

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)

    # -- writing -------------------------------------------------------------------------------

    def add(
        self, entries: Iterable[QueuedEntry], *, in_memory_on_failure: bool = False
    ) -> list[QueuedEntry]:
        """Keep `entries` durably; returns those not seen before (the rest are duplicates).

        Returns only after the new entries are fsynced: the caller may then acknowledge them.
        When the journal cannot be written (a full or read-only disk) the OSError is raised;
        with `in_memory_on_failure` the entries are kept in memory only instead (see
        `in_memory`): the caller goes on, and a restart would not find them.
        """
        chunk = b""
        with self._lock:
            fresh: list[QueuedEntry] = []
            ids: set[str] = set()
            in_flight = False
            for entry in entries:
                if entry.id in self._writing:
                    in_flight = True
                if entry.id in self._seen or entry.id in ids or entry.id in self._writing:
                    continue
                ids.add(entry.id)
                fresh.append(entry)
            if not fresh:
                ticket = self._tickets
            else:
                self._writing.update(ids)
                ticket = self._enqueue([entry.record() for entry in fresh])
                chunk = self._queued[-1]
        in_memory = False
        try:
            if fresh or in_flight:
                # A duplicate of an entry still being written returns once it is on disk too.
                self._commit(ticket)
        except OSError:
            if not (in_memory_on_failure and fresh):
                raise
            in_memory = True
        finally:
            with self._lock:
                self._writing.difference_update(ids)
        with self._lock:
            if in_memory:
                # Not retried by a later commit: a `done` of it would never be written.
                self._queued = [queued for queued in self._queued if queued is not chunk]
                self._in_memory.update(ids)
            for entry in fresh:
                self._live[entry.id] = entry
                self._remember(entry.id, done=False)
        return fresh

    def in_memory(self, entry_id: str) -> bool:
        """Whether a live entry is kept in memory only (its journal write failed)."""
        with self._lock:
            return entry_id in self._in_memory

    def done(self, entry_ids: Iterable[str], *, in_memory_on_failure: bool = False) -> None:
        """Mark entries finished; they will not come back after a restart.

        With `in_memory_on_failure`, a mark that cannot be written (a full disk) still
        counts in memory; it is written with the next write that succeeds, and until then a
        restart would bring the entries back once.
        """
        with self._lock:
            finished = [i for i in dict.fromkeys(entry_ids) if i in self._live]
            if not finished:
                return
            on_disk = [i for i in finished if i not in self._in_memory]
            ticket = self._enqueue([{"op": "done", "id": i} for i in on_disk]) if on_disk else 0
        if on_disk:
            try:
                self._commit(ticket)
            except OSError:
                if not in_memory_on_failure:
                    raise
        with self._lock:
            self._in_memory.difference_update(finished)
            for entry_id in finished:
                if self._live.pop(entry_id, None) is not None:
                    self._seen[entry_id] = True
                    self._done_records += 1
            rewrite = self._done_records >= REWRITE_AFTER_DONE and self._done_records > len(
                self._live
            )
        if rewrite:
            with self._commit_lock, self._lock:
                if self._done_records >= REWRITE_AFTER_DONE and not self._queued:
                    self._rewrite()

    def rename_ids(self, rename: Callable[[str], str]) -> int:
        """Give entries and remembered ids the id `rename` makes of theirs (a change of how
        ids are made), rewriting the journal once if any changed; returns how many did.
        Call it before the queue is used: an id handed out before keeps its old name."""
        with self._commit_lock, self._lock:
            renamed = {old: rename(old) for old in self._seen}
            changed = sum(1 for old, new in renamed.items() if new != old)
            if changed:
                self._seen = OrderedDict((renamed[old], done) for old, done in self._seen.items())
                self._live = OrderedDict(
                    (renamed[old], replace(entry, id=renamed[old]))
                    for old, entry in self._live.items()
                )
                self._rewrite()
        return changed

    def purge(self, holds: Callable[[str], bool]) -> int:
        """Rewrite the journal now, so no finished entry of a key `holds` accepts is left
        in it (an erased chat); returns how many of those it held. Live entries stay:
        they are still owed their answer or delivery."""
        with self._commit_lock, self._lock:
            dropped = sum(
                1
                for record in read_jsonl(self.path).records
                if record.get("op") == "add"
                and isinstance(record.get("key"), str)
                and holds(record["key"])
                and record.get("id") not in self._live
            )
            # Safe with records still queued for the group commit: an `add` not yet written
            # is not live yet (it is appended after this), a `done` of a live entry follows
            # the entry rewritten here.
            if dropped:
                self._rewrite()
        return dropped

    def redact(
        self, holds: Callable[[str], bool], redact: Callable[[Any], tuple[Any, int]]
    ) -> Redacted:
        """Redact what the finished entries of keys `holds` accepts say (`redact` their
        data: forgotten texts), in place: every entry keeps its id, key and state.

        Live entries stay as they are: a message still owed its answer is answered, a reply
        still owed its delivery goes out as it was written; those holding a text are
        counted (`Redacted.live`), for the caller to come back once they are done. The
        journal is rewritten line for line under the commit lock, so no append falls in
        between; records still queued are appended after it.
        """
        with self._commit_lock, self._lock:
            live = sum(1 for e in self._live.values() if holds(e.key) and redact(e.data)[1] > 0)
            try:
                lines = self.path.read_bytes().split(b"\n")
            except FileNotFoundError:
                lines = []
            changed = 0
            for number, line in enumerate(lines):
                new = _redacted_record(line, holds, redact, self._live)
                if new is not None:
                    lines[number] = new
                    changed += 1
            if changed:
                write_atomic(self.path, b"\n".join(lines))
        return Redacted(changed, live)

    # Group commit: changes are queued in order under the state lock; one thread at a time
    # writes everything queued so far in one append and one fsync, and every caller whose
    # records that write carried returns. Under load many replies share one fsync instead
    # of each waiting for its own (a few ms each on an ordinary disk).

    def _enqueue(self, records: list[dict[str, Any]]) -> int:
        self._queued.append(b"".join(orjson.dumps(record) + b"\n" for record in records))
        self._tickets += 1
        return self._tickets

    def _commit(self, ticket: int) -> None:
        with self._commit_lock:
            if self._committed >= ticket:
                return
            with self._lock:
                batch, self._queued = self._queued, []
                upto = self._tickets
            try:
                append_bytes(self.path, b"".join(batch), durable=True)
            except BaseException:
                with self._lock:
                    # Written by nobody: the next commit tries these records again.
                    self._queued[:0] = batch
                raise
            self._committed = upto

    def _remember(self, entry_id: str, *, done: bool) -> None:
        self._seen[entry_id] = done
        self._seen.move_to_end(entry_id)
        while len(self._seen) > self.remembered_ids:
            oldest, oldest_done = next(iter(self._seen.items()))
            if not oldest_done:
                # A live entry is never forgotten: move it to the young end and stop here.
                self._seen.move_to_end(oldest)
                break
            del self._seen[oldest]

    def _rewrite(self) -> None:
        seen_done = [entry_id for entry_id, done in self._seen.items() if done]
        lines = [orjson.dumps({"op": "seen", "ids": seen_done})]
        lines += [orjson.dumps(entry.record()) for entry in self._live.values()]
        write_atomic(self.path, b"\n".join(lines) + b"\n")
        self._done_records = 0


def _entry_from(record: dict[str, Any]) -> QueuedEntry | None:
    entry_id, key, data = record.get("id"), record.get("key"), record.get("data")
    if not isinstance(entry_id, str) or not isinstance(key, str) or not isinstance(data, dict):
        return None
    at = record.get("at")
    return QueuedEntry(
        id=entry_id, key=key, data=data, at=float(at) if isinstance(at, int | float) else 0.0
    )


def _redacted_record(
    line: bytes,
    holds: Callable[[str], bool],
    redact: Callable[[Any], tuple[Any, int]],
    live: Mapping[str, QueuedEntry],
) -> bytes | None:
    """The line of a finished entry of a key `holds` accepts, with its data redacted; None
    when there is nothing to change (another record, another chat, a live entry, a torn
    line)."""
    if b'"add"' not in line:
        return None  # cheap: most lines are done records
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("op") != "add":
        return None
    key = record.get("key")
    if not isinstance(key, str) or not holds(key) or record.get("id") in live:
        return None
    data, count = redact(record.get("data"))
    if not count:
        return None
    record["data"] = data
    return orjson.dumps(record)
