"""Scheduled times in the words of the person who set them: pure functions.

The lines a user reads to check what was scheduled (the confirmation, `/reminders`, the
reminder itself) carry the time in that person's language when Telegram tells us one
(`language_code` of the sender) and it is not English: the date and the interval through
Babel's CLDR data ("пт, 27 ноября, 09:00", "11月27日周五 09:00", "3 Tage"), the labels as
symbols (⏰ reminder, 📋 task, 💓 heartbeat, 🔁 repeats) so no sentence of ours is half in one
language. English (and any language Babel does not know) keeps the English lines.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.bot.schedule.cron_words import (
    CronShape,
    Daily,
    Every,
    Monthly,
    read_cron,
    weekday_groups,
)
from mnemobot.bot.schedule.tasks import Schedule, TaskKind
from mnemobot.config.zones import zone_of

if TYPE_CHECKING:
    # Babel is imported when a chat first needs it: most bots never word a time but in
    # English, and its import is a noticeable part of start-up.
    from babel import Locale

KIND_SYMBOLS: dict[TaskKind, str] = {"reminder": "⏰", "task": "📋", "heartbeat": "💓"}
REPEAT_SYMBOL = "🔁"
PAUSED_SYMBOL = "⏸"
DONE_SYMBOL = "✓"
# Interval units from the largest; an interval is said in the largest that divides it.
_SECOND_UNITS = (
    ("duration-day", SECONDS_PER_DAY),
    ("duration-hour", 3_600),
    ("duration-minute", 60),
)


@lru_cache(maxsize=64)
def locale_for(language: str | None) -> Locale | None:
    """The locale to word times in for a Telegram `language_code` ("ru", "pt-br",
    "zh-hans"); None for English, no language, or one Babel does not know."""
    if not language:
        return None
    from babel import Locale, UnknownLocaleError

    try:
        locale = Locale.parse(language.replace("_", "-"), sep="-")
    except (ValueError, UnknownLocaleError):
        return None
    return None if locale.language == "en" else locale


def local_when(ts: float, zone_name: str, now: float | None, locale: Locale) -> str:
    """ "пт, 27 ноября, 09:00 (Europe/Moscow)"; the year too when it is not this year's."""
    from babel.dates import format_skeleton

    zone = zone_of(zone_name)
    local = datetime.fromtimestamp(ts, zone)
    other_year = now is not None and datetime.fromtimestamp(now, zone).year != local.year
    date = format_skeleton("yMMMMEd" if other_year else "MMMMEd", local, locale=locale)
    return f"{date}, {local_clock(local, locale)} ({zone_name})"


def local_clock(local: datetime, locale: Locale) -> str:
    from babel.dates import format_skeleton

    return format_skeleton("Hm", local, locale=locale)


def local_repeat(schedule: Schedule, zone_name: str, locale: Locale) -> str:
    """ " 🔁 3 дня · 09:00" for a recurring schedule (the interval, and the local time for
    whole days), " 🔁 пн–пт · 08:00" for the common shapes of cron, the expression itself
    for others (" 🔁 0 8 * * 1#2"), "" for a one-shot."""
    if schedule.type == "once":
        return ""
    if schedule.type == "cron":
        assert schedule.cron is not None
        shape = read_cron(schedule.cron)
        said = schedule.cron if shape is None else local_cron(shape, locale)
        return f" {REPEAT_SYMBOL} {said}"
    from babel.units import format_unit

    if schedule.seconds is not None:
        return f" {REPEAT_SYMBOL} {_interval(schedule.seconds, locale)}"
    assert schedule.days is not None and schedule.anchor is not None
    weeks, rest = divmod(schedule.days, 7)
    unit, count = ("duration-week", weeks) if rest == 0 else ("duration-day", schedule.days)
    at = local_clock(datetime.fromtimestamp(schedule.anchor, zone_of(zone_name)), locale)
    return f" {REPEAT_SYMBOL} {format_unit(count, unit, locale=locale)} · {at}"


def local_cron(shape: CronShape, locale: Locale) -> str:
    """ "1 день · 08:30", "пн–пт · 08:00", "пн, ср, пт · 08:00", "1 месяц · 09:00" (the first
    due date is shown beside it), "15 минут": CLDR's words only, no sentence of ours."""
    from babel.units import format_unit

    if isinstance(shape, Every):
        return _interval(shape.seconds, locale)
    if isinstance(shape, Daily):
        how_often = str(format_unit(1, "duration-day", locale=locale))
    elif isinstance(shape, Monthly):
        how_often = str(format_unit(1, "duration-month", locale=locale))
    else:
        # The abbreviations the date beside it uses ("пт, 27 ноября", "Fr., 27. November").
        names = locale.days["format"]["abbreviated"]
        how_often = ", ".join(
            names[first] if first == last else f"{names[first]}–{names[last]}"
            for first, last in weekday_groups(shape.days)
        )
    clocks = ", ".join(local_clock(datetime(2000, 1, 1, *clock), locale) for clock in shape.times)
    return f"{how_often} · {clocks}"


def _interval(seconds: float, locale: Locale) -> str:
    from babel.units import format_unit

    for unit, size in _SECOND_UNITS:
        if seconds >= size and seconds % size == 0:
            return str(format_unit(int(seconds // size), unit, locale=locale))
    return str(format_unit(round(seconds), "duration-second", locale=locale))


def local_confirmation(
    number: int,
    kind: TaskKind,
    text: str,
    when: tuple[float, str, float],
    schedule: Schedule,
    locale: Locale,
) -> str:
    """ "✅ #1 ⏰ пт, 27 ноября, 09:00 (Europe/Moscow) 🔁 1 день · 09:00: позвонить"."""
    due, zone_name, now = when
    said = f": {text}" if text else ""
    return (
        f"✅ #{number} {KIND_SYMBOLS[kind]} {local_when(due, zone_name, now, locale)}"
        f"{local_repeat(schedule, zone_name, locale)}{said}"
    )
