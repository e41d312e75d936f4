"""The `telegram` section of runtime-config.json, and the channel's timing constants."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field

from mnemobot.bot.channels.lanes import BURST_SECONDS, QUEUE_CAP, LaneRules, QueueMode
from mnemobot.config.runtime import ConfigSection

# Keys earlier versions read (`config.retired_keys`), with the value each had by default.
RETIRED: Mapping[str, object] = {
    "queueCap": QUEUE_CAP,
    "burstSeconds": BURST_SECONDS,
    "typingIntervalSeconds": 4.0,
    "typingDelaySeconds": 1.0,
    "streamEditSeconds": 1.0,
    "maxReplyMessages": 5,
    "pollerLeaseSeconds": 15.0,
    "sweepSeconds": 1.0,
}


class TelegramConfig(ConfigSection):
    retired: ClassVar[Mapping[str, object]] = RETIRED

    streaming: Literal["off", "edit", "draft", "auto"] = "auto"
    """A reply as it is written: "auto" (edits in private chats), "edit" (everywhere),
    "draft" (Telegram's drafts), "off"."""
    queue_mode: QueueMode = "queue"
    """Messages sent during a reply: "queue" (each its turn) or "collect" (one turn)."""
    lease_seconds: float = Field(15, gt=0, le=600)
    """Replicas (BOT_REDIS_URL): another takes over a crashed one's chats this soon."""


@dataclass(frozen=True, slots=True)
class TelegramTiming:
    """The Telegram channel's pacing: constants, not settings; a test passes faster ones
    (`serve_telegram(timing=...)`)."""

    # Seconds between "typing..." actions: Telegram shows one for about 5 s.
    typing_interval_seconds: float = 4.0
    # "typing..." appears only once a reply has taken this long: quick replies need no
    # indicator, and each action spends part of the bot's share of Telegram's rate limit.
    # Not measured; a reply under a second reads as instant.
    typing_delay_seconds: float = 1.0
    # Least seconds between two preview calls (edits, drafts) in one chat; the finished
    # reply never waits for it. Telegram's flood limits allow about one edit a second per
    # chat (bench telegram --stream measures what a chat sees).
    stream_edit_seconds: float = 1.0
    # Most Telegram messages one reply is sent as (each up to 4096 characters); a longer
    # reply sends its first part in this many and the whole reply as a Markdown file.
    # Not measured; a screenful or two of a phone.
    max_reply_messages: int = 5
    # Replicas: how often each replica looks for chats with waiting messages and no live
    # holder. Not measured; a small fraction of the lease.
    sweep_seconds: float = 1.0
    # The lanes' cap and burst (`channels.lanes`).
    queue_cap: int = QUEUE_CAP
    burst_seconds: float = BURST_SECONDS

    def lane_rules(self, queue_mode: QueueMode) -> LaneRules:
        return LaneRules(queue_mode, self.queue_cap, self.burst_seconds)


DEFAULT_TIMING = TelegramTiming()
