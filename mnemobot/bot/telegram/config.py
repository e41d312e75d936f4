"""The `telegram` section of runtime-config.json."""

from __future__ import annotations

from pydantic import Field

from mnemobot.bot.channels.lanes import LaneConfig


class TelegramConfig(LaneConfig):
    typing_interval_seconds: float = Field(4, gt=0, le=5)
    """Seconds between "typing..." actions (Telegram shows one for about 5 s)."""
    typing_delay_seconds: float = Field(1, ge=0, le=60)
    """"typing..." appears only once a reply has taken this long: quick replies need no
    indicator, and each action spends part of the bot's share of Telegram's rate limit."""
