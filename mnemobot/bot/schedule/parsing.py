"""Reading the times people give: "tomorrow at 9", "in 2 hours", "27 November 09:00", "every 3
days", a cron expression. Pure functions; `dateparser` reads the words, in any language it
knows, relative to the chat's current local time.

Days and dates it misreads or does not read ("nächsten Freitag", "am 5.12.", "12月5日")
are ISO dates first (`date_words`). Two more things dateparser gets wrong are settled here:

- A bare hour after a word like "at" ("tomorrow at 9", "um 9 Uhr", "в 9"), or with a word
  that makes it an hour ("9 Uhr", "9点"), is read as a day or a month, or dropped; it is
  rewritten as a clock time ("at 09:00") first. A word for the evening, the night or the
  morning ("tonight", "вечером", "abends", "下午", "утра", "früh") decides which half of
  the day the hour is in, and is then dropped ("tonight" leaves "today"; "tonight at 1",
  after the midnight that follows, "tomorrow"): dateparser reads the day-part words
  alone, but not with an hour. Small Chinese numbers before a unit ("两小时后")
  and "half an hour" are given as numbers.
- dateparser adds durations to the wall-clock time, so "in 2 hours" on the night clocks go
  forward would be one real hour. Whether the words are a duration from now is found by
  reading them again against a later "now": a duration moves with it. A duration of whole
  days keeps the local time of day ("in 3 days"); any other is counted in elapsed time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from dateparser.date import DateDataParser

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.bot.schedule.date_words import dates_as_iso
from mnemobot.bot.schedule.english_clock import english_clock_words
from mnemobot.bot.schedule.german_clock import german_clock_words
from mnemobot.bot.schedule.month_words import NoSuchDay
from mnemobot.bot.schedule.russian_clock import russian_clock_words
from mnemobot.bot.schedule.spanish_clock import spanish_clock_words
from mnemobot.bot.schedule.time_words import (
    about_as_at,
    day_words_read,
    hour_after_day_word,
    minutes_as_clock,
    next_day_words,
    numbers_as_digits,
)
from mnemobot.bot.schedule.timing import wall_time, wall_to_epoch
from mnemobot.config.zones import zone_of

# How far the second reading's "now" is moved: not a whole number of minutes of any unit
# people use, so a fixed time of day never moves by exactly this much.
_PROBE_SHIFT = timedelta(hours=1, minutes=37)
# A one-shot task further away than this is surely a misreading.
MAX_AHEAD_DAYS = 5 * 366
# The words of a time, as the model passes them: "next Tuesday at 9 in the evening" is 32
# characters; 9,000 of them took dateparser 1.7 s (and came back whole in the error).
MAX_WHEN_CHARS = 200

_BARE_HOUR = re.compile(
    r"(?P<word>\b(?:at|@|um|om|à|a las|a la|alle|kl\.?|klockan)\s+|(?<!\w)в\s+)?"
    r"(?<![\d:.,])(?P<hour>\d{1,2})(?::(?P<clock_minute>\d{2}))?(?![\d:.,])"
    r"(?:\s*(?P<unit>(?:h|uhr|uur|heures?|hours?|час(?:а|ов)?)\b|点)"
    r"(?:\s*(?P<half>半)|\s*(?P<minute>\d{1,2})\s*分?)?)?"
    r"(?:\s*(?P<half_day>[ap])\.?m\b\.?)?"
    r"(?!\s*(?:minutes?|mins?|days?|weeks?|months?|years?)\b)",
    re.IGNORECASE,
)
# A clock time with nothing else: dateparser read "at 00:00" at 00:30 as the 1st of the
# month, and "at 8:30" (as "at half past eight" is read) at 10:00 as past; the next such
# time is found here instead.
_ONLY_A_CLOCK = re.compile(
    r"^(?:(?:at|@|um|om|à|a las|alle|kl\.?|klockan|в)\s+)?(?P<hour>\d{1,2}):(?P<minute>\d{2})$",
    re.IGNORECASE,
)
# Units that make a number an hour of the clock with no "at" before it ("morgen 9 Uhr").
_CLOCK_UNITS = ("uhr", "点")

# Which half of the day a part-of-day word puts an hour in. MORNING: as said. AFTERNOON:
# 1 to 11 after noon ("3 in the afternoon" is 15:00). EVENING: 1 to 11 after noon, 0 and
# 12 the midnight that follows ("this evening at 4" is 16:00). NIGHT: 5 to 11 after
# noon, and 0, 12 and 1 to 4 after the midnight that follows ("tonight at 1" is 01:00 of
# the next day, "tonight at 12" its 00:00).
MORNING, AFTERNOON, EVENING, NIGHT = "morning", "afternoon", "evening", "night"
# The last hour a NIGHT word puts after midnight: "tonight at 4" is 04:00, "at 5" 17:00.
LAST_NIGHT_HOUR = 4
# Before this hour "tonight" is the night already begun ("tonight at 1" said at 00:30 is
# in half an hour); from it on, the coming one (said at 04:55, up early, it is the next
# night). Chosen, not measured.
SMALL_HOURS_END = 3


@dataclass(frozen=True, slots=True)
class DayPart:
    """A part-of-day word, what is left in its place once the hour is a clock time, and
    what is left when the hour is after the midnight that follows (the next day's word)."""

    pattern: re.Pattern[str]
    rest: str
    kind: str
    rest_after_midnight: str


def _day_part(pattern: str, rest: str, kind: str, after_midnight: str | None = None) -> DayPart:
    return DayPart(
        re.compile(pattern, re.IGNORECASE),
        rest,
        kind,
        rest if after_midnight is None else after_midnight,
    )


# The first that a text holds decides; the words with a day come before those without.
_DAY_PARTS: tuple[DayPart, ...] = (
    _day_part(r"\btomorrow night\b", "tomorrow", NIGHT, "day after tomorrow"),
    _day_part(r"\btomorrow evening\b", "tomorrow", EVENING, "day after tomorrow"),
    _day_part(r"\btonight\b", "today", NIGHT, "tomorrow"),
    _day_part(r"\bthis evening\b", "today", EVENING, "tomorrow"),
    _day_part(r"\bthis afternoon\b", "today", AFTERNOON),
    _day_part(r"\bthis morning\b", "today", MORNING),
    _day_part(r"\b(?:at |in the )?night\b", "", NIGHT),
    _day_part(r"\b(?:in the )?evening\b", "", EVENING),
    _day_part(r"\b(?:in the )?afternoon\b", "", AFTERNOON),
    _day_part(r"\b(?:in the )?morning\b", "", MORNING),
    _day_part(r"\bmorgen nacht\b", "morgen", NIGHT, "übermorgen"),
    _day_part(r"\bmorgen abend\b", "morgen", EVENING, "übermorgen"),
    _day_part(r"\bheute nacht\b", "heute", NIGHT, "morgen"),
    _day_part(r"\bheute abend\b", "heute", EVENING, "morgen"),
    _day_part(r"\bheute nachmittag\b", "heute", AFTERNOON),
    _day_part(r"\bnachts\b|\bin der nacht\b", "", NIGHT),
    _day_part(r"\b(?:am )?abends?\b", "", EVENING),
    _day_part(r"\b(?:am )?nachmittags?\b", "", AFTERNOON),
    _day_part(r"\bheute (?:früh|morgen)\b", "heute", MORNING),
    _day_part(r"\b(?:früh|morgens)\b", "", MORNING),
    _day_part(r"\bзавтра ночью", "завтра", NIGHT, "послезавтра"),
    _day_part(r"\bзавтра вечером", "завтра", EVENING, "послезавтра"),
    _day_part(r"\bсегодня ночью", "сегодня", NIGHT, "завтра"),
    _day_part(r"\bсегодня вечером", "сегодня", EVENING, "завтра"),
    _day_part(r"\b(?:ночью|ночи)\b", "", NIGHT),
    _day_part(r"\b(?:вечером|вечера)\b", "", EVENING),
    # "в 3 (часа) дня" is 15:00; "через 2 дня" two days. (Once clocked: "в 15:00 дня".)
    _day_part(r"(?<=в )(\d{1,2}(?::\d{2})?)(?:\s+час(?:а|ов)?)?\s+дня\b", r"\1", AFTERNOON),
    _day_part(r"\b(?:днём|днем)\b", "", AFTERNOON),
    _day_part(r"\b(?:утром|утра)\b", "", MORNING),
    _day_part(r"\bpasado mañana (?:por|en) la noche\b", "pasado mañana", NIGHT, "en 3 días"),
    _day_part(r"\bmañana (?:por|en) la noche\b", "mañana", NIGHT, "en 2 días"),
    _day_part(r"\besta noche\b", "hoy", NIGHT, "mañana"),
    _day_part(r"\besta tarde\b", "hoy", AFTERNOON),
    _day_part(r"\b(?:de|por) la noche\b", "", NIGHT),
    _day_part(r"\b(?:de|por) la tarde\b", "", AFTERNOON),
    _day_part(r"\besta mañana\b", "hoy", MORNING),
    _day_part(r"\b(?:de|por) la mañana\b", "", MORNING),
    _day_part(r"今晚", "今天", NIGHT, "明天"),
    _day_part(r"明晚", "明天", NIGHT, "后天"),
    # 晚上 runs on into the night: "晚上1点" is 01:00 (下午 is the afternoon's).
    _day_part(r"晚上|夜里|半夜", "", NIGHT),
    _day_part(r"傍晚", "", EVENING),
    _day_part(r"下午", "", AFTERNOON),
    _day_part(r"上午|早上|早晨|凌晨", "", MORNING),
)

_INTERVAL = re.compile(
    r"^\s*(?:every\s+)?(?P<count>\d+(?:\.\d+)?)?\s*"
    r"(?P<unit>m|min|mins|minutes?|h|hrs?|hours?|d|days?|w|weeks?)\s*$",
    re.IGNORECASE,
)
_INTERVAL_WORDS = {"hourly": (1.0, "hour"), "daily": (1.0, "day"), "weekly": (1.0, "week")}


class WhenError(ValueError):
    """The words could not be read as a future time; the message says what to give."""


def with_clock_times(text: str, *, small_hours: bool = False) -> str:
    """A bare hour as a clock time in the half of the day the words say: "at 9" ->
    "at 09:00", "tonight at 8" -> "today at 20:00", "tonight at 1" -> "tomorrow at
    01:00", "明天上午9点" -> "明天09:00". `small_hours`: it is just past midnight now
    (before SMALL_HOURS_END), so "tonight" is the night already begun: "tonight at 1" is
    "today at 01:00"."""
    said = russian_clock_words(german_clock_words(spanish_clock_words(text)))
    said = english_clock_words(said)
    text, midnight = minutes_as_clock(numbers_as_digits(said))
    text = hour_after_day_word(about_as_at(text))
    part = next((part for part in _DAY_PARTS if part.pattern.search(text) is not None), None)
    kind = NIGHT if midnight else part.kind if part is not None else MORNING
    after_midnight = False
    clock_read = False

    def clock(match: re.Match[str]) -> str:
        nonlocal after_midnight, clock_read
        hour = int(match["hour"])
        unit = (match["unit"] or "").lower()
        clock_time = match["clock_minute"] is not None
        half_day = (match["half_day"] or "").lower()
        if hour > 23 or (
            match["word"] is None and unit not in _CLOCK_UNITS and not clock_time and not half_day
        ):
            return match[0]
        if half_day:
            if not 1 <= hour <= 12:
                return match[0]
            hour = hour % 12 + (12 if half_day == "p" else 0)
            after_midnight = kind in (NIGHT, EVENING) and hour <= LAST_NIGHT_HOUR
        elif clock_time and (kind == MORNING or unit):
            clock_read = True
            return match[0]  # "at 09:30", as it is
        elif (kind == NIGHT and (hour in (0, 12) or 1 <= hour <= LAST_NIGHT_HOUR)) or (
            kind == EVENING and hour in (0, 12)
        ):
            hour %= 12
            after_midnight = True
        elif kind != MORNING and 1 <= hour <= 11:
            hour += 12
        minute = 30 if match["half"] else int(match["clock_minute"] or match["minute"] or 0)
        if minute > 59:
            return match[0]
        # "a la 1" is Spanish for one o'clock only: "a las 13:00" for any clock time.
        word = "a las " if (match["word"] or "").lower() == "a la " else match["word"] or ""
        clock_read = True
        return f"{word}{hour:02d}:{minute:02d}"

    clocked = _BARE_HOUR.sub(clock, text)
    if not clock_read:
        # No hour: dateparser reads "tonight" or "this evening" alone. (A clock time read,
        # changed or not, takes its day-part word out: "в 8:45 утра", "в 12:30 дня".)
        return text
    next_day = after_midnight and not small_hours
    for other in _DAY_PARTS:
        rest = other.rest_after_midnight if next_day and other is part else other.rest
        clocked = other.pattern.sub(rest, clocked)
    if next_day and (part is None or part.rest == part.rest_after_midnight):
        # The day is a word of its own ("сегодня в 2 ночи"): the next one.
        clocked = next_day_words(clocked)
    return re.sub(r"\s{2,}", " ", clocked).strip()


# Units of elapsed time: a duration in them is not a number of calendar days.
_ELAPSED_UNITS = re.compile(
    r"hours?|minutes?|\bmins?\b|час|минут|stunden?|minuten?|horas?|minutos?|小时|分钟|钟头",
    re.IGNORECASE,
)


def _next_clock_time(normalized: str, base: datetime) -> datetime | None:
    """The next local `base`-relative time of a text that is only a clock time ("at
    00:00"); None for any other text."""
    match = _ONLY_A_CLOCK.match(normalized)
    if match is None or int(match["hour"]) > 23 or int(match["minute"]) > 59:
        return None
    at = base.replace(hour=int(match["hour"]), minute=int(match["minute"]), second=0, microsecond=0)
    return at if at > base else at + timedelta(days=1)


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
    if len(words) > MAX_WHEN_CHARS:
        raise WhenError(
            f"the time given is {len(words):,} characters long; say when in a few words, "
            "e.g. 'tomorrow 09:00' or 'in 2 hours'"
        )
    iso = _iso(words)
    if iso is not None:
        at = iso.timestamp() if iso.tzinfo is not None else wall_to_epoch(iso, zone)
    else:
        base = wall_time(now, zone)
        dated = _dated(words, base)
        at = _read_words(words, now, zone, dated)
        if at <= now:
            # "The last day of the month at 9", said on it at 10: next month's.
            later = _dated(words, base, month_from=base.date() + timedelta(days=1))
            if later != dated:
                at = _read_words(words, now, zone, later)
    if at <= now:
        raise WhenError(
            f"{words!r} is in the past (it is now {wall_time(now, zone):%Y-%m-%d %H:%M} "
            f"in {zone_name}); give a future time"
        )
    if at - now > MAX_AHEAD_DAYS * SECONDS_PER_DAY:
        raise WhenError(f"{words!r} is more than {MAX_AHEAD_DAYS // 366} years ahead")
    return at


def _dated(words: str, base: datetime, month_from: date | None = None) -> str | None:
    """The words with their days as ISO dates (`dates_as_iso`); None for a day the month
    has not ("the 5th Monday of December": no such day, so no time)."""
    try:
        return dates_as_iso(words, base, month_from)
    except NoSuchDay:
        return None


def _read_words(words: str, now: float, zone: ZoneInfo, dated: str | None) -> float:
    """The epoch time of the words, `dated` their days as ISO dates; WhenError if none."""
    base = wall_time(now, zone)
    clocked = with_clock_times(dated, small_hours=base.hour < SMALL_HOURS_END) if dated else ""
    normalized = day_words_read(clocked)
    found = (_next_clock_time(normalized, base) or _read(normalized, base)) if dated else None
    if found is None:
        raise WhenError(
            f"could not read {words!r} as a time; give a date and clock time such as "
            "'2026-11-27 09:00', 'tomorrow 09:00' or 'in 2 hours'"
        )
    moved = _read(normalized, base + _PROBE_SHIFT)
    offset = found - base
    if moved is not None and moved - (base + _PROBE_SHIFT) == offset:
        # A duration from now ("in 2 hours", "in 3 days", "tomorrow").
        # (Not "in 24 hours": hours said are elapsed, whatever the clocks do.)
        whole_days = offset.total_seconds() % SECONDS_PER_DAY == 0 and not (
            _ELAPSED_UNITS.search(normalized)
        )
        return wall_to_epoch(found, zone) if whole_days else now + offset.total_seconds()
    return wall_to_epoch(found, zone)


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
