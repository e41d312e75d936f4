"""A scope's BM25 index kept beside its items: `items/index.bin`, memory-mapped at load.

Without it, a load tokenizes every item again and builds the index from the terms: at
100k items about half the load, and most of its memory churn. With it, the index's
arrays are mapped from the file (no parse, no copy: pages are read as queries touch
them) and only the items written since the file was saved are tokenized.

The JSONL files stay the source of truth, which a person may read and edit. The index
file records, for each item file it was built from, its size, inode, mtime, ctime and a
CRC-32 of its bytes; at a load (`FileCheck`) each file is one of:

- unchanged: same size, inode, mtime and ctime: its items are in the index as they are;
- grown: its first `size` bytes still have the recorded CRC (read and checked): what was
  appended since is the *tail*, whose items are indexed anew on top of the file's index;
- new: not known to the index: all of it is tail;
- anything else (shorter, another inode, other bytes, a file gone): the index is stale
  and the load builds it from the items, as without one.

So a hand edit is always noticed (it changes the ctime, and then the CRC); a file changed
within `_UNSURE_SECONDS` of being recorded is recorded with no times, so its CRC is read
at the next load, since the clock may not have ticked between two writes.

Crash safety: the file is written whole to a temporary file, fsynced and renamed over the
old one (`base.atomic_file.write_atomic_parts`): a crash leaves the old index or the new
one, never a mix. A file that is not whole anyway (copied half, cut by a full disk) fails
its length or header checksum, and one whose arrays do not hold together fails the checks
of `read_index`: either way it is ignored and rebuilt. An index made by other term rules
(the tokenizer changed) carries another `terms_identity` and is ignored too.

Layout: 32 bytes (magic, version, header length, header CRC-32, file length), a JSON
header (identity, BM25 parameters, the item files' states, where each array is), then
the arrays, each at a 64-byte boundary.

Why arrays of our own and not SQLite (FTS5, or a table of our terms): see
`tooling/mnemobot_tooling/bench/index_backends.py` and the figures in `memory.store.bm25`.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mnemobot.base.atomic_file import write_atomic_parts
from mnemobot.memory.store.bm25 import BM25Arrays

_MAGIC = b"MNEMOIDX"
_VERSION = 1
_PREAMBLE = struct.Struct("<8sIIIQ")  # magic, version, header length, header CRC, file length
_HEADER_AT = 32
_ALIGN = 64
# A file whose mtime is this close to the moment it was recorded may change again within
# the same clock tick (coarse on some filesystems): its bytes are checked at the next load.
_UNSURE_SECONDS = 2.0
# Joins ids and terms in their blobs; neither ever holds a NUL (ids that do: no index file).
_SEP = "\x00"
_ARRAYS = (
    ("df", np.int64),
    ("doc_ptr", np.int64),
    ("doc_terms", np.int32),
    ("doc_tfs", np.int32),
    ("term_ptr", np.int64),
    ("term_docs", np.int32),
    ("term_tfs", np.int32),
    ("lengths", np.float64),
)


@dataclass(frozen=True, slots=True)
class FileState:
    """An item file as the index saw it: its first `size` bytes are what was indexed."""

    name: str  # relative to the scope's items directory
    size: int
    ino: int
    # -1: unsure (written just before it was recorded): its CRC decides. The ctime too:
    # a hand edit can set the mtime back (`touch -r`), never the ctime.
    mtime_ns: int
    ctime_ns: int
    crc: int

    def to_json(self) -> list[Any]:
        return [self.name, self.size, self.ino, self.mtime_ns, self.ctime_ns, self.crc]

    @classmethod
    def from_json(cls, value: Any) -> FileState:
        name, size, ino, mtime_ns, ctime_ns, crc = value
        return cls(str(name), int(size), int(ino), int(mtime_ns), int(ctime_ns), int(crc))

    def same_stat(self, stat: os.stat_result) -> bool:
        """Whether `stat` says the file is as recorded (an unsure record never is)."""
        return (
            self.mtime_ns != -1
            and stat.st_size == self.size
            and stat.st_mtime_ns == self.mtime_ns
            and stat.st_ctime_ns == self.ctime_ns
        )


def file_state(name: str, stat: os.stat_result, data: bytes | memoryview, crc: int) -> FileState:
    """The state to record for an item file read as `data` (stat taken before the read)."""
    unsure = stat.st_size != len(data) or time.time() - stat.st_ctime < _UNSURE_SECONDS
    if unsure:
        return FileState(name, len(data), stat.st_ino, -1, -1, crc)
    return FileState(name, len(data), stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns, crc)


@dataclass(slots=True)
class IndexFile:
    """A read index file: its arrays (mapped) and the item files it was built from."""

    files: dict[str, FileState]
    arrays: BM25Arrays
    params: tuple[float, float, float]


class FileCheck:
    """What an item file is, against the index file's record of it (see the module
    docstring); `tail_line`: the number of the first line written since (None: none)."""

    __slots__ = ("stale", "tail_line")

    def __init__(self, known: FileState | None, stat: os.stat_result, data: bytes) -> None:
        self.stale = False
        self.tail_line: int | None = 0
        if known is None:
            return  # a new file: all tail
        if stat.st_ino != known.ino or len(data) < known.size:
            self.stale = True
        elif len(data) == known.size and known.same_stat(stat):
            self.tail_line = None
        elif zlib.crc32(memoryview(data)[: known.size]) != known.crc:
            self.stale = True
        else:
            self.tail_line = data.count(b"\n", 0, known.size) if len(data) > known.size else None


def read_index(path: Path, terms_identity: str) -> IndexFile | None:
    """The index in `path`, mapped; None when there is none, or it is not whole, not ours,
    of another version or made by other term rules."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < _HEADER_AT:
                return None
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (FileNotFoundError, ValueError, OSError):
        return None
    try:
        return _parse(mapped, size, terms_identity)
    except (ValueError, KeyError, TypeError, IndexError, orjson.JSONDecodeError, UnicodeError):
        return None


