"""Time zones: the zone the runtime config names (`assistant.timezone`), or the machine's.

Every "what day / what time is it here" of the bot (a turn's date, the dates in a
message, the `datetime` tool, daily-note file names) reads the zone through here.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def named_zone(name: str | None) -> ZoneInfo | None:
    """The IANA zone `name` ("Europe/Berlin"), or None when it is empty or unknown."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def zone_or_local(name: str | None) -> tzinfo:
    """The named zone, or the machine's local zone (its offset now) when none is named."""
    zone = named_zone(name)
    if zone is not None:
        return zone
    local = datetime.now().astimezone().tzinfo
    return local if local is not None else UTC


def local_time(at: float, name: str | None) -> datetime:
    """`at` (epoch seconds) in the named zone, else in the machine's local zone with the
    offset in force at `at` (right across daylight saving, for a replayed past too)."""
    zone = named_zone(name)
    return datetime.fromtimestamp(at, zone) if zone else datetime.fromtimestamp(at).astimezone()
