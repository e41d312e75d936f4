"""A scope's index kept beside its items: `items/index.bin`, memory-mapped at load.

Without it, a load parses every JSONL line into an item and tokenizes it again for the
BM25 index: 12.7 s and 1.8 GB at 1M items. The file holds the BM25 index's arrays and,
per item, its id, layer, type, times, fingerprint and where its line is (`ItemTable`
reads an item from its line when it is asked for), the turns in time order and the
tombstones: a load maps it (no parse, no copy: pages are read as they are touched) and
reads only the lines written since it was saved.

The JSONL files stay the source of truth, which a person may read and edit. The index
file records, for each item file it was built from, its size, inode, mtime, ctime and a
CRC-32 of its bytes; at a load (`FileCheck`) each file is one of:

- unchanged: same size, inode, mtime and ctime: its items are in the index as they are;
- verified: its first `size` bytes still have the recorded CRC (read and checked; a
  copied scope's files are all of this kind, and the file is saved again to record
  them); what was appended since, if anything, is the *tail*, whose items are read and
  indexed anew on top of the file's;
- new: not known to the index: all of it is tail;
- anything else (shorter, other bytes, a file gone): the index is stale and the load
  builds it from the items, as without one.

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
header (identity, BM25 parameters, the item files' states, tombstones, where each array
is), then the arrays, each at a 64-byte boundary.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from mnemobot.base.atomic_file import write_atomic_parts
from mnemobot.memory.store.bm25 import BM25Arrays
from mnemobot.memory.store.id_column import IdColumn
from mnemobot.memory.store.item_table import LAYERS, TYPES, BaseItems

_MAGIC = b"MNEMOIDX"
_VERSION = 2
_PREAMBLE = struct.Struct("<8sIIIQ")  # magic, version, header length, header CRC, file length
_HEADER_AT = 32
_ALIGN = 64
# A file whose mtime is this close to the moment it was recorded may change again within
# the same clock tick (coarse on some filesystems): its bytes are checked at the next load.
_UNSURE_SECONDS = 2.0
# Joins the terms in their blob; no term holds a NUL.
_SEP = "\x00"
_BM25_ARRAYS = (
    "df",
    "doc_ptr",
    "doc_terms",
    "doc_tfs",
    "term_ptr",
    "term_docs",
    "term_tfs",
    "lengths",
)
_ITEM_ARRAYS = (
    "layer",
    "type",
    "created",
    "updated",
    "file",
    "offset",
    "length",
    "fingerprint_keys",
    "fingerprint_order",
    "turns",
)
_ID_ARRAYS = ("by_position", "sorted_ids", "order")


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
            and stat.st_ino == self.ino
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
class StoreMeta:
    """What the store keeps of its files besides the items: tombstones (with the number of
    the file each is in), skipped lines, and each file's number of lines."""

    tombstones: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    skipped: int = 0
    lines: list[int] = field(default_factory=list)


@dataclass(slots=True)
class IndexFile:
    """A read index file: its arrays (mapped) and the item files it was built from."""

    files: dict[str, FileState]
    # The files in the order the items' `file` numbers count them.
    file_order: list[str]
    arrays: BM25Arrays
    items: BaseItems
    meta: StoreMeta
    params: tuple[float, float, float]


class FileCheck:
    """Whether an item file read as `data` is stale against the index file's record of
    it (see the module docstring); a file the record does not know is all new."""

    __slots__ = ("stale",)

    def __init__(self, known: FileState | None, stat: os.stat_result, data: bytes) -> None:
        self.stale = known is not None and (
            len(data) < known.size
            or (
                not (len(data) == known.size and known.same_stat(stat))
                and zlib.crc32(memoryview(data)[: known.size]) != known.crc
            )
        )


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
        return _parse(mapped, size, terms_identity, path.parent)
    except (ValueError, KeyError, TypeError, IndexError, orjson.JSONDecodeError, UnicodeError):
        return None


