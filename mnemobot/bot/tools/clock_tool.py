"""The `datetime` tool: the current date and time in the configured timezone."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.config.zones import local_time, named_zone
from mnemobot.memory.clock import SYSTEM_CLOCK, Clock
from mnemobot.systems.context import TurnContext
from mnemobot.systems.tool_runner import Tool


class DatetimeArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timezone: str | None = Field(
        None, description="Optional IANA zone such as 'Asia/Tokyo'; default: the bot's zone."
    )


def datetime_tool(clock: Clock = SYSTEM_CLOCK) -> Tool:
    """The tool, telling the time `clock` gives (a replay's own clock, in a replay)."""

    def now(arguments: DatetimeArguments, ctx: TurnContext) -> str:
        if arguments.timezone and named_zone(arguments.timezone) is None:
            return (
                f"error: unknown timezone {arguments.timezone!r}; use an IANA name like "
                "Europe/Paris"
            )
        at = local_time(clock(), arguments.timezone or ctx.config.assistant.timezone)
        return f"{at.strftime('%A')}, {at.isoformat(timespec='seconds')} ({at.tzname()})"

    return Tool(
        name="datetime",
        description="Get the current date, weekday and time.",
        arguments=DatetimeArguments,
        handler=now,
        status="🕒 checking the time…",
    )
