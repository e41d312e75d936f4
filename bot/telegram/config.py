"""The `telegram` section of runtime-config.json."""

from __future__ import annotations

from pydantic import Field

from bot.channels.lanes import LaneConfig


class TelegramConfig(LaneConfig):
    typing_interval_seconds: float = Field(4, gt=0, le=5)
    """Seconds between "typing..." actions (Telegram shows one for about 5 s)."""
