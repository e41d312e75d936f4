"""Runtime config: defaults written on first start, hot reload, bad edits rejected."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from config.runtime_store import RuntimeConfigStore


def touch_later(path: Path, text: str) -> None:
    stat = path.stat()
    path.write_text(text)
    # Make sure the change is visible even on filesystems with coarse mtimes.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_defaults_are_written_on_first_start(tmp_path: Path) -> None:
    path = tmp_path / "preferences" / "runtime-config.json"
    store = RuntimeConfigStore(path)
    store.ensure_file()
    data = json.loads(path.read_text())
    assert data["memory"]["softPromptBudgetTokens"] == 1800
    assert data["compaction"]["keepLastMessages"] == 20
    assert data["toolLoop"] == {"maxLlmCalls": 20, "maxToolExecutions": 80}
    assert data["llm"]["model"] is None


def test_an_edit_takes_effect_without_restart(tmp_path: Path) -> None:
    path = tmp_path / "runtime-config.json"
    store = RuntimeConfigStore(path)
    store.ensure_file()
    assert store.current().tool_loop.max_llm_calls == 20
    data = json.loads(path.read_text())
    data["toolLoop"]["maxLlmCalls"] = 3
    touch_later(path, json.dumps(data))
    assert store.current().tool_loop.max_llm_calls == 3
    assert store.error is None


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ("{not json", "not valid JSON"),
        ('{"toolLoop": {"maxLlmCalls": 0}}', "toolLoop.maxLlmCalls"),
        ('{"memory": {"softPromtBudget": 5}}', "memory.softPromtBudget: unknown key"),
        ('{"compaction": {"keepLastMessages": "many"}}', "compaction.keepLastMessages"),
    ],
)
def test_a_bad_edit_keeps_the_last_good_config(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, edit: str, expected: str
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"toolLoop": {"maxLlmCalls": 7}}')
    store = RuntimeConfigStore(path)
    assert store.current().tool_loop.max_llm_calls == 7
    with caplog.at_level(logging.ERROR):
        touch_later(path, edit)
        assert store.current().tool_loop.max_llm_calls == 7
    assert store.error is not None and expected in store.error
    assert expected in caplog.text
    assert "INVALID" in store.describe_state()
    touch_later(path, '{"toolLoop": {"maxLlmCalls": 9}}')
    assert store.current().tool_loop.max_llm_calls == 9
    assert store.error is None
