"""`mnemobot bench vector-backends`: the vector file against usearch and sqlite-vec.

The same synthetic vectors (seeded; 384 dimensions, the default model's) are kept four
ways, and each is asked the pack's question, the `Ranking.dense_candidates` (8) nearest:

- `ours`: `memory.store.vector_file` (int8 records mapped, sign-code prefilter, the best
  `Ranking.dense_rescore` rows rescored exactly);
- `usearch-exact`: the same int8 vectors as a mapped matrix, searched exactly by usearch's
  brute-force kernel (`usearch.index.search(exact=True)`);
- `usearch-hnsw`: a usearch HNSW index (int8, cosine, its default connectivity and
  expansions), loaded into memory; `usearch-hnsw-view`: the same file memory-mapped;
- `sqlite-vec`: a `vec0` table of float32 vectors (cosine), searched by `MATCH ... AND k`.

Each backend is measured in a child process of its own (so its RSS is its own), after its
files were dropped from the page cache (`posix_fadvise DONTNEED`: a cold load without
root). Recall@8 is against the exact float32 answer. A write is one item's vector added
after a turn, kept so that a kill at any moment leaves the old or the new state.

The vectors are clustered, as embeddings are (a direction they share, one of n/100 topics,
noise): random unit vectors are all nearly orthogonal, the worst case for every
approximate search. A query is an item's vector with as much noise again.

The libraries are not dependencies of the bot, only an extra of the tooling: `pip install
-e './tooling[vector-backends]'` (usearch, sqlite-vec, and pysqlite3-binary: the Python here
is built without SQLite extension loading, so sqlite-vec needs pysqlite3's SQLite); a
backend whose library is missing is skipped with one line saying so. The figures kept:
`memory.store.vector_file`'s docstring.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mnemobot.memory.store.vector_file import (
    VECTOR_FILE_NAME,
    ScopeVectors,
    encode_records,
    unit_rows,
)
from mnemobot_tooling.bench.report import percentile

DIMS = 384
TOP = 8  # Ranking.dense_candidates
RESCORE = 2_048  # Ranking.dense_rescore
CHUNK = 10_000
WRITES = 20
IDENTITY = "bench-vectors"
BACKENDS = ("ours", "usearch-exact", "usearch-hnsw", "usearch-hnsw-view", "sqlite-vec")
# The library each backend needs, and what to install for it.
_NEEDS = {
    "usearch-exact": ("usearch.index", "usearch"),
    "usearch-hnsw": ("usearch.index", "usearch"),
    "usearch-hnsw-view": ("usearch.index", "usearch"),
    "sqlite-vec": ("sqlite_vec", "sqlite-vec pysqlite3-binary"),
}


def item_id(row: int) -> str:
    """Ids shaped like the store's (uuid4 hex); the row is readable back from them."""
    return f"{row:032x}"


def missing_library(backend: str) -> str | None:
    """One line saying what to install, or None when the backend can run."""
    need = _NEEDS.get(backend)
    if need is None:
        return None
    modules = [need[0]] + (["pysqlite3"] if backend == "sqlite-vec" else [])
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            return f"{backend}: skipped, not installed (pip install {need[1]})"
    return None


# ------------------------------------------------------------------ the vectors