def _parse(mapped: mmap.mmap, size: int, terms_identity: str, items_dir: Path) -> IndexFile | None:
    magic, version, header_len, header_crc, total = _PREAMBLE.unpack_from(mapped, 0)
    if magic != _MAGIC or version != _VERSION or total != size:
        return None
    header_bytes = mapped[_HEADER_AT : _HEADER_AT + header_len]
    if len(header_bytes) != header_len or zlib.crc32(header_bytes) != header_crc:
        return None
    header = orjson.loads(header_bytes)
    if header["terms"] != terms_identity:
        return None
    places: dict[str, list[Any]] = header["arrays"]

    def array(name: str) -> npt.NDArray[Any]:
        start, dtype_name, count = places[name]
        dtype = np.dtype(dtype_name)
        if start % _ALIGN or start + count * dtype.itemsize > size:
            raise ValueError(name)
        return np.frombuffer(mapped, dtype=dtype, count=count, offset=start)

    start, length = places["vocabulary"]
    if start + length > size:
        raise ValueError("vocabulary")
    text = mapped[start : start + length].decode()
    vocabulary = text.split(_SEP) if text else []
    ids = IdColumn(*(array(f"ids.{name}") for name in _ID_ARRAYS))
    # The BM25 index's documents: the items themselves, or (when some items are kept out
    # of it, the days' digests) a column of their own.
    documents = (
        IdColumn(*(array(f"documents.{name}") for name in _ID_ARRAYS))
        if header.get("documents")
        else ids
    )
    bm25 = BM25Arrays(
        ids=documents,
        vocabulary=vocabulary,
        total_len=int(header["total_len"]),
        **{name: array(name) for name in _BM25_ARRAYS},
    )
    file_order = [FileState.from_json(value) for value in header["files"]]
    items = BaseItems(
        ids=ids,
        files=[items_dir / state.name for state in file_order],
        **{name: array(f"items.{name}") for name in _ITEM_ARRAYS},
    )
    meta = header["meta"]
    store_meta = StoreMeta(
        tombstones=[(int(number), dict(record)) for number, record in meta["tombstones"]],
        skipped=int(meta["skipped"]),
        lines=[int(count) for count in meta["lines"]],
    )
    if not _holds_together(bm25, items, len(file_order), store_meta):
        return None
    return IndexFile(
        files={state.name: state for state in file_order},
        file_order=[state.name for state in file_order],
        arrays=bm25,
        items=items,
        meta=store_meta,
        params=(float(header["k1"]), float(header["b"]), float(header["delta"])),
    )


def _in_range(values: npt.NDArray[Any], end: int) -> bool:
    return not len(values) or (int(values.min()) >= 0 and int(values.max()) < end)


def _holds_together(a: BM25Arrays, items: BaseItems, files: int, meta: StoreMeta) -> bool:
    """Checks that the arrays hold together (a few ms at 1M items)."""
    docs, terms = len(a.ids), len(a.vocabulary)
    entries = len(a.doc_terms)
    documents = a.ids
    assert isinstance(documents, IdColumn)
    if len(documents.sorted_ids) != docs or len(documents.order) != docs:
        return False
    ids = items.ids
    count = len(ids)
    if len(ids.sorted_ids) != count or len(ids.order) != count:
        return False
    if len(a.doc_ptr) != docs + 1 or len(a.lengths) != docs or len(a.df) != terms:
        return False
    if len(a.term_ptr) != terms + 1 or len(a.doc_tfs) != entries:
        return False
    if len(a.term_docs) != entries or len(a.term_tfs) != entries:
        return False
    for ptr in (a.doc_ptr, a.term_ptr):
        if ptr[0] != 0 or ptr[-1] != entries or bool(np.any(np.diff(ptr) < 0)):
            return False
    columns = (items.layer, items.type, items.created, items.updated, items.file)
    if any(len(column) != count for column in (*columns, items.offset, items.length)):
        return False
    if len(items.fingerprint_keys) != count or len(items.fingerprint_order) != count:
        return False
    if len(meta.lines) != files or any(not 0 <= n < files for n, _ in meta.tombstones):
        return False
    # The postings themselves (tens of MB) are not scanned: that would read the whole
    # file at every load (and count it in the RSS); numpy checks their bounds anyway.
    return (
        _in_range(documents.order, docs)
        and _in_range(ids.order, count)
        and _in_range(items.fingerprint_order, count)
        and _in_range(items.turns, count)
        and _in_range(items.file, files)
        and _in_range(items.layer, len(LAYERS))
        and _in_range(items.type, len(TYPES))
        and bool(np.all(items.offset >= 0))
    )


