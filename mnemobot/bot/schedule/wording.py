"""Scheduled times in the words of the person who set them: pure functions.

The lines a user reads to check what was scheduled (the confirmation, `/reminders`, the
reminder itself) carry the time in that person's language when Telegram tells us one
(`language_code` of the sender) and it is not English: the date and the interval through
Babel's CLDR data ("пт, 27 ноября, 09:00", "11月27日周五 09:00"), how often it repeats as
the catalogs say it ("alle 3 Tage um 09:00", `repeat_phrases`; CLDR's "3 jours · 09:00" in
a language without a catalog), the labels as symbols (⏰ reminder, 📋 task, 💓 heartbeat,
🔁 repeats) so no sentence of ours is half in one language. English (and any language Babel
does not know) keeps the English lines.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.bot.i18n import words_for
from mnemobot.bot.schedule.cron_words import (
    CronShape,
    Daily,
    Every,
    Monthly,
    MonthlyWeekday,
    read_cron,
    weekday_groups,
)
from mnemobot.bot.schedule.repeat_phrases import cron_phrase, every_days, every_seconds
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


def local_soon(ts: float, zone_name: str, now: float, locale: Locale) -> str:
    """ "15:00" later on the day of `now`, "пн 08:30" within the week, else "пн, 7 дек.,
    08:30" (the year too when not this year's): when a repeat comes next, said short."""
    from babel.dates import format_skeleton

    zone = zone_of(zone_name)
    local = datetime.fromtimestamp(ts, zone)
    today = datetime.fromtimestamp(now, zone).date()
    if local.date() == today:
        return local_clock(local, locale)
    if (local.date() - today).days < 7:
        return format_skeleton("EHm", local, locale=locale)
    date = format_skeleton("MMMEd" if local.year == today.year else "yMMMEd", local, locale=locale)
    return f"{date}, {local_clock(local, locale)}"


def local_clock(local: datetime, locale: Locale) -> str:
    from babel.dates import format_skeleton

    return format_skeleton("Hm", local, locale=locale)


def local_repeat(schedule: Schedule, zone_name: str, locale: Locale) -> str:
    """ " 🔁 каждые 3 дня в 09:00" for a recurring schedule, " 🔁 по будням в 08:00" for the
    common shapes of cron, the expression itself for others (" 🔁 0 8 * * 1#2"), "" for a
    one-shot. A language without a catalog reads CLDR's words only (`local_cron`)."""
    if schedule.type == "once":
        return ""
    words = words_for(str(locale))
    if schedule.type == "cron":
        assert schedule.cron is not None
        shape = read_cron(schedule.cron)
        if shape is None:
            said = schedule.cron
        elif words.translated:
            said = cron_phrase(shape, words, locale)
        else:
            said = local_cron(shape, locale)
        return f" {REPEAT_SYMBOL} {said}"
    if schedule.seconds is not None:
        if words.translated:
            return f" {REPEAT_SYMBOL} {every_seconds(schedule.seconds, words)}"
        return f" {REPEAT_SYMBOL} {_interval(schedule.seconds, locale)}"
    assert schedule.days is not None and schedule.anchor is not None
    local = datetime.fromtimestamp(schedule.anchor, zone_of(zone_name))
    if words.translated:
        clock = (local.hour, local.minute)
        return f" {REPEAT_SYMBOL} {every_days(schedule.days, clock, words, locale)}"
    from babel.units import format_unit

    weeks, rest = divmod(schedule.days, 7)
    unit, count = ("duration-week", weeks) if rest == 0 else ("duration-day", schedule.days)
    at = local_clock(local, locale)
    return f" {REPEAT_SYMBOL} {format_unit(count, unit, locale=locale)} · {at}"


def local_cron(shape: CronShape, locale: Locale) -> str:
    """In a language without a catalog: "1 jour · 08:30", "lun.–ven. · 08:00", "1 mois ·
    09:00" (the first due date is shown beside it), "15 minutes": CLDR's words only, no
    sentence of ours."""
    from babel.units import format_unit

    if isinstance(shape, Every):
        return _interval(shape.seconds, locale)
    if isinstance(shape, Daily):
        how_often = str(format_unit(1, "duration-day", locale=locale))
    elif isinstance(shape, Monthly | MonthlyWeekday):
        how_often = str(format_unit(1, "duration-month", locale=locale))
    else:
        # The abbreviations the date beside it uses ("lun. 27 nov.").
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
    """ "✅ #1 ⏰ пт, 27 ноября, 09:00 (Europe/Moscow) 🔁 каждый день в 09:00: позвонить"."""
    due, zone_name, now = when
    said = f": {text}" if text else ""
    return (
        f"✅ #{number} {KIND_SYMBOLS[kind]} {local_when(due, zone_name, now, locale)}"
        f"{local_repeat(schedule, zone_name, locale)}{said}"
    )
