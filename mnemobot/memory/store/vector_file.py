"""The vectors of one memory scope's items: `items/vectors.bin`.

Beside the item files, one binary file holds an embedding of each item, so a scope's
vectors load without a parse (its records are read in large blocks straight into numpy
columns: ids, sign codes, text hashes; the int8 vectors stay on disk, mapped only while a
query rescores them) and take 480 bytes an item on disk (int8 with a scale per vector:
48 MB at 100k, a quarter of float32; float16 was the other choice, but numpy converts
float16 some twenty times slower than int8 here, and every query converts the rows it
rescores).

    header (512 bytes)  magic, version, dimensions, record size, the identity of the
                        vectors (model, length, how stored texts were marked), a checksum
    record * n          item id (32 bytes, or "~" and a hash of a longer id), hash of the
                        embedded text, scale, checksum, 384-bit sign code, int8 vector

Crash safety: records are only appended (one `write` each batch) or the whole file is
replaced atomically (`compact`). A torn tail (a crash mid-append) is cut off before the
next append; a record whose checksum fails is ignored (every checksum is verified at the
load, in the read that takes the columns out, and in `_refresh` for records appended by
another process). Either way its item simply has no vector and is embedded again, never
read wrong. The last record of an id wins. The format is unchanged since version 1.

A model change is seen in the header: vectors of another identity are ignored (not
deleted: switching back finds them), and the first new vector starts a new file.

Search: the sign code is a random-hyperplane hash (SimHash) of the vector, so Hamming
distance between codes follows the angle between vectors. `nearest` ranks every live row
by code distance (4.8 MB at 100k, a few ms), then rescores the best `rescore` rows (at
least one live row in `_RESCORE_SHARE`) exactly from the int8 vectors; below that many
rows everything is scored exactly.

Why our own file rather than a library (`mnemobot bench vector-backends --items
100000,1000000`: the same clustered 384-dimension vectors, the pack's 8 nearest, each
backend in a fresh process with its files dropped from the page cache; 2 shared cores, load
average 1-5), at 100k / 1M vectors:

| | cold load | query p50 / p95 | recall@8 | RSS added | one write |
|---|---|---|---|---|---|
| this file | 0.18 / 1.4 s | 4.4/5.8, 31/36 ms | 0.969 / 0.959 | 24 / 158 MB | 0.6 / 0.4 ms |
| before | 0.22 / 3.5 s | 4.1/4.8, 26/31 ms | 0.969 / 0.884 | 90 / 836 MB | 2.6 / 19 ms |
| usearch exact (int8, mapped) | 1 ms | 31/54, 387/571 ms | 0.989 / 0.988 | 42 / 385 MB | append |
| usearch HNSW | 0.15 / 1.0 s | 0.6/5.0, 1.3/2.0 ms | 0.891 / 0.616 | 61 / 601 MB | 0.2/1.5 s |
| sqlite-vec `vec0` (float32) | 1 ms | 142/165, 910/1148 ms | 1.0 / 1.0 | 5 / 5 MB | 0.14 ms |

The first two rows: `nice -n 10 mnemobot bench vector-backends --items 100000,1000000
--backends ours`, load average 0.7-1.6, before and after the columns (ids matched by
`vector_keys`, the file read rather than mapped, columns grown by a quarter, rescore one
row in 128): at 1M, anon RSS 375 -> 154 MB, mapped file pages 461 -> 4 MB; a write's
worst (42 ms) is the columns growing, once per quarter more rows.

The exact libraries scan every vector per query (ten to forty times our time at 1M); HNSW
answers fast but misses more (0.62 at 1M), took 184 s to build at 100k and 21 minutes at
1M, and has no append: a crash-safe write saves the whole index and renames it, and a
mapped ("viewed") index (0.26 s to open at 1M) is read-only. Recall is against the exact
float32 answer; int8 alone caps it at 0.99. Ours missed more as the scope grew, at a fixed
`rescore`: at 1M, 8,192 rescored rows gave 0.961, 32,768 gave 0.981 (p95 115 / 204 ms
under load); hence one row in 128 at least (7,812 at 1M, p95 36 ms at load 1).

`MemoryVectors` (the memory service) calls it under the scope's lock, off the event loop.

Longer than most modules (about 580 lines): the format, its crash rules and the search
over it are one concept, and splitting them would spread the record layout over files.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import mmap
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from mnemobot.memory.store.vector_keys import ID_BYTES, KEY_DTYPE, KeyIndex, id_key, id_keys

VECTOR_FILE_NAME = "vectors.bin"
_MAGIC = b"MNEMOVEC"
_VERSION = 1
HEADER_BYTES = 512
_HEADER = struct.Struct("<8sIIII")  # magic, version, dims, record size, identity length
_IDENTITY_MAX = HEADER_BYTES - _HEADER.size - 4
CODE_BITS = 384
_CODE_WORDS = CODE_BITS // 64
# Mixed into every record checksum so an all-zero record (a torn tail) never passes.
_CHECK_SALT = 0x5EED_C0DE
_CHECK_WORD = 11  # the checksum's index among a record's uint32 words (byte offset 44)
_PROJECTION_SEED = 2_718_281


def record_dtype(dims: int) -> np.dtype:
    """One record; padded to a multiple of 8 bytes so records stay aligned."""
    fields: list[tuple[object, ...]] = [
        ("id", f"S{ID_BYTES}"),
        ("hash", "<u8"),
        ("scale", "<f4"),
        ("check", "<u4"),
        ("code", "<u8", (_CODE_WORDS,)),
        ("vec", "i1", (dims,)),
    ]
    pad = -dims % 8
    if pad:
        fields.append(("pad", f"V{pad}"))
    return np.dtype(fields)


def text_hash(text: str) -> int:
    """The 64-bit hash of an embedded text: a vector is current while its item's text
    still hashes to it."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


