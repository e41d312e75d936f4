"""Evicted tool results never overwrite each other, even when a server reuses call ids."""

from __future__ import annotations

from pathlib import Path

from mnemobot.conversation.large_results import LargeResultStore


def test_a_reused_call_id_gets_its_own_file(tmp_path: Path) -> None:
    store = LargeResultStore(tmp_path)
    first = store.evict("telegram:1", "call_0", "A" * 90_000)
    second = store.evict("telegram:1", "call_0", "B" * 90_000)
    assert "result_id='call_0'" in first and "result_id='call_0-2'" in second
    assert (store.read_page("telegram:1", "call_0", 0, 10) or "").startswith("AAAAAAAAAA")
    assert (store.read_page("telegram:1", "call_0-2", 0, 10) or "").startswith("BBBBBBBBBB")
    assert store.read_page("telegram:2", "call_0", 0, 10) is None
