"""The `telegram` section of runtime-config.json."""

from __future__ import annotations

from pydantic import Field

from bot.channels.lanes import LaneConfig


class TelegramConfig(LaneConfig):
    # Telegram shows "typing..." for 5 s per call, so it is renewed a bit sooner.
    typing_interval_seconds: float = Field(4, gt=0, le=5)
