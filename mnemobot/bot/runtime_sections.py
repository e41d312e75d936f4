"""The sections of runtime-config.json kept with their code, and the store that reads them.

A channel's section (`"telegram": {...}`) and the MCP servers' (`"mcp": {...}`) are each
validated by a model kept beside its code; every config store of the bot and its CLI must
know them all. Apart from the composition root (`bot.app`, which opens the store with
them): the CLI's commands that read or write the config (`init`, `doctor`, `memory`, the
config reference) need the sections, not how the bot is built.
"""

from __future__ import annotations

from pathlib import Path

from mnemobot.bot.channels.telegram.config import TelegramConfig
from mnemobot.bot.mcp.config import McpConfig
from mnemobot.config.runtime import ConfigSection
from mnemobot.config.runtime_store import RuntimeConfigStore

# Each channel's section of runtime-config.json (`"telegram": {...}`), validated by a model
# kept with the channel; every config store of the bot and its CLI reads them. The console
# has none (its old lane keys are retired, `config.retired_keys`).
CHANNEL_SECTIONS: dict[str, type[ConfigSection]] = {"telegram": TelegramConfig}


# Every section kept with its code: the channels', and the MCP servers' (bot.mcp).
RUNTIME_SECTIONS: dict[str, type[ConfigSection]] = {**CHANNEL_SECTIONS, "mcp": McpConfig}


def open_runtime_config(path: Path) -> RuntimeConfigStore:
    """The runtime config store with every channel's section and the MCP servers'."""
    return RuntimeConfigStore(path, sections=RUNTIME_SECTIONS)
