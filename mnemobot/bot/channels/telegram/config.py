"""The `telegram` section of runtime-config.json."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mnemobot.bot.channels.lanes import LaneConfig


class TelegramConfig(LaneConfig):
    typing_interval_seconds: float = Field(4, gt=0, le=5)
    """Seconds between "typing..." actions (Telegram shows one for about 5 s)."""
    typing_delay_seconds: float = Field(1, ge=0, le=60)
    """"typing..." appears only once a reply has taken this long: quick replies need no
    indicator, and each action spends part of the bot's share of Telegram's rate limit."""

    streaming: Literal["off", "edit", "draft", "auto"] = "auto"
    """How a reply shows while the model writes it: `auto` edits a message in private chats
    and shows none in groups (their 20 messages a minute would go to edits, and other
    members' replies would wait); `edit` edits in every chat; `draft` uses Telegram's
    draft preview in private chats (the final reply may flash twice as it replaces the
    draft in some clients); `off` sends only the finished reply."""
    stream_edit_seconds: float = Field(1, ge=0.3, le=30)
    """Least seconds between two preview calls (edits, drafts) in one chat; the finished
    reply never waits for it."""

    max_reply_messages: int = Field(5, ge=1, le=100)
    """Most Telegram messages one reply is sent as (each up to 4096 characters); a longer
    reply sends its first part in this many and the whole reply as a Markdown file."""

    # Replicas on Redis (BOT_REDIS_URL); read at start.
    lease_seconds: float = Field(15, gt=0, le=600)
    """Replicas on Redis: how long a replica's hold on a chat outlives the replica; after a
    crash, another replica answers the chat's waiting messages this long after the last
    renewal."""
    poller_lease_seconds: float = Field(15, gt=0, le=600)
    """Replicas on Redis: the same for the one replica that polls Telegram; a standby takes
    over within this plus a third of it."""
    sweep_seconds: float = Field(1, gt=0, le=60)
    """Replicas on Redis: how often each replica looks for chats with waiting messages and
    no live holder."""