def _parse(mapped: mmap.mmap, size: int, terms_identity: str) -> IndexFile | None:
    magic, version, header_len, header_crc, total = _PREAMBLE.unpack_from(mapped, 0)
    if magic != _MAGIC or version != _VERSION or total != size:
        return None
    header_bytes = mapped[_HEADER_AT : _HEADER_AT + header_len]
    if len(header_bytes) != header_len or zlib.crc32(header_bytes) != header_crc:
        return None
    header = orjson.loads(header_bytes)
    if header["terms"] != terms_identity:
        return None
    places: dict[str, list[int]] = header["arrays"]

    def blob(name: str) -> list[str]:
        start, length = places[name]
        if start + length > size:
            raise ValueError(name)
        text = mapped[start : start + length].decode()
        return text.split(_SEP) if text else []

    arrays: dict[str, Any] = {}
    for name, dtype in _ARRAYS:
        start, count = places[name]
        if start % _ALIGN or start + count * np.dtype(dtype).itemsize > size:
            raise ValueError(name)
        arrays[name] = np.frombuffer(mapped, dtype=dtype, count=count, offset=start)
    found = BM25Arrays(
        ids=blob("ids"),
        vocabulary=blob("vocabulary"),
        total_len=int(header["total_len"]),
        **arrays,
    )
    if not _holds_together(found):
        return None
    files = {state.name: state for state in map(FileState.from_json, header["files"])}
    params = (float(header["k1"]), float(header["b"]), float(header["delta"]))
    return IndexFile(files, found, params)


def _holds_together(a: BM25Arrays) -> bool:
    """Checks that keep a damaged file from indexing out of bounds (a few ms at 1M items)."""
    docs, terms = len(a.ids), len(a.vocabulary)
    entries = len(a.doc_terms)
    if len(a.doc_ptr) != docs + 1 or len(a.lengths) != docs or len(a.df) != terms:
        return False
    if len(a.term_ptr) != terms + 1 or len(a.doc_tfs) != entries:
        return False
    if len(a.term_docs) != entries or len(a.term_tfs) != entries:
        return False
    for ptr in (a.doc_ptr, a.term_ptr):
        if ptr[0] != 0 or ptr[-1] != entries or bool(np.any(np.diff(ptr) < 0)):
            return False
    if entries and (
        int(a.doc_terms.min()) < 0
        or int(a.doc_terms.max()) >= terms
        or int(a.term_docs.min()) < 0
        or int(a.term_docs.max()) >= docs
    ):
        return False
    return len(set(a.ids)) == docs


