"""Channel sections of runtime-config.json: written, validated and hot-reloaded like the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemobot.bot.app import open_runtime_config
from mnemobot.bot.channels.lanes import LaneConfig
from mnemobot.bot.channels.telegram.config import TelegramConfig
from mnemobot.config.runtime_store import RuntimeConfigStore
from tests.test_runtime_config import touch_later


def test_first_start_writes_every_channel_section_with_its_defaults(tmp_path: Path) -> None:
    path = tmp_path / "preferences" / "runtime-config.json"
    open_runtime_config(path).ensure_file()
    data = json.loads(path.read_text())
    assert data["telegram"] == {
        "queueMode": "queue",
        "queueCap": 20,
        "burstSeconds": 1.5,
        "typingIntervalSeconds": 4,
        "typingDelaySeconds": 1,
        "streaming": "auto",
        "streamEditSeconds": 1,
        "maxReplyMessages": 5,
        "leaseSeconds": 15,
        "pollerLeaseSeconds": 15,
        "sweepSeconds": 1,
    }
    assert data["console"] == {"queueMode": "queue", "queueCap": 20, "burstSeconds": 1.5}
    assert data["toolLoop"]["maxToolExecutions"] == 80


def test_an_existing_telegram_section_is_read_and_an_edit_applies_without_restart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"telegram": {"queueMode": "collect", "queueCap": 3}}')
    store = open_runtime_config(path)
    telegram = store.current().section("telegram", TelegramConfig)
    assert (telegram.queue_mode, telegram.queue_cap, telegram.typing_interval_seconds) == (
        "collect",
        3,
        4,
    )
    assert store.current().section("console", LaneConfig).queue_mode == "queue"
    touch_later(path, '{"telegram": {"queueCap": 7}}')
    assert store.current().section("telegram", TelegramConfig).queue_cap == 7
    assert store.error is None


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ('{"telegram": {"typingIntervalSeconds": 9}}', "telegram.typingIntervalSeconds"),
        ('{"telegram": {"queueMode": "fifo"}}', "telegram.queueMode"),
    ],
)
def test_a_bad_channel_edit_is_named_and_the_last_good_config_stays(
    tmp_path: Path, edit: str, expected: str
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"telegram": {"queueCap": 4}}')
    store = open_runtime_config(path)
    assert store.current().section("telegram", TelegramConfig).queue_cap == 4
    touch_later(path, edit)
    assert store.current().section("telegram", TelegramConfig).queue_cap == 4
    assert store.error is not None and expected in store.error


@pytest.mark.parametrize(
    ("edit", "unknown"),
    [
        ('{"telegram": {"queueCap": 6, "queueCapp": 5}}', "telegram.queueCapp"),
        ('{"telegram": {"queueCap": 6}, "console": {"typingIntervalSeconds": 2}}',
         "console.typingIntervalSeconds"),
        ('{"telegram": {"queueCap": 6}, "telegrm": {}}', "telegrm"),
    ],
)  # fmt: skip
def test_an_unknown_channel_key_is_named_and_the_rest_applies(
    tmp_path: Path, edit: str, unknown: str
) -> None:
    path = tmp_path / "runtime-config.json"
    path.write_text('{"telegram": {"queueCap": 4}}')
    store = open_runtime_config(path)
    touch_later(path, edit)
    assert store.current().section("telegram", TelegramConfig).queue_cap == 6
    assert store.error is None and store.unknown_keys == (unknown,)


def test_a_channel_section_cannot_shadow_a_built_in_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="already built in: memory"):
        RuntimeConfigStore(tmp_path / "runtime-config.json", sections={"memory": LaneConfig})