_projections: dict[int, np.ndarray] = {}


def _projection(dims: int) -> np.ndarray:
    """Random hyperplanes of the sign code: fixed for a dimension, so codes written by any
    process compare."""
    found = _projections.get(dims)
    if found is None:
        rng = np.random.default_rng(_PROJECTION_SEED + dims)
        found = _projections[dims] = rng.standard_normal((dims, CODE_BITS)).astype(np.float32)
    return found


def sign_codes(vectors: np.ndarray) -> np.ndarray:
    """(n, dims) float -> (n, CODE_BITS / 64) uint64 SimHash codes."""
    bits = (vectors @ _projection(vectors.shape[1])) > 0
    return np.packbits(bits, axis=1).view("<u8").reshape(len(vectors), _CODE_WORDS)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows scaled to length 1 (a zero row stays zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _checksums(words: np.ndarray) -> np.ndarray:
    total = words.sum(axis=1, dtype=np.uint64) - words[:, _CHECK_WORD]
    return ((total & 0xFFFF_FFFF) ^ _CHECK_SALT).astype(np.uint32)


def encode_records(ids: Sequence[str], hashes: Sequence[int], vectors: np.ndarray) -> np.ndarray:
    """Records for unit `vectors` (n, dims): int8 with a scale each, code, checksum."""
    dims = vectors.shape[1]
    records = np.zeros(len(ids), dtype=record_dtype(dims))
    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    records["id"] = [id_key(item_id) for item_id in ids]
    records["hash"] = np.asarray(hashes, dtype=np.uint64)
    records["scale"] = scale
    records["vec"] = np.rint(vectors / scale[:, None]).astype(np.int8)
    records["code"] = sign_codes(vectors)
    words = records.view(np.uint32).reshape(len(ids), -1)
    records["check"] = _checksums(words)
    return records


def encode_header(dims: int, identity: str) -> bytes:
    name = identity.encode()[:_IDENTITY_MAX]
    head = _HEADER.pack(_MAGIC, _VERSION, dims, record_dtype(dims).itemsize, len(name)) + name
    head = head.ljust(HEADER_BYTES - 4, b"\0")
    return head + struct.pack("<I", _crc(head))


def _crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFF_FFFF


@dataclass(frozen=True, slots=True)
class Header:
    dims: int
    record_size: int
    identity: str


def decode_header(data: bytes) -> Header | None:
    """The header, or None when it is not one of ours (or torn)."""
    if len(data) < HEADER_BYTES:
        return None
    head, (check,) = data[: HEADER_BYTES - 4], struct.unpack("<I", data[HEADER_BYTES - 4 :])
    if _crc(head) != check:
        return None
    magic, version, dims, size, length = _HEADER.unpack_from(head)
    if magic != _MAGIC or version != _VERSION or dims <= 0:
        return None
    if size != record_dtype(dims).itemsize or length > _IDENTITY_MAX:
        return None
    name = head[_HEADER.size : _HEADER.size + length].decode(errors="replace")
    return Header(dims, size, name)


@dataclass(slots=True)
class VectorStats:
    vectors: int
    dims: int | None
    # Records ignored: a failed checksum, or a torn tail (cut off at the next append).
    damaged: int
    # Rows in the file no live item uses any more (forgotten, replaced): `compact` drops them.
    dead: int
    # The file holds vectors of another model (or length, or marking): ignored.
    other_identity: str | None = None


# Records read per `pread` at a load: 8,192 records (3.9 MB at 384 dimensions) are taken
# apart while still in the CPU caches. Reading rather than mapping keeps the file's pages
# out of the process (they stay in the page cache, shared and reclaimable): mapped and
# touched whole, a 1M-vector file added 461 MB of RSS (`mnemobot bench vector-backends`).
_READ_RECORDS = 8_192
# At least one row in this many is rescored exactly, whatever `rescore` asks: a fixed
# 2,048 found 0.884 of the 8 nearest at 1M rows, 8,192 found 0.961 (see the table above).
_RESCORE_SHARE = 128


class ScopeVectors:
    """The vectors of one scope for one embedding identity (see the module docstring)."""

    def __init__(self, path: Path, identity: str) -> None:
        self.path = path
        self.identity = identity
        self.dims: int | None = None
        self.other_identity: str | None = None
        self.damaged = 0
        # The file's byte length up to its last whole record; past it, a torn tail.
        self._valid_bytes = 0
        self._torn_tail = False
        # The file read, kept open: another process's compaction replaces it by rename,
        # and the rows known stay those of this one until it is seen and read again.
        self._file: BinaryIO | None = None
        self._file_id: tuple[int, int] | None = None
        self._count = 0
        # One row per code word (column-major): each word of every code is contiguous,
        # so a query's Hamming distances are a few flat numpy passes. Columns grow by a
        # quarter when full, so an append copies nothing most of the time.
        self._codes = np.zeros((_CODE_WORDS, 0), dtype=np.uint64)
        self._live = np.zeros(0, dtype=bool)
        self._hashes = np.zeros(0, dtype=np.uint64)
        self._keys = KeyIndex(np.zeros(0, dtype=KEY_DTYPE))
        # Stored key -> item id, for the live ids stored hashed (longer than 32 bytes).
        self._hashed_ids: dict[bytes, str] = {}

    # ------------------------------------------------------------------ loading

    def load(self, live_ids: Iterable[str]) -> VectorStats:
        """Read the file's columns; only rows of `live_ids` count (the scope's items now).

        Every record's checksum is verified here, in the same pass that takes its id and
        code out (the file is read whole anyway, ids and codes being in every page), so
        a damaged record is never a candidate and its item is embedded again."""
        keys, self._hashed_ids = id_keys(list(live_ids))
        self._keys = KeyIndex(keys)
        self._reset()
        self._refresh()
        return self.stats()

    def _reset(self) -> None:
        self.dims = None
        self.other_identity = None
        self.damaged = 0
        self._valid_bytes = 0
        self._torn_tail = False
        if self._file is not None:
            self._file.close()
        self._file = None
        self._file_id = None
        self._count = 0
        self._codes = np.zeros((_CODE_WORDS, 0), dtype=np.uint64)
        self._live = np.zeros(0, dtype=bool)
        self._hashes = np.zeros(0, dtype=np.uint64)
        self._keys.clear_rows()

    def _refresh(self) -> None:
        """Read the records past those already known (all of them when the file was
        replaced since, by this process or another)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._reset()
            return
        if self._file_id is not None and self._file_id != (stat.st_dev, stat.st_ino):
            self._reset()
        if self._file is None:
            try:
                self._file = open(self.path, "rb", buffering=0)  # noqa: SIM115 (kept open)
            except FileNotFoundError:
                return
            opened = os.fstat(self._file.fileno())
            self._file_id = (opened.st_dev, opened.st_ino)
        fd = self._file.fileno()
        size = os.fstat(fd).st_size
        if self.dims is None:
            header = decode_header(os.pread(fd, HEADER_BYTES, 0))
            if header is None:
                # Not ours or torn before its first record: replaced at the next append.
                self.other_identity = "(unreadable header)"
                return
            if header.identity != self.identity:
                self.other_identity = header.identity
                return
            self.dims = header.dims
        dtype = record_dtype(self.dims)
        whole = (size - HEADER_BYTES) // dtype.itemsize
        if whole < self._count:
            # Cut shorter in place (not by this code): read again from the start.
            self._reset()
            self._refresh()
            return
        self._valid_bytes = HEADER_BYTES + whole * dtype.itemsize
        self._torn_tail = size > self._valid_bytes
        if whole == self._count:
            return
        self._reserve(whole)
        row = self._count
        while row < whole:
            wanted = min(_READ_RECORDS, whole - row) * dtype.itemsize
            data = os.pread(fd, wanted, HEADER_BYTES + row * dtype.itemsize)
            if len(data) < wanted:
                break
            records = np.frombuffer(data, dtype=dtype)
            self._take_rows(row, records)
            row += len(records)
        self._count = row

    def _reserve(self, rows: int) -> None:
        capacity = len(self._live)
        if rows <= capacity:
            return
        grown = max(rows, capacity + capacity // 4, 1_024) if capacity else rows
        codes = np.zeros((_CODE_WORDS, grown), dtype=np.uint64)
        codes[:, : self._count] = self._codes[:, : self._count]
        live = np.zeros(grown, dtype=bool)
        live[: self._count] = self._live[: self._count]
        hashes = np.zeros(grown, dtype=np.uint64)
        hashes[: self._count] = self._hashes[: self._count]
        self._codes, self._live, self._hashes = codes, live, hashes

    def _take_rows(self, start: int, records: np.ndarray) -> None:
        end = start + len(records)
        words = records.view(np.uint32).reshape(len(records), -1)
        valid = _checksums(words) == words[:, _CHECK_WORD]
        self.damaged += int((~valid).sum())
        self._codes[:, start:end] = records["code"].T
        self._hashes[start:end] = records["hash"]
        now, replaced = self._keys.take(start, np.ascontiguousarray(records["id"]), valid)
        self._live[replaced] = False
        self._live[now] = True

    def _gather(self, rows: np.ndarray) -> np.ndarray:
        """Copies of the records of `rows` (ascending), from the file read (whatever
        replaced it since). Mapped for this call only: the pages touched leave the
        process with the mapping, so a query adds nothing to its RSS (kept mapped, a
        hundred queries at 1M rows touched nearly every page: 462 MB)."""
        assert self._file is not None and self.dims is not None
        with mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            records = np.frombuffer(
                mapped, dtype=record_dtype(self.dims), count=self._count, offset=HEADER_BYTES
            )
            picked = records[rows]
            del records  # no view of the mapping may outlive it
        return picked

    # -------------------------------------------------------------------- reads

    def stats(self) -> VectorStats:
        live = len(self)
        return VectorStats(
            vectors=live,
            dims=self.dims,
            damaged=self.damaged + (1 if self._torn_tail else 0),
            dead=self._count - live,
            other_identity=self.other_identity,
        )

    def __len__(self) -> int:
        return int(np.count_nonzero(self._live[: self._count]))

    def has(self, item_id: str, embedded_hash: int) -> bool:
        """True when the item has a vector of the text that hashes to `embedded_hash`."""
        return bool(self.current([item_id], [embedded_hash])[0])

    def current(self, item_ids: Sequence[str], embedded_hashes: Sequence[int]) -> np.ndarray:
        """`has` of many items at once (a bool each): a million in about a second."""
        rows = self._keys.rows_of([id_key(item_id) for item_id in item_ids])
        found = rows >= 0
        wanted = np.asarray(embedded_hashes, dtype=np.uint64)
        found[found] = self._hashes[rows[found]] == wanted[found]
        return found

    def _similarities(self, rows: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine of `query` to the vectors of `rows` (ascending row numbers), and the
        rows' stored keys."""
        picked = self._gather(rows)
        # float32 first (numpy has no fast int8 product), then einsum's own loop rather than
        # BLAS: a 2048 x 384 product is too small for BLAS threads, which took 8 ms against
        # einsum's 0.9 ms on the shared 2-core machine.
        vectors = picked["vec"].astype(np.float32)
        sims = np.einsum("ij,j->i", vectors, query.astype(np.float32)) * picked["scale"]
        return sims, picked["id"]

    def similarities(self, query: np.ndarray, item_ids: Iterable[str]) -> dict[str, float]:
        """Cosine similarity of `query` (a unit vector) to each item that has a vector."""
        if not self._count or query.shape[-1] != self.dims:
            return {}
        wanted = list(item_ids)
        rows = self._keys.rows_of([id_key(item_id) for item_id in wanted])
        having = np.flatnonzero(rows >= 0)
        if not len(having):
            return {}
        having = having[np.argsort(rows[having], kind="stable")]
        sims, _ = self._similarities(rows[having], query)
        return {wanted[at]: float(sim) for at, sim in zip(having.tolist(), sims, strict=True)}

    def nearest(self, query: np.ndarray, count: int, rescore: int) -> list[tuple[str, float]]:
        """The `count` items most similar to `query` (a unit vector), best first."""
        if not self._count or count <= 0 or query.shape[-1] != self.dims:
            return []
        live = self._live[: self._count]
        candidates = np.flatnonzero(live)
        rescore = max(rescore, len(candidates) // _RESCORE_SHARE)
        if len(candidates) > rescore:
            code = sign_codes(query[None, :])[0]
            codes = self._codes[:, : self._count]
            distance = np.bitwise_count(codes[0] ^ code[0]).astype(np.int16)
            for word in range(1, _CODE_WORDS):
                distance += np.bitwise_count(codes[word] ^ code[word])
            distance[~live] = CODE_BITS + 1
            candidates = np.sort(np.argpartition(distance, rescore)[:rescore])
        if not len(candidates):
            return []
        sims, keys = self._similarities(candidates, query)
        take = min(count, len(candidates))
        best = np.argpartition(-sims, take - 1)[:take]
        best = best[np.argsort(-sims[best], kind="stable")]
        found = []
        for position in best.tolist():
            key = bytes(keys[position])
            item_id = self._hashed_ids.get(key) if key.startswith(b"~") else key.decode()
            if item_id is not None:
                found.append((item_id, float(sims[position])))
        return found

    # ------------------------------------------------------------------- writes

    def track(self, item_ids: Iterable[str]) -> None:
        """Items written since the load: their vectors (when they come) count."""
        keys = []
        for item_id in item_ids:
            key = id_key(item_id)
            if key.startswith(b"~"):
                self._hashed_ids[key] = item_id
            keys.append(key)
        self._keys.track(keys)

    def discard(self, item_ids: Iterable[str]) -> int:
        """Forget items' vectors (a forgotten or removed item): never returned again, and
        gone from the file at the next `compact`. How many had one."""
        keys = list(dict.fromkeys(id_key(item_id) for item_id in item_ids))
        for key in keys:
            self._hashed_ids.pop(key, None)
        rows = self._keys.discard(keys)
        self._live[rows] = False
        return len(rows)

    def add(self, item_ids: Sequence[str], hashes: Sequence[int], vectors: np.ndarray) -> None:
        """Append vectors of items (float rows, made unit here); a later record of an id
        replaces its earlier one."""
        if not len(item_ids):
            return
        unit = unit_rows(vectors)
        if self.dims is None:
            # Another process (a replica) may have started the file since it was loaded.
            self._refresh()
        if self.dims is not None and unit.shape[1] != self.dims:
            raise ValueError(
                f"the embedding server returned {unit.shape[1]} dimensions, "
                f"the stored vectors have {self.dims}"
            )
        self.track(item_ids)
        records = encode_records(item_ids, hashes, unit)
        if self.dims is None:
            # No file, or one of another identity: start a new one (atomically).
            self._replace_file(unit.shape[1], [records.tobytes()])
            self._reset()
        else:
            self._append(records.tobytes())
        self._refresh()

    def _append(self, data: bytes) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        try:
            # Replicas on one shared workspace may append to the same file: one at a time,
            # and what another appended since this one's last look is whole, never cut.
            fcntl.flock(fd, fcntl.LOCK_EX)
            start = os.fstat(fd).st_size
            assert self.dims is not None
            size = record_dtype(self.dims).itemsize
            whole = HEADER_BYTES + max(0, start - HEADER_BYTES) // size * size
            if start > whole:
                # A torn tail of an earlier crash: cut it, so records stay aligned.
                os.ftruncate(fd, whole)
                start = whole
                self._torn_tail = False
            view = memoryview(data)
            try:
                while view:
                    written = os.write(fd, view)
                    if written <= 0:
                        raise OSError(f"could not append to {self.path.name}: nothing written")
                    view = view[written:]
            except BaseException:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
                raise
        finally:
            os.close(fd)

    def _replace_file(self, dims: int, records: Iterable[bytes]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(encode_header(dims, self.identity))
                for chunk in records:
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def compact(self) -> int:
        """Rewrite the file with only the live rows (atomically); rows dropped."""
        if self.dims is None or not self._count:
            return 0
        live = self._live[: self._count]
        dropped = self._count - int(np.count_nonzero(live))
        if dropped == 0 and not self._torn_tail:
            return 0
        self._replace_file(self.dims, self._live_records(live.copy()))
        self._reset()
        self._refresh()
        return dropped

    def _live_records(self, live: np.ndarray) -> Iterator[bytes]:
        """The live records' bytes, a read at a time (never the whole file in memory)."""
        assert self._file is not None and self.dims is not None
        size = record_dtype(self.dims).itemsize
        for start in range(0, len(live), _READ_RECORDS):
            keep = live[start : start + _READ_RECORDS]
            data = os.pread(self._file.fileno(), len(keep) * size, HEADER_BYTES + start * size)
            if len(data) < len(keep) * size:
                raise OSError(f"{self.path.name} was cut shorter while it was compacted")
            yield np.frombuffer(data, dtype=np.uint8).reshape(len(keep), size)[keep].tobytes()

    def close(self) -> None:
        """Close the file (before it is deleted or moved)."""
        self._reset()
        self._keys = KeyIndex(np.zeros(0, dtype=KEY_DTYPE))
        self._hashed_ids = {}


def file_identity(path: Path) -> str | None:
    """The identity in the vector file's header; None without a file, "" when the header
    is unreadable (torn before its first record, or not ours)."""
    try:
        with open(path, "rb") as handle:
            header = decode_header(handle.read(HEADER_BYTES))
    except FileNotFoundError:
        return None
    return header.identity if header is not None else ""
