"""Time zones: the zone the runtime config (or a chat, or a task) names, or the machine's.

Every "what day / what time is it here" of the bot (a turn's date, the dates in a
message, the `datetime` tool, daily-note file names, when a scheduled task fires) reads
the zone through here.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def named_zone(name: str | None) -> ZoneInfo | None:
    """The IANA zone `name` ("Europe/Berlin"), or None when it is empty or unknown."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def zone_of(name: str) -> ZoneInfo:
    """The zone of an IANA name; ValueError naming it when unknown."""
    zone = named_zone(name)
    if zone is None:
        raise ValueError(f"unknown time zone {name!r}; use an IANA name like Europe/Berlin")
    return zone


def _machine_zone_name() -> str | None:
    """The machine's zone as an IANA name (TZ, else /etc/localtime), if it has one.

    A name, not the fixed offset `datetime.astimezone()` gives: an offset knows nothing
    of daylight-saving changes.
    """
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:
        target = str(Path("/etc/localtime").resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    return next((name for name in candidates if named_zone(name) is not None), None)


def local_zone_name() -> str:
    """The machine's zone as an IANA name, else "UTC" (a task keeps a name, not an offset)."""
    return _machine_zone_name() or "UTC"


def zone_or_local(name: str | None) -> tzinfo:
    """The named zone, else the machine's: by its IANA name when it has one, or else its
    offset now."""
    zone = named_zone(name) or named_zone(_machine_zone_name())
    if zone is not None:
        return zone
    local = datetime.now().astimezone().tzinfo
    return local if local is not None else UTC


def time_in(at: float, zone: tzinfo | None) -> datetime:
    """`at` (epoch seconds) in `zone`; None: in the machine's local zone, with the offset
    in force at `at` (right across daylight saving, for a replayed past too)."""
    return (
        datetime.fromtimestamp(at, zone)
        if zone is not None
        else datetime.fromtimestamp(at).astimezone()
    )


def local_time(at: float, name: str | None) -> datetime:
    """`at` (epoch seconds) in the named zone, else in the machine's (see `time_in`)."""
    return time_in(at, named_zone(name))
