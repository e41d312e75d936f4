"""The bench commands run end to end and report every figure (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import run_mnemobot


def run_bot(*args: str) -> subprocess.CompletedProcess[str]:
    return run_mnemobot(*args, timeout=240)


def test_bench_memory_reports_every_figure() -> None:
    result = run_bot("bench", "memory", "--items", "300", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout)
    flat = json.dumps(figures)
    for name in ("pack_p95_ms", "write_p95_ms", "cold_start_s", "peak_rss_mb"):
        assert name in flat


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
