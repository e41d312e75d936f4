"""The `datetime` tool: the current date and time in the configured timezone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.systems.context import TurnContext
from mnemobot.systems.tool_runner import Tool


def configured_zone(name: str | None) -> ZoneInfo | None:
    """The zone named in runtime config, or None for the machine's local zone."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def now_in_zone(name: str | None) -> datetime:
    zone = configured_zone(name)
    return datetime.now(zone) if zone else datetime.now().astimezone()


class DatetimeArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timezone: str | None = Field(
        None, description="Optional IANA zone such as 'Asia/Tokyo'; default: the bot's zone."
    )


def _now(arguments: DatetimeArguments, ctx: TurnContext) -> str:
    name = arguments.timezone or ctx.config.assistant.timezone
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
