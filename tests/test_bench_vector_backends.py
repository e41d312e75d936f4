"""`mnemobot bench vector-backends`: its ground truth, its figures, and a missing library.

Small runs (2,000 vectors), so the bench's own logic is checked without its minutes;
backends whose library is not installed here are skipped, as the bench itself does.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mnemobot_tooling.bench import vector_backends
from mnemobot_tooling.bench.vector_backends import (
    exact_top,
    missing_library,
    queries_of,
    run,
    vector_chunks,
)


def test_the_exact_answer_is_the_best_of_every_vector_and_the_same_each_run() -> None:
    count, seed = 25_000, 3  # over two chunks, so the running best crosses them
    queries = queries_of(count, 20, seed)
    everything = np.concatenate([chunk for _, chunk in vector_chunks(count, seed)])
    expected = np.argsort(-(queries @ everything.T), axis=1, kind="stable")[:, :8]
    assert np.array_equal(exact_top(count, seed, queries), expected)
    assert np.array_equal(queries_of(count, 20, seed), queries)
    # The questions are near items (clustered vectors), not at random: the best match
    # is much closer than a random item.
    best = np.take_along_axis(queries @ everything.T, expected[:, :1], axis=1)
    assert float(best.mean()) > float((queries @ everything[:100].T).mean()) + 0.2


def test_a_small_run_measures_every_installed_backend() -> None:
    backends = ["ours", "usearch-exact", "usearch-hnsw", "sqlite-vec"]
    installed = [name for name in backends if missing_library(name) is None]
    results = {result["backend"]: result for result in run([2_000], installed, 20, 5)}
    assert set(results) == set(installed)
    for name, result in results.items():
        assert result["items"] == 2_000
        assert result["p95_ms"] >= result["p50_ms"] > 0, name
        assert result["load_s"] >= 0 and result["file_mb"] > 0, name
        assert result["write_p50_ms"] > 0, name
    # Below `Ranking.dense_rescore` rows ours scores every int8 vector: only the int8
    # rounding differs from the float answer.
    assert results["ours"]["recall"] >= 0.95
    if "sqlite-vec" in results:
        assert results["sqlite-vec"]["recall"] == 1.0  # float32, exact
    if "usearch-exact" in results:
        assert results["usearch-exact"]["recall"] >= 0.95


def test_a_backend_without_its_library_is_skipped_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As if usearch were not installed: importing it fails.
    monkeypatch.setitem(sys.modules, "usearch", None)
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    assert run([1_000], ["usearch-hnsw"], 5, 1) == []
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["usearch-hnsw: skipped, not installed (pip install usearch)"]
    assert vector_backends.missing_library("ours") is None
