"""Channel sections of runtime-config.json: written, validated and hot-reloaded like the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemobot.bot.channels.telegram.config import TelegramConfig
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.config.runtime_store import RuntimeConfigStore
from tests.test_runtime_config import touch_later


def test_first_start_writes_every_channel_section_with_its_defaults(tmp_path: Path) -> None:
    path = tmp_path / "preferences" / "runtime-config.json"
    open_runtime_config(path).ensure_file()
    data = json.loads(path.read_text())
    assert data["telegram"] == {"streaming": "auto", "queueMode": "queue", "leaseSeconds": 15}
    # The console's lane keys were internal all along: it has no section any more.
    assert "console" not in data


def test_an_existing_telegram_section_is_read_and_an_edit_applies_without_restart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"telegram": {"queueMode": "collect", "streaming": "off"}}')
    store = open_runtime_config(path)
    telegram = store.current().section("telegram", TelegramConfig)
    assert (telegram.queue_mode, telegram.streaming, telegram.lease_seconds) == (
        "collect",
        "off",
        15,
    )
    touch_later(path, '{"telegram": {"streaming": "edit"}}')
    assert store.current().section("telegram", TelegramConfig).streaming == "edit"
    assert store.error is None


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ('{"telegram": {"leaseSeconds": 0}}', "telegram.leaseSeconds"),
        ('{"telegram": {"queueMode": "fifo"}}', "telegram.queueMode"),
    ],
)
def test_a_bad_channel_edit_is_named_and_the_last_good_config_stays(
    tmp_path: Path, edit: str, expected: str
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"telegram": {"streaming": "off"}}')
    store = open_runtime_config(path)
    assert store.current().section("telegram", TelegramConfig).streaming == "off"
    touch_later(path, edit)
    assert store.current().section("telegram", TelegramConfig).streaming == "off"
    assert store.error is not None and expected in store.error


@pytest.mark.parametrize(
    ("edit", "unknown"),
    [
        ('{"telegram": {"streaming": "edit", "streamng": "off"}}', "telegram.streamng"),
        ('{"telegram": {"streaming": "edit"}, "mcp": {"server": {}}}', "mcp.server"),
        ('{"telegram": {"streaming": "edit"}, "telegrm": {}}', "telegrm"),
    ],
)  # fmt: skip
def test_an_unknown_channel_key_is_named_and_the_rest_applies(
    tmp_path: Path, edit: str, unknown: str
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"telegram": {"streaming": "off"}}')
    store = open_runtime_config(path)
    touch_later(path, edit)
    assert store.current().section("telegram", TelegramConfig).streaming == "edit"
    assert store.error is None and store.unknown_keys == (unknown,)


def test_a_channel_section_cannot_shadow_a_built_in_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="already built in: memory"):
        RuntimeConfigStore(tmp_path / "runtime-config.json", sections={"memory": TelegramConfig})
