"""The channels' runtime-config sections: one line per channel, read by every config store.

Each channel validates its own section (`"telegram": {...}` in runtime-config.json) with a
model kept in its package; registering it here is all the config layer needs to know.
"""

from __future__ import annotations

from pathlib import Path

from mnemobot.bot.channels.lanes import LaneConfig
from mnemobot.bot.mcp.config import McpConfig
from mnemobot.bot.telegram.config import TelegramConfig
from mnemobot.config.runtime import ConfigSection
from mnemobot.config.runtime_store import RuntimeConfigStore

CHANNEL_SECTIONS: dict[str, type[ConfigSection]] = {
    # The console has nothing of its own beyond its lanes.
    "console": LaneConfig,
    "telegram": TelegramConfig,
}

# Every section kept with its code: the channels', and the MCP servers' (bot.mcp).
BOT_SECTIONS: dict[str, type[ConfigSection]] = {**CHANNEL_SECTIONS, "mcp": McpConfig}


def open_runtime_config(path: Path) -> RuntimeConfigStore:
    """The runtime config store with every channel's section and the MCP servers'."""
    return RuntimeConfigStore(path, sections=BOT_SECTIONS)
