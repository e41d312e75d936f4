"""The `datetime` tool: the current date and time in the chat's zone; and where that is.

A chat's zone is its own when it set one (the schedule tool's `set_timezone`, kept in the
chat's session metadata as `timezone`), else `assistant.timezone`, else the machine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.config.runtime import RuntimeConfig
from mnemobot.systems.context import TurnContext
from mnemobot.systems.tool_runner import Tool

# A chat's own zone, kept in its session's metadata.
CHAT_ZONE_KEY = "timezone"


def configured_zone(name: str | None) -> ZoneInfo | None:
    """The zone named in runtime config, or None for the machine's local zone."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def chat_zone_name(metadata: Mapping[str, object], config: RuntimeConfig) -> str | None:
    """The chat's own zone, else the configured one; None means the machine's zone."""
    own = metadata.get(CHAT_ZONE_KEY)
    if isinstance(own, str) and configured_zone(own) is not None:
        return own
    return config.assistant.timezone


def now_in_zone(name: str | None) -> datetime:
    zone = configured_zone(name)
    return datetime.now(zone) if zone else datetime.now().astimezone()


class DatetimeArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timezone: str | None = Field(
        None, description="Optional IANA zone such as 'Asia/Tokyo'; default: the chat's zone."
    )


def _now(arguments: DatetimeArguments, ctx: TurnContext) -> str:
    name = arguments.timezone or chat_zone_name(ctx.session.metadata, ctx.config)
    if arguments.timezone and configured_zone(arguments.timezone) is None:
        return f"error: unknown timezone {arguments.timezone!r}; use an IANA name like Europe/Paris"
    now = now_in_zone(name)
    return f"{now.strftime('%A')}, {now.isoformat(timespec='seconds')} ({now.tzname()})"


DATETIME_TOOL = Tool(
    name="datetime",
    description="Get the current date, weekday and time.",
    arguments=DatetimeArguments,
    handler=_now,
)
