"""Our index file against SQLite for a scope's BM25 index: open, query, build, size.

    python -m mnemobot_tooling.bench.index_backends WORKSPACE [QUERIES]

on a workspace `mnemobot bench memory` generated (its scope `telegram:-1001234`, with
its index file saved). Three ways to keep the index, fed the same terms
(`memory.text.terms`) of the same items, asked the bench's questions for the best 256:

- `index.bin`: the store's own (`memory.store.index_file`): numpy arrays, mapped;
- SQLite FTS5: each item's terms space-joined in an FTS5 table (unicode61 tokenizer, so
  our stemmed terms are its tokens), ranked by FTS5's `bm25()`: Okapi BM25 with FTS5's
  idf, not our BM25+, so its scores (and ranking) are not ours;
- SQLite terms table: postings (term, item, tf) with an index on the term, and BM25+ in
  SQL (a sum over the query's postings joined to the items' lengths): our very scores.

Prints one line per backend (see `memory.store.bm25` for the figures kept).
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.index_file import read_index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.text.terms import terms, terms_identity
from mnemobot_tooling.bench.memory_speed import SCOPE, synthetic_queries
from mnemobot_tooling.bench.report import percentile

TOP = 256


def _ours(paths: ScopePaths, queries: list[list[str]]) -> tuple[BM25Index, str]:
    from mnemobot.memory.store.item_store import _indexed_text_identity

    begin = time.perf_counter()
    found = read_index(paths.index_file, f"{terms_identity()}/{_indexed_text_identity()}")
    if found is None:
        raise SystemExit("no index file: run `mnemobot memory pack` on the scope once first")
    index = BM25Index()
    index.load_arrays(found.arrays)
    opened = time.perf_counter() - begin
    times = _timed(lambda q: index.top(q, TOP), queries)
    size = paths.index_file.stat().st_size
    return index, _line("index.bin (ours)", opened, times, None, size)


def _timed(run: Callable[[list[str]], object], queries: list[list[str]]) -> list[float]:
    run(queries[0])
    times = []
    for query in queries[1:]:
        begin = time.perf_counter()
        run(query)
        times.append((time.perf_counter() - begin) * 1000.0)
    return times


def _line(name: str, opened: float, times: list[float], built: float | None, size: int) -> str:
    build = f", built in {built:.1f} s" if built is not None else ""
    return (
        f"{name}: open {opened * 1000:.1f} ms, top-{TOP} p50 {statistics.median(times):.1f}"
        f" / p95 {percentile(times, 0.95):.1f} ms{build}, {size / 1e6:.0f} MB"
    )


def _documents(paths: ScopePaths) -> list[tuple[str, list[str]]]:
    from mnemobot.memory.store.item_store import ScopeItemStore

    store = ScopeItemStore(paths)
    store.load()
    return [(item.id, terms(indexed_text(item))) for item in store.items.values()]


def _fts5(docs: list[tuple[str, list[str]]], queries: list[list[str]], folder: Path) -> str:
    path = folder / "fts5.sqlite"
    begin = time.perf_counter()
    db = sqlite3.connect(path)
    db.execute("CREATE VIRTUAL TABLE items USING fts5(terms, tokenize='unicode61')")
    db.executemany(
        "INSERT INTO items(rowid, terms) VALUES (?, ?)",
        ((n, " ".join(t)) for n, (_id, t) in enumerate(docs)),
    )
    db.commit()
    db.close()
    built = time.perf_counter() - begin
    begin = time.perf_counter()
    db = sqlite3.connect(path)
    db.execute("SELECT count(*) FROM items WHERE items MATCH 'zzzz'").fetchall()
    opened = time.perf_counter() - begin

    def run(query: list[str]) -> list[tuple[int, float]]:
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in dict.fromkeys(query))
        return db.execute(
            "SELECT rowid, bm25(items) FROM items WHERE items MATCH ? ORDER BY rank LIMIT ?",
            (match, TOP),
        ).fetchall()

    times = _timed(run, queries)
    return _line("SQLite FTS5 (bm25(), not our scores)", opened, times, built, path.stat().st_size)


def _terms_table(
    docs: list[tuple[str, list[str]]],
    queries: list[list[str]],
    folder: Path,
    ours: BM25Index,
) -> str:
    path = folder / "terms.sqlite"
    begin = time.perf_counter()
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE docs(doc INTEGER PRIMARY KEY, id TEXT, len INTEGER);"
        "CREATE TABLE vocab(term TEXT PRIMARY KEY, tid INTEGER, df INTEGER) WITHOUT ROWID;"
        "CREATE TABLE postings(tid INTEGER, doc INTEGER, tf INTEGER);"
    )
    vocab: dict[str, int] = {}
    df: Counter[int] = Counter()
    rows = []
    for n, (_id, doc_terms) in enumerate(docs):
        for term, tf in Counter(doc_terms).items():
            tid = vocab.setdefault(term, len(vocab))
            df[tid] += 1
            rows.append((tid, n, tf))
    db.executemany(
        "INSERT INTO docs VALUES (?, ?, ?)", ((n, d, len(t)) for n, (d, t) in enumerate(docs))
    )
    db.executemany("INSERT INTO vocab VALUES (?, ?, ?)", ((t, i, df[i]) for t, i in vocab.items()))
    db.executemany("INSERT INTO postings VALUES (?, ?, ?)", rows)
    db.execute("CREATE INDEX by_term ON postings(tid, doc, tf)")
    db.commit()
    db.close()
    built = time.perf_counter() - begin
    begin = time.perf_counter()
    db = sqlite3.connect(path)
    total = db.execute("SELECT count(*), sum(len) FROM docs").fetchone()
    opened = time.perf_counter() - begin
    n_docs, total_len = total
    k1, b, delta = 1.5, 0.75, 1.0
    import math

    def run(query: list[str]) -> dict[str, float]:
        counts = Counter(query)
        found = db.execute(
            f"SELECT term, tid, df FROM vocab WHERE term IN ({','.join('?' * len(counts))})",
            list(counts),
        ).fetchall()
        if not found:
            return {}
        weights = []
        base = 0.0
        for term, tid, term_df in found:
            idf = math.log((n_docs + 1) / term_df)
            base += delta * counts[term] * idf
            weights.append((tid, counts[term] * idf * (k1 + 1.0)))
        values = ",".join("(?, ?)" for _ in weights)
        rows = db.execute(
            f"WITH q(tid, w) AS (VALUES {values}) "
            "SELECT d.id, ? + sum(q.w * p.tf / (? + ? * d.len + p.tf)) AS s "
            "FROM q JOIN postings p ON p.tid = q.tid JOIN docs d ON d.doc = p.doc "
            "GROUP BY p.doc ORDER BY s DESC LIMIT ?",
            [
                *(v for pair in weights for v in pair),
                base,
                k1 * (1 - b),
                k1 * b * n_docs / total_len,
                TOP,
            ],
        ).fetchall()
        return dict(rows)

    times = _timed(run, queries)
    # The same scores as ours (float rounding apart), for the documents both rank first.
    for query in queries[1:20]:
        mine, theirs = ours.scores(query), run(query)
        assert all(abs(mine[d] - s) <= 1e-9 * abs(s) for d, s in theirs.items()), query
    return _line("SQLite terms table (BM25+ in SQL)", opened, times, built, path.stat().st_size)


def main(argv: list[str]) -> None:
    paths = ScopePaths(Path(argv[0]), SCOPE)
    count = int(argv[1]) if len(argv) > 1 else 100
    queries = [terms(q) for q in synthetic_queries(random.Random(11), count + 1)]
    ours, line = _ours(paths, queries)
    print(line, flush=True)
    docs = _documents(paths)
    with tempfile.TemporaryDirectory(prefix="mnemobot-index-backends-") as folder:
        print(_fts5(docs, queries, Path(folder)), flush=True)
        print(_terms_table(docs, queries, Path(folder), ours), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
