"""The bench commands run end to end and report every figure (no timing is asserted)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.conftest import run_mnemobot
from tests.terminal import run_with_terminal_stderr

# Whole bench runs: minutes on a loaded machine, so `pytest -m slow` (CI runs them).
pytestmark = pytest.mark.slow


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


def test_bench_telegram_replicas_answers_every_message_once_in_order() -> None:
    # Three chats over two replicas: each chat's messages land on both, so its answers
    # cross from one replica's lease to the other's.
    result = run_bot(
        "bench",
        "telegram",
        "--replicas",
        "2",
        "--no-files",
        "--chats",
        "3",
        "--rate",
        "20",
        "--seconds",
        "1",
        "--closed-seconds",
        "0",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "redis-server started for the bench" in out
    assert "Redis, 2 replicas (webhook):" in out
    assert "20 messages, 20 answered, 0 unanswered" in out
    assert "0 duplicates, 0 out of order" in out
    assert "latency added by the bot: p50" in out
    # Both replica processes worked, and the summary row is there.
    per_process = re.search(r"s per process: ([\d.]+), ([\d.]+)\)", out)
    assert per_process is not None and all(float(s) > 0 for s in per_process.groups())
    # (Replies/s counts the replies inside the 1 s window: under load some come later.)
    row = r"^\| Redis, 2 replicas \| [\d.]+ \| [\d.]+ / [\d.]+ ms \| - \| 0 \| 0 \|"
    assert re.search(row, out, re.MULTILINE)


def test_bench_crash_kills_a_replica_and_counts_what_was_answered() -> None:
    result = run_bot("bench", "crash", "--replicas", "2", "--kills", "1", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout)
    assert figures["replicas"] == 2 and figures["kills"] == 1
    assert figures["messages"] > 0
    assert figures["answered"] == figures["messages"] and figures["missing"] == 0
    assert figures["chats_out_of_order"] == 0
    assert "duplicate_replies" in figures


def test_bench_prefix_reports_reuse_and_recall() -> None:
    result = run_bot("bench", "prefix", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    [fake] = json.loads(result.stdout)["runs"]
    assert fake["requests"] == 30 and fake["recalled"] == fake["questions"] == 10
    # Each request begins with the one before it (the target: 85% on average,
    # counted with the tool schemas in front as the fake server caches).
    assert fake["reuse_share_with_tools_mean"] >= 0.85
    assert fake["reported_cached_tokens"] > 0


def test_bench_message_path_counts_the_files_of_each_path_per_thread() -> None:
    result = run_bot("bench", "message-path", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout)
    whole, write, pack = figures["whole message"], figures["memory write"], figures["pack build"]
    # The turn itself runs on the event loop, the memory work in the memory workers.
    assert "bot/turn/assistant.py" in whole["files_by_thread"]["event loop"]
    assert "memory/pack/build.py" in pack["files_by_thread"]["memory workers"]
    assert "memory/write/write_path.py" in write["files_by_thread"]["memory workers"]
    # A path's files are among the whole way's, fewer of them; an idle bot runs none.
    for path in (write, pack):
        assert 0 < path["files"] < whole["files"]
    assert figures["idle"]["calls"] < whole["calls"] / 10