def write_index(
    path: Path,
    arrays: BM25Arrays,
    items: BaseItems,
    files: list[FileState],
    meta: StoreMeta,
    terms_identity: str,
    params: tuple[float, float, float],
) -> None:
    """Replace the index file atomically. `arrays.ids` (an `IdColumn`) is `items.ids`, or
    the column of the documents the BM25 index holds when it leaves some items out;
    `items.file` numbers count `files`."""
    documents = arrays.ids
    assert isinstance(documents, IdColumn)
    vocabulary = _SEP.join(arrays.vocabulary).encode()
    named: list[tuple[str, npt.NDArray[Any]]] = [
        (f"ids.{name}", getattr(items.ids, name)) for name in _ID_ARRAYS
    ]
    if documents is not items.ids:
        named += [(f"documents.{name}", getattr(documents, name)) for name in _ID_ARRAYS]
    named += [(name, getattr(arrays, name)) for name in _BM25_ARRAYS]
    named += [(f"items.{name}", getattr(items, name)) for name in _ITEM_ARRAYS]
    k1, b, delta = params
    places: dict[str, list[Any]] = {"vocabulary": [0, len(vocabulary)]}
    header: dict[str, Any] = {
        "terms": terms_identity,
        "k1": k1,
        "b": b,
        "delta": delta,
        "total_len": arrays.total_len,
        "documents": documents is not items.ids,
        "files": [state.to_json() for state in files],
        "meta": {
            "tombstones": meta.tombstones,
            "skipped": meta.skipped,
            "lines": meta.lines,
        },
        "arrays": places,
    }
    for name, values in named:
        places[name] = [0, np.asarray(values).dtype.str, len(values)]
    # Where each part goes depends on the header's length, which holds the places: lay
    # them out after a header with room to spare, then fill the places in.
    reserve = len(orjson.dumps(header)) + 24 * (len(named) + 1) + 64
    offset = _aligned(_HEADER_AT + reserve)
    layout: list[tuple[int, bytes | memoryview]] = [(offset, vocabulary)]
    places["vocabulary"][0] = offset
    offset = _aligned(offset + len(vocabulary))
    for name, values in named:
        data = np.ascontiguousarray(values).data.cast("B")
        places[name][0] = offset
        layout.append((offset, data))
        offset = _aligned(offset + data.nbytes)
    header_bytes = orjson.dumps(header)
    if _HEADER_AT + len(header_bytes) > layout[0][0]:
        raise AssertionError("index header outgrew its reserved room")
    preamble = _PREAMBLE.pack(_MAGIC, _VERSION, len(header_bytes), zlib.crc32(header_bytes), offset)
    write_atomic_parts(path, _padded(preamble, header_bytes, layout, offset))


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
        at = offset + len(part)
    yield bytes(total - at)


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


class IndexLoad:
    """One scope load's view of its index file: each item file is checked against it
    (`unchanged`, or `check` once read), and what the files are now is recorded for the
    next save, in the order they were read (the numbers the saved items' `file` counts)."""

    def __init__(self, items_dir: Path, found: IndexFile | None) -> None:
        self.items_dir = items_dir
        # Names by string slicing: `Path.relative_to` took 0.8 s for 5,300 day files.
        self._prefix = len(str(items_dir)) + 1
        self.found = found
        self.states: list[FileState] = []
        # Items the load read from their lines although the file was usable (written
        # since it was saved), and whether the load saved the file.
        self.read_anew = 0
        self.saved = False
        # Bytes read to check files that were not unchanged, and bytes of all files.
        self.checked_bytes = 0
        self.total_bytes = 0
        # Whether the load built the index from the items (there was no usable file).
        self.built = False

    def name(self, path: Path) -> str:
        return str(path)[self._prefix :].replace(os.sep, "/")

    def unchanged(self, path: Path, stat: os.stat_result) -> bool:
        """Whether `path` is as the index file recorded it, by its stat alone (then it is
        recorded as it was, and need not be read)."""
        known = None if self.found is None else self.found.files.get(self.name(path))
        self.total_bytes += stat.st_size
        if known is None or not known.same_stat(stat):
            return False
        self.states.append(known)
        return True

    def check(self, path: Path, stat: os.stat_result, data: bytes) -> int | None:
        """Record `path` as read; the byte offset of what the index does not hold of it
        (None: the index is stale, or there is none)."""
        name = self.name(path)
        known = None if self.found is None else self.found.files.get(name)
        checked = FileCheck(known, stat, data) if self.found is not None else None
        if checked is None or checked.stale:
            self.found = None
            self.states.append(file_state(name, stat, data, zlib.crc32(data)))
            return None
        self.checked_bytes += len(data)
        if known is None:
            crc, start = zlib.crc32(data), 0
        elif len(data) == known.size:
            crc, start = known.crc, len(data)
        else:
            crc, start = zlib.crc32(memoryview(data)[known.size :], known.crc), known.size
        self.states.append(file_state(name, stat, data, crc))
        return start