def write_index(
    path: Path,
    arrays: BM25Arrays,
    files: list[FileState],
    terms_identity: str,
    params: tuple[float, float, float],
) -> bool:
    """Replace the index file atomically; False (nothing written) when an id holds a NUL."""
    if any(_SEP in doc_id for doc_id in arrays.ids):
        return False
    ids = _SEP.join(arrays.ids).encode()
    vocabulary = _SEP.join(arrays.vocabulary).encode()
    parts: list[tuple[str, bytes | memoryview]] = [("ids", ids), ("vocabulary", vocabulary)]
    for name, dtype in _ARRAYS:
        parts.append((name, memoryview(np.ascontiguousarray(getattr(arrays, name), dtype=dtype))))
    k1, b, delta = params
    header: dict[str, Any] = {
        "terms": terms_identity,
        "k1": k1,
        "b": b,
        "delta": delta,
        "total_len": arrays.total_len,
        "files": [state.to_json() for state in files],
        "arrays": {},
    }
    # Where each part goes depends on the header's length, which holds the places: lay
    # them out after a header with room to spare, then fill the places in.
    places: dict[str, list[int]] = header["arrays"]
    for name, _part in parts:
        places[name] = [0, 0]
    reserve = len(orjson.dumps(header)) + 40 * len(parts) + 64
    offset = _aligned(_HEADER_AT + reserve)
    layout: list[tuple[int, bytes | memoryview]] = []
    for name, part in parts:
        nbytes = part.nbytes if isinstance(part, memoryview) else len(part)
        count = nbytes // part.itemsize if isinstance(part, memoryview) else nbytes
        places[name] = [offset, count]
        layout.append((offset, part))
        offset = _aligned(offset + nbytes)
    header_bytes = orjson.dumps(header)
    if _HEADER_AT + len(header_bytes) > layout[0][0]:
        raise AssertionError("index header outgrew its reserved room")
    total = offset
    preamble = _PREAMBLE.pack(_MAGIC, _VERSION, len(header_bytes), zlib.crc32(header_bytes), total)
    write_atomic_parts(path, _padded(preamble, header_bytes, layout, total))
    return True


def _padded(
    preamble: bytes,
    header: bytes,
    layout: list[tuple[int, bytes | memoryview]],
    total: int,
) -> Iterator[bytes | memoryview]:
    yield preamble.ljust(_HEADER_AT, b"\0") + header
    at = _HEADER_AT + len(header)
    for offset, part in layout:
        yield bytes(offset - at)
        yield part
        at = offset + (part.nbytes if isinstance(part, memoryview) else len(part))
    yield bytes(total - at)


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


class IndexLoad:
    """One scope load's view of its index file: each item file is checked against it as
    it is read (`check`), and what the files are now is recorded for the next save."""

    def __init__(self, items_dir: Path, found: IndexFile | None) -> None:
        self.items_dir = items_dir
        self.found = found
        self.stale = False
        # Ids whose last line was written after the index file was saved.
        self.tail_ids: set[str] = set()
        self.states: list[FileState] = []
        # Items the load tokenized although the file was usable (written since).
        self.indexed_anew = 0

    def check(self, path: Path, stat: os.stat_result, data: bytes) -> int | None:
        """Record `path` as read; the number of its first line the index does not hold
        (None: it holds them all, or there is no usable index anyway)."""
        name = path.relative_to(self.items_dir).as_posix()
        known = None if self.found is None else self.found.files.get(name)
        if self.found is None or self.stale:
            self.states.append(file_state(name, stat, data, zlib.crc32(data)))
            return None
        checked = FileCheck(known, stat, data)
        if checked.stale:
            self.stale = True
            self.states.append(file_state(name, stat, data, zlib.crc32(data)))
            return None
        if known is None:
            crc = zlib.crc32(data)
        elif len(data) == known.size:
            crc = known.crc
        else:
            crc = zlib.crc32(memoryview(data)[known.size :], known.crc)
        self.states.append(file_state(name, stat, data, crc))
        return checked.tail_line

    def usable(self, file_names: set[str]) -> IndexFile | None:
        """The index file, when every file it was built from is still there unchanged or
        grown (and none was found changed otherwise)."""
        if self.found is not None and (self.stale or not set(self.found.files) <= file_names):
            self.found = None
        return self.found