def _centres(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng((seed, 0))
    shared = rng.standard_normal(DIMS).astype(np.float32)
    topics = rng.standard_normal((max(16, count // 100), DIMS)).astype(np.float32)
    return unit_rows(shared)[0], unit_rows(topics)


def vector_chunks(count: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, unit float32 rows) in chunks; the same rows for the same seed."""
    shared, topics = _centres(count, seed)
    for start in range(0, count, CHUNK):
        rng = np.random.default_rng((seed, 1, start))
        size = min(CHUNK, count - start)
        topic = topics[rng.integers(0, len(topics), size)]
        noise = unit_rows(rng.standard_normal((size, DIMS)).astype(np.float32))
        yield start, unit_rows(0.8 * shared + topic + noise)


def queries_of(count: int, queries: int, seed: int) -> np.ndarray:
    """Each an item's vector with as much noise again (a question near what was said)."""
    rng = np.random.default_rng((seed, 2))
    rows = np.sort(rng.choice(count, queries, replace=False))
    picked = []
    for start, chunk in vector_chunks(count, seed):
        inside = rows[(rows >= start) & (rows < start + len(chunk))]
        picked.append(chunk[inside - start])
    base = np.concatenate(picked)
    noise = unit_rows(rng.standard_normal((queries, DIMS)).astype(np.float32))
    return unit_rows(base + noise)[rng.permutation(queries)]


def exact_top(count: int, seed: int, queries: np.ndarray) -> np.ndarray:
    """(queries, TOP) rows of the most similar float32 vectors, best first."""
    best_rows = np.zeros((len(queries), 0), dtype=np.int64)
    best_sims = np.zeros((len(queries), 0), dtype=np.float32)
    for start, chunk in vector_chunks(count, seed):
        sims = np.concatenate([best_sims, queries @ chunk.T], axis=1)
        rows = np.concatenate(
            [
                best_rows,
                np.broadcast_to(np.arange(start, start + len(chunk)), sims[:, -len(chunk) :].shape),
            ],
            axis=1,
        )
        keep = np.argsort(-sims, axis=1, kind="stable")[:, :TOP]
        best_sims = np.take_along_axis(sims, keep, axis=1)
        best_rows = np.take_along_axis(rows, keep, axis=1)
    return best_rows


def int8_rows(unit: np.ndarray) -> np.ndarray:
    """The vector file's own int8 quantization (a scale per row; cosine ignores it)."""
    return np.asarray(encode_records([""] * len(unit), [0] * len(unit), unit)["vec"])


# ------------------------------------------------------------------- building


def _sqlite_connect(path: Path) -> Any:
    sqlite3 = importlib.import_module("pysqlite3")
    sqlite_vec = importlib.import_module("sqlite_vec")
    db = sqlite3.connect(str(path))
    db.enable_load_extension(True)
    sqlite_vec.load(db)
    db.enable_load_extension(False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def build(backend: str, folder: Path, count: int, seed: int) -> float:
    """Write the backend's files for `count` vectors; seconds it took."""
    begin = time.perf_counter()
    if backend == "ours":
        vectors = ScopeVectors(folder / VECTOR_FILE_NAME, IDENTITY)
        vectors.load([])
        for start, chunk in vector_chunks(count, seed):
            ids = [item_id(row) for row in range(start, start + len(chunk))]
            vectors.add(ids, list(range(len(chunk))), chunk)
        vectors.close()
    elif backend == "usearch-exact":
        matrix = np.lib.format.open_memmap(
            folder / "matrix.npy", mode="w+", dtype=np.int8, shape=(count, DIMS)
        )
        for start, chunk in vector_chunks(count, seed):
            matrix[start : start + len(chunk)] = int8_rows(chunk)
        matrix.flush()
        del matrix
    elif backend in ("usearch-hnsw", "usearch-hnsw-view"):
        usearch = importlib.import_module("usearch.index")
        index = usearch.Index(ndim=DIMS, metric="cos", dtype="i8")
        for start, chunk in vector_chunks(count, seed):
            index.add(np.arange(start, start + len(chunk)), chunk)
        index.save(str(folder / "hnsw.usearch"))
    elif backend == "sqlite-vec":
        db = _sqlite_connect(folder / "vectors.sqlite")
        db.execute(
            f"CREATE VIRTUAL TABLE vectors USING vec0(item TEXT, "
            f"embedding float[{DIMS}] distance_metric=cosine)"
        )
        for start, chunk in vector_chunks(count, seed):
            db.executemany(
                "INSERT INTO vectors(rowid, item, embedding) VALUES (?, ?, ?)",
                ((start + n, item_id(start + n), row.tobytes()) for n, row in enumerate(chunk)),
            )
            db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
    return time.perf_counter() - begin


# ------------------------------------------------------- measuring (in a child)


def _status_mb() -> dict[str, float]:
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in ("VmRSS", "RssAnon", "RssFile"):
            found[key] = int(line.split()[1]) / 1024.0
    return found


def _drop_cache(folder: Path) -> None:
    for path in folder.iterdir():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


Search = Callable[[np.ndarray], list[int]]
Write = Callable[[int, np.ndarray], None]


def _open(backend: str, folder: Path, ids: list[str]) -> tuple[Search, Write]:
    """Load the backend as the bot would at a scope load: its search, and its write of
    one more vector (crash-safe)."""
    if backend == "ours":
        return _open_ours(folder, ids)
    if backend == "usearch-exact":
        usearch = importlib.import_module("usearch.index")
        matrix = np.load(folder / "matrix.npy", mmap_mode="r")

        def search_matrix(query: np.ndarray) -> list[int]:
            found = usearch.search(
                matrix, int8_rows(query[None, :])[0], TOP, "cos", exact=True, threads=1
            )
            return [int(key) for key in found.keys]

        def append_row(row: int, vector: np.ndarray) -> None:
            # The vector file's own append (one write to a file opened O_APPEND).
            with open(folder / "matrix.npy", "ab") as handle:
                handle.write(int8_rows(vector[None, :]).tobytes())

        return search_matrix, append_row
    if backend in ("usearch-hnsw", "usearch-hnsw-view"):
        usearch = importlib.import_module("usearch.index")
        path = folder / "hnsw.usearch"
        view = backend.endswith("-view")
        index = usearch.Index.restore(str(path), view=view)

        def search_hnsw(query: np.ndarray) -> list[int]:
            return [int(key) for key in index.search(query, TOP, threads=1).keys]

        def save_whole(row: int, vector: np.ndarray) -> None:
            # The index file has no append: add in memory, then the whole index written
            # beside it and renamed over it (old or new after a kill).
            if view:
                raise NotImplementedError("a viewed index is read-only")
            index.add(row, vector)
            tmp = path.with_suffix(".tmp")
            index.save(str(tmp))
            fd = os.open(tmp, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
            os.replace(tmp, path)

        return search_hnsw, save_whole
    if backend == "sqlite-vec":
        db = _sqlite_connect(folder / "vectors.sqlite")

        def search_vec0(query: np.ndarray) -> list[int]:
            rows = db.execute(
                "SELECT item FROM vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (query.astype(np.float32).tobytes(), TOP),
            ).fetchall()
            return [int(item, 16) for (item,) in rows]

        def insert(row: int, vector: np.ndarray) -> None:
            with db:
                db.execute(
                    "INSERT INTO vectors(rowid, item, embedding) VALUES (?, ?, ?)",
                    (row, item_id(row), vector.astype(np.float32).tobytes()),
                )

        return search_vec0, insert
    raise ValueError(f"unknown backend {backend}")


def _open_ours(folder: Path, ids: list[str]) -> tuple[Search, Write]:
    vectors = ScopeVectors(folder / VECTOR_FILE_NAME, IDENTITY)
    vectors.load(ids)

    def search(query: np.ndarray) -> list[int]:
        return [int(found, 16) for found, _ in vectors.nearest(query, TOP, RESCORE)]

    def append(row: int, vector: np.ndarray) -> None:
        vectors.add([item_id(row)], [0], vector[None, :])

    return search, append


def measure(backend: str, folder: Path, count: int) -> dict[str, Any]:
    """The child's work: cold load, first query, queries, writes; RSS along the way."""
    queries = np.load(folder.parent / "queries.npy")
    truth = np.load(folder.parent / "truth.npy")
    # Imported before the clock starts: the bot would have imported its library at start.
    for module in ("usearch.index", "sqlite_vec", "pysqlite3") if backend in _NEEDS else ():
        importlib.import_module(module)
    # The live ids come from the item store, already in memory at a scope load.
    ids = [item_id(row) for row in range(count)]
    before = _status_mb()
    _drop_cache(folder)
    begin = time.perf_counter()
    search, write = _open(backend, folder, ids)
    loaded = time.perf_counter() - begin
    begin = time.perf_counter()
    hits = [search(queries[0])]
    first = time.perf_counter() - begin
    times = []
    for query in queries[1:]:
        begin = time.perf_counter()
        hits.append(search(query))
        times.append((time.perf_counter() - begin) * 1000.0)
    after = _status_mb()
    recall = statistics.fmean(
        len(set(found) & set(expected.tolist())) / TOP
        for found, expected in zip(hits, truth, strict=True)
    )
    writes: list[float] = []
    rng = np.random.default_rng(99)
    for n in range(WRITES if backend != "usearch-hnsw-view" else 0):
        vector = unit_rows(rng.standard_normal(DIMS).astype(np.float32))[0]
        begin = time.perf_counter()
        write(count + n, vector)
        writes.append((time.perf_counter() - begin) * 1000.0)
    return {
        "backend": backend,
        "load_s": loaded,
        "first_query_ms": first * 1000.0,
        "p50_ms": statistics.median(times) if times else float("nan"),
        "p95_ms": percentile(times, 0.95),
        "recall": recall,
        "rss_mb": after["VmRSS"] - before["VmRSS"],
        "rss_anon_mb": after["RssAnon"] - before["RssAnon"],
        "rss_file_mb": after["RssFile"] - before["RssFile"],
        "write_p50_ms": statistics.median(writes) if writes else None,
        "write_max_ms": max(writes) if writes else None,
    }


# --------------------------------------------------------------------- driver


def run(counts: list[int], backends: list[str], queries: int, seed: int) -> list[dict[str, Any]]:
    """Build and measure every backend at every count; prints a line per result."""
    runnable = []
    for backend in backends:
        missing = missing_library(backend)
        if missing is not None:
            print(missing, flush=True)
        else:
            runnable.append(backend)
    results = []
    for count in counts:
        with tempfile.TemporaryDirectory(prefix="vector-backends-") as tmp:
            root = Path(tmp)
            asked = queries_of(count, min(queries, count), seed)
            np.save(root / "queries.npy", asked)
            np.save(root / "truth.npy", exact_top(count, seed, asked))
            built_hnsw: Path | None = None
            for backend in runnable:
                folder = root / backend
                folder.mkdir()
                if backend.startswith("usearch-hnsw") and built_hnsw is not None:
                    shutil.copy(built_hnsw / "hnsw.usearch", folder / "hnsw.usearch")
                    built = float("nan")
                else:
                    built = build(backend, folder, count, seed)
                    if backend.startswith("usearch-hnsw"):
                        built_hnsw = folder
                size = sum(path.stat().st_size for path in folder.iterdir())
                result = _measure_in_child(backend, folder, count)
                result.update(items=count, build_s=built, file_mb=size / 1e6)
                print(format_line(result), flush=True)
                results.append(result)
    return results


def _measure_in_child(backend: str, folder: Path, count: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", __name__, backend, str(folder), str(count)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{backend} at {count}: {done.stderr.strip()[-2000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def format_line(result: dict[str, Any]) -> str:
    write = (
        f"write p50 {result['write_p50_ms']:.2f} / max {result['write_max_ms']:.1f} ms"
        if result["write_p50_ms"] is not None
        else "write: read-only"
    )
    return (
        f"{result['items']:>9,} {result['backend']:<18} load {result['load_s'] * 1000:7.1f} ms,"
        f" first query {result['first_query_ms']:7.1f} ms, top-{TOP} p50"
        f" {result['p50_ms']:6.2f} / p95 {result['p95_ms']:6.2f} ms, recall@{TOP}"
        f" {result['recall']:.3f}, RSS +{result['rss_mb']:.0f} MB (anon"
        f" {result['rss_anon_mb']:.0f}, file {result['rss_file_mb']:.0f}), {write},"
        f" built {result['build_s']:.1f} s, {result['file_mb']:.0f} MB"
    )


def bench_command(args: Any) -> int:
    print(f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    results = run(args.items, args.backends, args.queries, args.seed)
    print(f"load average {os.getloadavg()[0]:.2f} at end", flush=True)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))))
