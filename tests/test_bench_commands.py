"""The bench commands run end to end and report every figure (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import run_mnemobot
from tests.terminal import run_with_terminal_stderr


def run_bot(*args: str) -> subprocess.CompletedProcess[str]:
    return run_mnemobot(*args, timeout=240)


def test_bench_memory_reports_every_figure_and_progress_on_a_terminal() -> None:
    returncode, stdout, stderr = run_with_terminal_stderr(
        "bench", "memory", "--items", "300", "--json", timeout=240
    )
    assert returncode == 0, stderr[-2000:]
    figures = json.loads(stdout)
    assert figures["items"] >= 300
    flat = json.dumps(figures)
    for name in ("pack_p95_ms", "write_p95_ms", "cold_start_s", "peak_rss_mb"):
        assert name in flat
    # The synthetic scope is generated with a progress bar, then measured.
    assert "generating items" in stderr and "100.0%" in stderr
    assert "measuring in a fresh process" in stderr


def test_bench_telegram_answers_every_message() -> None:
    result = run_bot(
        "bench",
        "telegram",
        "--chats",
        "5",
        "--rate",
        "20",
        "--seconds",
        "1",
        "--closed-seconds",
        "0",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "20 messages, 20 answered, 0 unanswered" in result.stdout
    assert "latency added by the bot: p50" in result.stdout
