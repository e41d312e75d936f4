"""How often a schedule repeats, as a sentence of the reader's language: pure functions.

For the languages the bot has a catalog for (`i18n.TRANSLATED`): "каждый день в 08:30",
"täglich um 08:30", "todos los días a las 8:30", "每天 08:30" — never "1 день · 08:30",
which reads as a duration, not a repeat. The phrases are the catalogs' (a native speaker's
"every Wednesday" has its own gender in Russian: "каждую среду"); the clocks, the day
abbreviations and the lists are CLDR's (Babel), as the dates beside them are.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.bot.i18n import N_, Words
from mnemobot.bot.schedule.cron_words import (
    Clock,
    CronShape,
    Daily,
    Every,
    Monthly,
    MonthlyWeekday,
    weekday_groups,
)
from mnemobot.bot.schedule.month_words import LAST

if TYPE_CHECKING:
    from babel import Locale

# Interval units from the largest; an interval is said in the largest that divides it.
_UNITS = (("day", SECONDS_PER_DAY), ("hour", 3_600), ("minute", 60))
# Every one of a unit: "täglich", "каждую минуту", not "every 1 day".
_EVERY_ONE = {
    "week": N_("every week"),
    "day": N_("every day"),
    "hour": N_("every hour"),
    "minute": N_("every minute"),
    "second": N_("every second"),
}
# One day of every week, 0 = Monday: a phrase each, as the day's gender takes its own
# "every" in some languages ("каждый понедельник", "каждую среду", "каждое воскресенье").
_EVERY_WEEKDAY = (
    N_("every Monday"),
    N_("every Tuesday"),
    N_("every Wednesday"),
    N_("every Thursday"),
    N_("every Friday"),
    N_("every Saturday"),
    N_("every Sunday"),
)
# The nth (first to fifth, then the last) weekday of every month, Monday first: a phrase
# each, as the ordinal takes the day's gender in some languages ("в первый понедельник",
# "в первую среду", "в первое воскресенье").
_NTH_WEEKDAY_OF_EVERY_MONTH = (
    (
        N_("on the first Monday of every month"),
        N_("on the first Tuesday of every month"),
        N_("on the first Wednesday of every month"),
        N_("on the first Thursday of every month"),
        N_("on the first Friday of every month"),
        N_("on the first Saturday of every month"),
        N_("on the first Sunday of every month"),
    ),
    (
        N_("on the second Monday of every month"),
        N_("on the second Tuesday of every month"),
        N_("on the second Wednesday of every month"),
        N_("on the second Thursday of every month"),
        N_("on the second Friday of every month"),
        N_("on the second Saturday of every month"),
        N_("on the second Sunday of every month"),
    ),
    (
        N_("on the third Monday of every month"),
        N_("on the third Tuesday of every month"),
        N_("on the third Wednesday of every month"),
        N_("on the third Thursday of every month"),
        N_("on the third Friday of every month"),
        N_("on the third Saturday of every month"),
        N_("on the third Sunday of every month"),
    ),
    (
        N_("on the fourth Monday of every month"),
        N_("on the fourth Tuesday of every month"),
        N_("on the fourth Wednesday of every month"),
        N_("on the fourth Thursday of every month"),
        N_("on the fourth Friday of every month"),
        N_("on the fourth Saturday of every month"),
        N_("on the fourth Sunday of every month"),
    ),
    (
        N_("on the fifth Monday of every month"),
        N_("on the fifth Tuesday of every month"),
        N_("on the fifth Wednesday of every month"),
        N_("on the fifth Thursday of every month"),
        N_("on the fifth Friday of every month"),
        N_("on the fifth Saturday of every month"),
        N_("on the fifth Sunday of every month"),
    ),
    (
        N_("on the last Monday of every month"),
        N_("on the last Tuesday of every month"),
        N_("on the last Wednesday of every month"),
        N_("on the last Thursday of every month"),
        N_("on the last Friday of every month"),
        N_("on the last Saturday of every month"),
        N_("on the last Sunday of every month"),
    ),
)
_WORKDAYS = (0, 1, 2, 3, 4)
_WEEKEND = (5, 6)


def every_count(count: int, unit: str, words: Words) -> str:
    """ "every day", "every 3 days" ("каждые 3 дня", "каждые 5 дней", "каждый 21 день")."""
    if count == 1:
        return words.gettext(_EVERY_ONE[unit])
    if unit == "week":
        return words.ngettext("every {count} week", "every {count} weeks", count)
    if unit == "day":
        return words.ngettext("every {count} day", "every {count} days", count)
    if unit == "hour":
        return words.ngettext("every {count} hour", "every {count} hours", count)
    if unit == "minute":
        return words.ngettext("every {count} minute", "every {count} minutes", count)
    return words.ngettext("every {count} second", "every {count} seconds", count)


def every_seconds(seconds: float, words: Words) -> str:
    """ "every 2 hours", in the largest whole unit."""
    for unit, size in _UNITS:
        if seconds >= size and seconds % size == 0:
            return every_count(int(seconds // size), unit, words)
    return every_count(round(seconds), "second", words)


def every_days(days: int, clock: Clock, words: Words, locale: Locale) -> str:
    """ "every 3 days at 09:00", "every 2 weeks at 09:00"."""
    weeks, rest = divmod(days, 7)
    how_often = every_count(weeks, "week", words) if rest == 0 else every_count(days, "day", words)
    return at_clocks(how_often, (clock,), words, locale)


def cron_phrase(shape: CronShape, words: Words, locale: Locale) -> str:
    """ "every day at 08:30", "on weekdays at 08:00", "every Monday at 08:00", "Mon, Wed
    and Fri at 08:00", "on day 1 of every month at 09:00", "on the first Monday of every
    month at 09:00", "on the last day of every month at 09:00", "every 15 minutes"."""
    if isinstance(shape, Every):
        return every_seconds(shape.seconds, words)
    if isinstance(shape, Daily):
        how_often = words.gettext(_EVERY_ONE["day"])
    elif isinstance(shape, Monthly) and shape.day == LAST:
        how_often = words.gettext("on the last day of every month")
    elif isinstance(shape, Monthly):
        how_often = words.gettext("on day {day} of every month", day=shape.day)
    elif isinstance(shape, MonthlyWeekday):
        nth = len(_NTH_WEEKDAY_OF_EVERY_MONTH) - 1 if shape.nth == LAST else shape.nth - 1
        how_often = words.gettext(_NTH_WEEKDAY_OF_EVERY_MONTH[nth][shape.weekday])
    elif shape.days == _WORKDAYS:
        how_often = words.gettext("on weekdays")
    elif shape.days == _WEEKEND:
        how_often = words.gettext("at weekends")
    elif len(shape.days) == 1:
        how_often = words.gettext(_EVERY_WEEKDAY[shape.days[0]])
    else:
        from babel.lists import format_list

        # The abbreviations the date beside it uses ("пн, ср и пт", "Mo., Mi. und Fr.").
        names = locale.days["format"]["abbreviated"]
        how_often = format_list(
            [
                names[first] if first == last else f"{names[first]}–{names[last]}"
                for first, last in weekday_groups(shape.days)
            ],
            locale=locale,
        )
    said = at_clocks(how_often, shape.times, words, locale)
    if isinstance(shape, Monthly) and shape.last_in_shorter:
        return words.gettext("{repeat} (in shorter months, on the last day)", repeat=said)
    return said


def at_clocks(how_often: str, clocks: tuple[Clock, ...], words: Words, locale: Locale) -> str:
    """ "every day at 09:00 and 18:00" ("todos los días a las 9:00 y 18:00")."""
    from babel.dates import format_skeleton
    from babel.lists import format_list

    said = [format_skeleton("Hm", datetime(2000, 1, 1, *clock), locale=locale) for clock in clocks]
    # A plural on the first hour, not a count: Spanish says "a la 1:00" but "a las 9:00".
    return words.ngettext(
        "{how_often} at {times}",
        "{how_often} at {times}",
        clocks[0][0],
        how_often=how_often,
        times=format_list(said, locale=locale),
    )
