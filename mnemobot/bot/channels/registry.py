"""The channels' runtime-config sections: one line per channel, read by every config store.

Each channel validates its own section (`"telegram": {...}` in runtime-config.json) with a
model kept in its package; registering it here is all the config layer needs to know.
"""

from __future__ import annotations

from pathlib import Path

from mnemobot.bot.channels.lanes import LaneConfig
from mnemobot.bot.telegram.config import TelegramConfig
from mnemobot.config.runtime import ConfigSection
from mnemobot.config.runtime_store import RuntimeConfigStore

CHANNEL_SECTIONS: dict[str, type[ConfigSection]] = {
    # The console has nothing of its own beyond its lanes.
    "console": LaneConfig,
    "telegram": TelegramConfig,
}


def open_runtime_config(path: Path) -> RuntimeConfigStore:
    """The runtime config store with every channel's section."""
    return RuntimeConfigStore(path, sections=CHANNEL_SECTIONS)
