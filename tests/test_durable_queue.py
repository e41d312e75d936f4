"""DurableQueue: what was accepted survives restarts, duplicates are recognised, order holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import mnemobot.bot.delivery.journal as journal_module
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry


def entry(n: int, key: str = "telegram:1") -> QueuedEntry:
    return QueuedEntry(id=f"u:{n}", key=key, data={"text": f"message {n}"}, at=float(n))


def test_accepted_entries_come_back_after_a_restart_in_order(tmp_path: Path) -> None:
    path = tmp_path / "inbox.jsonl"
    queue = DurableQueue(path)
    assert [e.id for e in queue.add([entry(1), entry(2, "telegram:2"), entry(3)])] == [
        "u:1",
        "u:2",
        "u:3",
    ]
    queue.done(["u:1"])
    again = DurableQueue(path)
    assert [e.id for e in again.pending()] == ["u:2", "u:3"]
    assert [e.id for e in again.pending("telegram:1")] == ["u:3"]
    assert again.pending_keys() == ["telegram:2", "telegram:1"]
    assert again.pending()[0].data == {"text": "message 2"}


def test_an_entry_seen_before_a_restart_is_a_duplicate_after_it(tmp_path: Path) -> None:
    path = tmp_path / "inbox.jsonl"
    queue = DurableQueue(path)
    queue.add([entry(7)])
    queue.done(["u:7"])
    again = DurableQueue(path)
    assert again.add([entry(7), entry(8)]) == [entry(8)]
    assert again.seen("u:7") and not again.is_live("u:7")


def test_a_rewrite_keeps_live_entries_and_the_dedupe_window(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(journal_module, "REWRITE_AFTER_DONE", 10)
    path = tmp_path / "inbox.jsonl"
    queue = DurableQueue(path, remembered_ids=50)
    queue.add([entry(n) for n in range(30)])
    queue.done([f"u:{n}" for n in range(28)])
    lines = path.read_bytes().count(b"\n")
    assert lines == 3  # the window, then the two live entries
    again = DurableQueue(path, remembered_ids=50)
    assert [e.id for e in again.pending()] == ["u:28", "u:29"]
    assert again.add([entry(5)]) == []


def test_the_dedupe_window_is_bounded_but_never_forgets_a_live_entry(tmp_path: Path) -> None:
    queue = DurableQueue(tmp_path / "inbox.jsonl", remembered_ids=5)
    queue.add([entry(0)])
    for n in range(1, 20):
        queue.add([entry(n)])
        queue.done([f"u:{n}"])
    assert queue.is_live("u:0")
    assert not queue.seen("u:1")  # forgotten: the window holds five ids
    assert queue.seen("u:19")


def test_torn_and_foreign_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "inbox.jsonl"
    DurableQueue(path).add([entry(1)])
    with path.open("ab") as handle:
        handle.write(b'{"op": "add", "id": 5}\n{"op": "add", "id": "u:2", "ke')
    queue = DurableQueue(path)
    assert queue.skipped_lines == 2
    assert [e.id for e in queue.pending()] == ["u:1"]
    queue.add([entry(3)])
    assert [e.id for e in DurableQueue(path).pending()] == ["u:1", "u:3"]


_WRITER = """
import sys
from pathlib import Path
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry
queue = DurableQueue(Path(sys.argv[1]))
prefix = sys.argv[2]
n = 0
while True:
    queue.add([QueuedEntry(id=f"{prefix}:{n}", key="k", data={"text": "x" * 500}, at=float(n))])
    print(n, flush=True)
    if n % 3 == 0:
        queue.done([f"{prefix}:{n}"])
    n += 1
"""


def test_a_kill_at_any_moment_loses_no_acknowledged_entry(tmp_path: Path) -> None:
    path = tmp_path / "inbox.jsonl"
    for round_ in range(3):
        prefix = f"r{round_}"
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), prefix], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        acknowledged: list[int] = []
        deadline = time.monotonic() + 20
        while len(acknowledged) < 40 and time.monotonic() < deadline:
            acknowledged.append(int(child.stdout.readline()))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        queue = DurableQueue(path)
        for n in acknowledged:
            assert queue.seen(f"{prefix}:{n}")
        live = {e.id for e in queue.pending()}
        # Every acknowledged entry not marked done is still there (the last one may have
        # been killed between its add and its done).
        assert all(f"{prefix}:{n}" in live for n in acknowledged[:-1] if n % 3)
        queue.done(list(live))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "done", "restart"]), st.integers(0, 15)),
        max_size=40,
    )
)
def test_replay_always_equals_what_was_done_in_memory(ops: list[tuple[str, int]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "q.jsonl"
        queue = DurableQueue(path, remembered_ids=1_000)
        live: dict[str, None] = {}
        seen: set[str] = set()
        for op, n in ops:
            if op == "add":
                fresh = queue.add([entry(n)])
                assert bool(fresh) == (f"u:{n}" not in seen)
                if fresh:
                    live[f"u:{n}"] = None
                    seen.add(f"u:{n}")
            elif op == "done":
                queue.done([f"u:{n}"])
                live.pop(f"u:{n}", None)
            else:
                queue = DurableQueue(path, remembered_ids=1_000)
            assert [e.id for e in queue.pending()] == list(live)
