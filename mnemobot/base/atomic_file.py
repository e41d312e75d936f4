"""Crash-safe file writes and tolerant JSONL reads.

Whole-file rewrites go to a temp file in the same directory, are fsynced, then
`os.replace`d over the target, so a crash at any moment leaves the old or the new file.
JSONL appends are one `write` of whole lines; a reader skips and counts torn lines.
Appends may be held back instead (`held_appends`), for a caller that writes several
files' appends as one step.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson


def write_atomic(path: Path, data: bytes) -> None:
    write_atomic_parts(path, (data,))


def write_atomic_parts(path: Path, parts: Iterable[bytes | memoryview]) -> None:
    """`write_atomic` of the parts one after the other, never joined in memory (a file of
    hundreds of megabytes made of arrays)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for part in parts:
                handle.write(part)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# The appends `held_appends` keeps back in this thread, while one is open.
_HELD: ContextVar[list[tuple[Path, bytes]] | None] = ContextVar("held_appends", default=None)


@contextlib.contextmanager
def held_appends() -> Iterator[list[tuple[Path, bytes]]]:
    """The block's appends (`append_bytes`, this thread's), listed in order as (path,
    data) instead of written; durable ones are written all the same. For a caller whose
    one step appends to several files (an imported message: its daily note line, its
    items in two or three files): one append can be cut by a crash only before or after
    it, several between any two, and the caller writes them so that a crash between them
    can be finished (`bot.cli.import_journal`). Nothing in the block may read back what
    it appended."""
    held: list[tuple[Path, bytes]] = []
    token = _HELD.set(held)
    try:
        yield held
    finally:
        _HELD.reset(token)


def append_bytes(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Append whole lines in one go; a failed append leaves the file as it was.

    `os.write` may write less than asked (a full disk, a signal): the rest is written in
    further calls, and if one fails the file is cut back to its size before this append,
    so a reader never meets half a record of ours and the caller gets the error. With
    `durable`, the data is fsynced before returning (what an acknowledgement relies on).
    """
    held = _HELD.get()
    if held is not None and not durable:
        held.append((path, bytes(data)))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        start = os.fstat(fd).st_size
        # A previous writer killed mid-line leaves no trailing newline; start on a fresh
        # line so our record is not glued to the torn one.
        if start > 0 and os.pread(fd, 1, start - 1) != b"\n":
            data = b"\n" + data
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(f"could not append to {path.name}: nothing written")
                view = view[written:]
            if durable:
                os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def append_jsonl(path: Path, records: Iterable[Any], *, durable: bool = False) -> None:
    payload = b"".join(orjson.dumps(record) + b"\n" for record in records)
    if payload:
        append_bytes(path, payload, durable=durable)


@dataclass(slots=True)
class JsonlRead:
    records: list[dict[str, Any]]
    skipped: int


def iter_jsonl_lines(data: bytes) -> Iterator[tuple[dict[str, Any] | None, bytes]]:
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            yield None, line
            continue
        yield (value if isinstance(value, dict) else None), line


def read_jsonl(path: Path) -> JsonlRead:
    """Read the JSON objects of a JSONL file; torn or corrupt lines are skipped and counted."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return JsonlRead([], 0)
    records: list[dict[str, Any]] = []
    skipped = 0
    for value, _line in iter_jsonl_lines(data):
        if value is None:
            skipped += 1
        else:
            records.append(value)
    return JsonlRead(records, skipped)


def read_text_lenient(path: Path, max_chars: int | None = None) -> str:
    """Read a hand-edited text file: invalid UTF-8 becomes U+FFFD, huge files are cut."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(None if max_chars is None else max_chars * 4 + 4)
    except (FileNotFoundError, IsADirectoryError):
        return ""
    text = raw.decode("utf-8", errors="replace")
    return text if max_chars is None else text[:max_chars]
