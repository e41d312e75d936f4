"""`mnemobot bench cold-scope` runs end to end and reports its figures (no timing asserted)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import run_mnemobot

# Whole bench runs: minutes on a loaded machine, so `pytest -m slow` (CI runs them).
pytestmark = pytest.mark.slow


def test_bench_cold_scope_reports_the_delay_it_adds() -> None:
    result = run_mnemobot(
        "bench", "cold-scope", "--items", "300", "--rounds", "1", "--baseline-turns", "2",
        timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    # About the items asked for: the generator drops the duplicates the store would merge.
    assert re.search(r"chat A's scope of 3\d\d items", out)
    assert re.search(r"chat A's cold turn .* [\d.]+ s", out)
    assert re.search(r"nothing else running +p50 [\d.]+ ms, max [\d.]+ ms \(2 turns\)", out)
    # At least one of chat B's turns ran while chat A's scope loaded.
    assert re.search(r"while A's scope loads +p50 [\d.]+ ms, max [\d.]+ ms \([1-9]\d* turns\)", out)
    assert re.search(r"worst delay added to chat B +-?[\d.]+ ms \(target <= 50: (ok|MISSED)\)", out)
