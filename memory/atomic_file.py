"""Crash-safe file writes and tolerant JSONL reads (DESIGN §3).

Whole-file rewrites go to a temp file in the same directory, are fsynced, then
`os.replace`d over the target, so a crash at any moment leaves the old or the new file.
JSONL appends are one `write` of whole lines; a reader skips and counts torn lines.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
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


def append_bytes(path: Path, data: bytes) -> None:
    """Append in a single write so concurrent readers never see half a line of ours."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        # A previous writer killed mid-line leaves no trailing newline; start on a fresh
        # line so our record is not glued to the torn one.
        if os.fstat(fd).st_size > 0:
            with open(path, "rb") as reader:
                reader.seek(-1, os.SEEK_END)
                if reader.read(1) != b"\n":
                    data = b"\n" + data
        os.write(fd, data)
    finally:
        os.close(fd)


def append_jsonl(path: Path, records: Iterable[Any]) -> None:
    payload = b"".join(orjson.dumps(record) + b"\n" for record in records)
    if payload:
        append_bytes(path, payload)


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
