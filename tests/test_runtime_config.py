"""Runtime config: defaults written on first start, hot reload, bad edits rejected."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from mnemobot.bot.app import build_app
from mnemobot.config.runtime_store import RuntimeConfigStore
from tests.conftest import CONSOLE_CHAT, make_settings, write_runtime_config


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
    assert data["toolLoop"] == {"maxLlmCalls": 20, "toolTimeoutSeconds": 120}
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
        ("", "the file is empty"),
        ('{"toolLoop": {"maxLlmCalls": 7', "not valid JSON"),
        (
            '{"llm": {"maxInputTokens": 4096}}',
            "llm.maxInputTokens (4096) is smaller than memory.maxPromptBudgetTokens + "
            "llm.maxOutputTokens (5548)",
        ),
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
    assert store.describe_state().startswith("INVALID")
    assert store.describe_state().endswith("values of runtime-config.json in force")
    touch_later(path, '{"toolLoop": {"maxLlmCalls": 9}}')
    assert store.current().tool_loop.max_llm_calls == 9
    assert store.error is None


def test_an_unknown_key_is_ignored_and_named_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text(
        '{"toolLoop": {"maxLlmCalls": 7}, "memory": {"softPromtBudget": 5, '
        '"softPromptBudgetTokens": 900}, "lmm": {"model": "x"}}'
    )
    store = RuntimeConfigStore(path)
    with caplog.at_level(logging.WARNING):
        config = store.current()
    assert config.tool_loop.max_llm_calls == 7
    assert config.memory.soft_prompt_budget_tokens == 900
    assert store.error is None
    assert "memory.softPromtBudget" in caplog.text and "lmm" in caplog.text
    assert store.describe_state() == (
        "values of runtime-config.json in force; unknown keys ignored: memory.softPromtBudget, lmm"
    )


def test_unknown_keys_do_not_hide_a_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"memory": {"softPromtBudget": 5, "softPromptBudgetTokens": -1}}')
    store = RuntimeConfigStore(path)
    assert store.current().memory.soft_prompt_budget_tokens == 1800
    assert store.error is not None and "memory.softPromptBudgetTokens" in store.error
    assert store.describe_state().endswith("defaults in force")


def test_status_says_defaults_when_the_file_never_was_valid(tmp_path: Path) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text("")
    store = RuntimeConfigStore(path)
    assert store.current().tool_loop.max_llm_calls == 20
    assert store.describe_state() == (
        "INVALID (runtime-config.json: the file is empty; write {} to use every default); "
        "defaults in force"
    )
    missing = RuntimeConfigStore(tmp_path / "nowhere.json")
    assert missing.describe_state().endswith("defaults in force")


async def test_status_names_the_unknown_key_and_whose_values_are_in_force(
    workspace: Path,
) -> None:
    write_runtime_config(workspace, {"toolLoop": {"maxLlmCals": 3}})
    app = build_app(make_settings(workspace))
    try:
        status = app.commands.status_text(CONSOLE_CHAT)
        assert (
            "Runtime config: values of runtime-config.json in force; "
            "unknown keys ignored: toolLoop.maxLlmCals"
        ) in status
        touch_later(app.paths.runtime_config, "")
        status = app.commands.status_text(CONSOLE_CHAT)
        assert "Runtime config: INVALID (runtime-config.json: the file is empty" in status
        assert status.endswith("values of runtime-config.json in force")
    finally:
        await app.close()


# Written by a version whose every tuning constant was a key (it wrote them all): some at
# the value they had by default, some tuned, beside a typo and two keys still read.
OLD_FILE = {
    "toolLoop": {"maxLlmCalls": 7, "maxToolExecutions": 80, "maxLlmCals": 3},
    "memory": {
        "softPromptBudgetTokens": 900,
        "recentDays": 7,
        "episodicTopK": 8,
        "ranking": {"relevanceWeight": 0.9, "turnsAroundHits": 2, "typeBoost": {"fix": 0.03}},
        "maintenance": {"enabled": True, "intervalHours": 6.0},
    },
    "telegram": {"streaming": "off", "burstSeconds": 0.5, "sweepSeconds": 1},
    "console": {"queueMode": "queue", "queueCap": 20, "burstSeconds": 1.5},
}
RETIRED_LINE = "keys no longer used by this version"


async def test_a_file_of_an_earlier_version_loads_and_its_removed_keys_are_named_once(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_runtime_config(workspace, OLD_FILE)
    with caplog.at_level(logging.INFO, logger="mnemobot.config.runtime_store"):
        app = build_app(make_settings(workspace))
    try:
        config = app.runtime.current()
        assert config.tool_loop.max_llm_calls == 7
        assert config.memory.soft_prompt_budget_tokens == 900
        assert app.runtime.error is None
        # Only the typo is an unknown key; /status shows it, and nothing of the rest.
        assert app.runtime.unknown_keys == ("toolLoop.maxLlmCals",)
        status = app.commands.status_text(CONSOLE_CHAT)
        assert (
            "Runtime config: values of runtime-config.json in force; "
            "unknown keys ignored: toolLoop.maxLlmCals\n"
        ) in status + "\n"
        for gone in ("recentDays", "ranking", "burstSeconds", "maxToolExecutions", "queueCap"):
            assert gone not in status
        [named] = [r for r in caplog.records if RETIRED_LINE in r.getMessage()]
        line = named.getMessage()
        # Each removed key once; a whole removed section by its name; a tuned value with
        # the one now built in (so it warns: that tuning is lost).
        for key in (
            "toolLoop.maxToolExecutions",
            "memory.recentDays",
            "memory.episodicTopK",
            "memory.maintenance",
            "console",
            "telegram.sweepSeconds",
        ):
            assert line.count(key) == 1, key
        assert "memory.ranking.relevanceWeight (0.9 ignored; built in: 0.75)" in line
        assert "telegram.burstSeconds (0.5 ignored; built in: 1.5)" in line
        assert "turnsAroundHits" not in line and "typeBoost" not in line
        assert "maxLlmCals" not in line
        assert named.levelno == logging.WARNING
        # An edit that leaves them in the file does not name them again.
        caplog.clear()
        touch_later(
            app.paths.runtime_config,
            json.dumps({**OLD_FILE, "toolLoop": {"maxLlmCalls": 9, "maxToolExecutions": 80}}),
        )
        assert app.runtime.current().tool_loop.max_llm_calls == 9
        assert not [r for r in caplog.records if RETIRED_LINE in r.getMessage()]
    finally:
        await app.close()


def test_removed_keys_at_the_values_they_had_by_default_are_only_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"memory": {"recentDays": 7, "ranking": {"turnsAroundHits": 2}}}')
    store = RuntimeConfigStore(path)
    with caplog.at_level(logging.INFO):
        store.current()
    [named] = [r for r in caplog.records if RETIRED_LINE in r.getMessage()]
    assert named.levelno == logging.INFO
    assert "memory.recentDays, memory.ranking" in named.getMessage()
    assert store.describe_state() == "values of runtime-config.json in force"
