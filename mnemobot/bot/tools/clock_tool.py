"""The `datetime` tool: the current date and time in the chat's zone; and where that is.

A chat's zone is its own when it set one (the schedule tool's `set_timezone`, kept in the
chat's session metadata as `timezone`), else `assistant.timezone`, else the machine's.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.i18n import N_
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.zones import local_time, named_zone
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import Tool

# A chat's own zone, kept in its session's metadata.
CHAT_ZONE_KEY = "timezone"


def chat_zone_name(metadata: Mapping[str, object], config: RuntimeConfig) -> str | None:
    """The chat's own zone, else the configured one; None means the machine's zone."""
    own = metadata.get(CHAT_ZONE_KEY)
    if isinstance(own, str) and named_zone(own) is not None:
        return own
    return config.assistant.timezone


class DatetimeArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timezone: str | None = Field(
        None, description="Optional IANA zone such as 'Asia/Tokyo'; default: the chat's zone."
    )


def datetime_tool(clock: Clock = SYSTEM_CLOCK) -> Tool:
    """The tool, telling the time `clock` gives (a replay's own clock, in a replay)."""

    def now(arguments: DatetimeArguments, ctx: TurnContext) -> str:
        if arguments.timezone and named_zone(arguments.timezone) is None:
            return (
                f"error: unknown timezone {arguments.timezone!r}; use an IANA name like "
                "Europe/Paris"
            )
        zone = arguments.timezone or chat_zone_name(ctx.session.metadata, ctx.config)
        at = local_time(clock(), zone)
        return f"{at.strftime('%A')}, {at.isoformat(timespec='seconds')} ({at.tzname()})"

    return Tool(
        name="datetime",
        description="Get the current date, weekday and time.",
        arguments=DatetimeArguments,
        handler=now,
        status=N_("🕒 checking the time…"),
    )
