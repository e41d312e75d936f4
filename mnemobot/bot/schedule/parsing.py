"""Reading the times people give: "tomorrow at 9", "in 2 hours", "27 November 09:00", "every 3
days", a cron expression. Pure functions; `dateparser` reads the words, in any language it
knows, relative to the chat's current local time.

Two things dateparser gets wrong are settled here:

- A bare hour after a word like "at" ("tomorrow at 9", "um 9 Uhr", "в 9") is read as a day
  or a month; it is rewritten as a clock time ("at 09:00") first.
- dateparser adds durations to the wall-clock time, so "in 2 hours" on the night clocks go
  forward would be one real hour. Whether the words are a duration from now is found by
  reading them again against a later "now": a duration moves with it. A duration of whole
  days keeps the local time of day ("in 3 days"); any other is counted in elapsed time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from dateparser.date import DateDataParser

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.bot.schedule.timing import wall_time, wall_to_epoch
from mnemobot.config.zones import zone_of

# How far the second reading's "now" is moved: not a whole number of minutes of any unit
# people use, so a fixed time of day never moves by exactly this much.
_PROBE_SHIFT = timedelta(hours=1, minutes=37)
# A one-shot task further away than this is surely a misreading.
MAX_AHEAD_DAYS = 5 * 366

_BARE_HOUR = re.compile(
    r"(?P<word>\b(?:at|@|um|om|à|a las|alle|kl\.?|klockan)\s+|(?<!\w)в\s+)"
    r"(?P<hour>\d{1,2})(?![\d:.,])"
    r"(?:\s*(?P<unit>h|uhr|uur|heures?|hours?|час(?:а|ов)?)\b)?"
    r"(?!\s*(?:am|pm|a\.m\.|p\.m\.|minutes?|mins?|days?|weeks?|months?|years?)\b)",
    re.IGNORECASE,
)

_INTERVAL = re.compile(
    r"^\s*(?:every\s+)?(?P<count>\d+(?:\.\d+)?)?\s*"
    r"(?P<unit>m|min|mins|minutes?|h|hrs?|hours?|d|days?|w|weeks?)\s*$",
    re.IGNORECASE,
)
_INTERVAL_WORDS = {"hourly": (1.0, "hour"), "daily": (1.0, "day"), "weekly": (1.0, "week")}


class WhenError(ValueError):
    """The words could not be read as a future time; the message says what to give."""


def with_clock_times(text: str) -> str:
    """A bare hour after "at"-like words as a clock time: "at 9" -> "at 09:00"."""

    def clock(match: re.Match[str]) -> str:
        hour = int(match["hour"])
        if hour > 23:
            return match[0]
        return f"{match['word']}{hour:02d}:00"

    return _BARE_HOUR.sub(clock, text)


def _read(text: str, base: datetime) -> datetime | None:
    parser = DateDataParser(
        settings={
            "RELATIVE_BASE": base,
            "PREFER_DATES_FROM": "future",
            "RETURN_AS_TIMEZONE_AWARE": False,
        }
    )
    found = parser.get_date_data(text).date_obj
    return found.replace(tzinfo=None) if found is not None else None


def parse_when(text: str, now: float, zone_name: str) -> float:
    """The epoch time the words name, read in `zone_name` at `now`; WhenError if none or past."""
    zone = zone_of(zone_name)
    words = text.strip()
    if not words:
        raise WhenError("no time given; say when, e.g. 'tomorrow 09:00' or 'in 2 hours'")
    iso = _iso(words)
    if iso is not None:
        at = iso.timestamp() if iso.tzinfo is not None else wall_to_epoch(iso, zone)
    else:
        normalized = with_clock_times(words)
        base = wall_time(now, zone)
        found = _read(normalized, base)
        if found is None:
            raise WhenError(
                f"could not read {words!r} as a time; give a date and clock time such as "
                "'2026-11-27 09:00', 'tomorrow 09:00' or 'in 2 hours'"
            )
        moved = _read(normalized, base + _PROBE_SHIFT)
        offset = found - base
        if moved is not None and moved - (base + _PROBE_SHIFT) == offset:
            # A duration from now ("in 2 hours", "in 3 days", "tomorrow").
            whole_days = offset.total_seconds() % SECONDS_PER_DAY == 0
            at = wall_to_epoch(found, zone) if whole_days else now + offset.total_seconds()
        else:
            at = wall_to_epoch(found, zone)
    if at <= now:
        raise WhenError(
            f"{words!r} is in the past (it is now {wall_time(now, zone):%Y-%m-%d %H:%M} "
            f"in {zone_name}); give a future time"
        )
    if at - now > MAX_AHEAD_DAYS * SECONDS_PER_DAY:
        raise WhenError(f"{words!r} is more than {MAX_AHEAD_DAYS // 366} years ahead")
    return at


def _iso(text: str) -> datetime | None:
    if not re.match(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", text):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Interval:
    """An "every ..." interval: elapsed `seconds`, or whole `days` (same local time)."""

    seconds: float | None = None
    days: int | None = None

    @property
    def approximate_seconds(self) -> float:
        return self.seconds if self.seconds is not None else float(self.days or 0) * SECONDS_PER_DAY


def parse_interval(text: str) -> Interval:
    """ "2 hours", "30 minutes", "3 days", "1 week", "daily" -> Interval; ValueError if not."""
    words = text.strip().lower()
    if words.startswith("every "):
        words = words[6:]
    if words in _INTERVAL_WORDS:
        count, unit = _INTERVAL_WORDS[words]
        return _interval(count, unit)
    match = _INTERVAL.match(words)
    if match is None:
        raise ValueError(
            f"could not read {text!r} as an interval; give a number and a unit in English, "
            "e.g. '30 minutes', '2 hours', '3 days', '1 week'"
        )
    count = float(match["count"]) if match["count"] else 1.0
    if count <= 0:
        raise ValueError("an interval must be longer than zero")
    return _interval(count, match["unit"].lower())


def _interval(count: float, unit: str) -> Interval:
    if unit.startswith(("d", "w")):
        days = count * (7 if unit.startswith("w") else 1)
        if days != int(days):
            return Interval(seconds=days * SECONDS_PER_DAY)
        return Interval(days=int(days))
    size = 3_600 if unit.startswith("h") else 60
    return Interval(seconds=count * size)
