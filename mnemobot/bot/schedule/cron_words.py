"""The common shapes of a cron expression, read for saying in words: pure functions.

Most repeating reminders arrive as cron (the schedule tool's description offers it), and
the user reads them back in the confirmation and `/reminders`: "30 8 * * *" there means
nothing to most people. A library was measured for this and left aside: cron-descriptor
2.2.1 leaves the day names in English in ru/de/es/zh ("В 08:00, Monday по Friday",
"在 08:00, 仅在 Monday"), because it reads `calendar.day_name` from the process locale
through a static call a subclass cannot override, and it would not inflect them anyway.

So this module recognises the few shapes people ask for (every day at some times, on some
days of the week, on one day of the month or its last, on the nth or last weekday of the
month: "1#1", "L5", every N minutes or hours) and says them in
English; `wording` says the same shapes in other languages with Babel's CLDR data only.
Any other expression is None, and the callers show the expression itself.

The fields are read as croniter expands them (names, 7 for Sunday, ranges, lists, steps),
so the words say what actually fires.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from croniter import CroniterError, croniter

from mnemobot.bot.schedule.month_words import LAST

# Day names of our own, not `calendar.day_name` (the process locale's). 0 is Monday, as
# Babel numbers the days; cron's 0 (and 7) is Sunday.
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# More times a day than this read better as the expression than as a list.
MAX_TIMES = 4
# Hours spread evenly over the day this often or more are "every N hours"; fewer are
# times ("0 0,12 * * *" is 00:00 and 12:00).
MIN_EVERY_HOURS_COUNT = 3

Clock = tuple[int, int]  # (hour, minute)


@dataclass(frozen=True)
class Daily:
    times: tuple[Clock, ...]


@dataclass(frozen=True)
class Weekly:
    """On some days of the week (0 = Monday), not all seven."""

    days: tuple[int, ...]
    times: tuple[Clock, ...]


@dataclass(frozen=True)
class Monthly:
    """On one day of every month; LAST: its last day ("L"). `last_in_shorter`: on the last
    day of a month too short for it (`short_month_stand_in`)."""

    day: int
    times: tuple[Clock, ...]
    last_in_shorter: bool = False


@dataclass(frozen=True)
class MonthlyWeekday:
    """On the `nth` (LAST: the last) `weekday` (0 = Monday) of every month: "1#1", "L5"."""

    nth: int
    weekday: int
    times: tuple[Clock, ...]


@dataclass(frozen=True)
class Every:
    """Every N minutes or hours, as `seconds`."""

    seconds: int


CronShape = Daily | Weekly | Monthly | MonthlyWeekday | Every
# How the nth weekday of a month is said in English.
ENGLISH_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", LAST: "last"}


def read_cron(expr: str) -> CronShape | None:
    """The shape of a 5-field cron expression, or None when it is none of the common ones."""
    if len(expr.split()) != 5:
        return None
    try:
        parsed = croniter(expr, 0)
    except CroniterError:
        return None
    if parsed.nearest_weekday:
        return None
    minute_field, hour_field, month_day_field, month_field, weekday_field = parsed.expanded
    if not _any(month_field):
        return None
    minutes, hours = _numbers(minute_field), _numbers(hour_field)
    month_days, weekdays = _numbers(month_day_field), _numbers(weekday_field)
    every_day = _any(month_day_field) and _any(weekday_field)
    every = _every(minute_field, hour_field)
    if every is not None:
        return Every(every) if every_day else None
    if minutes is None or hours is None or len(minutes) * len(hours) > MAX_TIMES:
        return None
    times = tuple(sorted((hour, minute) for hour in hours for minute in minutes))
    if parsed.nth_weekday_of_month:
        return _monthly_weekday(parsed.nth_weekday_of_month, month_day_field, weekdays, times)
    if list(month_day_field) == ["l"] and _any(weekday_field):
        return Monthly(LAST, times)
    if every_day:
        return Daily(times)
    if _any(month_day_field) and weekdays is not None:
        days = tuple(sorted({(day - 1) % 7 for day in weekdays}))
        return Daily(times) if len(days) == 7 else Weekly(days, times)
    if _any(weekday_field) and month_days is not None and len(month_days) == 1:
        return Monthly(month_days[0], times, short_month_stand_in(expr) is not None)
    return None


# Days in each month of a common year: the months a late day of the month is not in.
_MONTH_LENGTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
FIRST_LATE_DAY = 29


def short_month_stand_in(expr: str) -> str | None:
    """For a cron on one day of every month that some months have not ("0 9 31 * *"), the
    cron of the last day of those months ("0 9 L 2,4,6,9,11 *"); None for any other.

    A reminder for "the 31st of every month" (rent, a bill) that skipped February, April,
    June, September and November without a word was found live; most people expect it
    on the last day of those months, as Outlook and banks' standing orders do. Fired
    beside the cron itself (`timing`), and said in the words that read it back."""
    fields = expr.split()
    if len(fields) != 5 or fields[3] != "*" or fields[4] != "*" or not fields[2].isdigit():
        return None
    day = int(fields[2])
    if not FIRST_LATE_DAY <= day <= max(_MONTH_LENGTHS):
        return None
    months = ",".join(str(month) for month, days in enumerate(_MONTH_LENGTHS, 1) if days < day)
    return f"{fields[0]} {fields[1]} L {months} *"


def _monthly_weekday(
    nth_weekdays: Mapping[int, Collection[int | str]],
    month_day_field: Sequence[object],
    weekdays: tuple[int, ...] | None,
    times: tuple[Clock, ...],
) -> MonthlyWeekday | None:
    """One nth (or last, croniter's "l") of one weekday, on any day of the month."""
    if not _any(month_day_field) or weekdays is None or len(weekdays) != 1:
        return None
    if len(nth_weekdays) != 1:
        return None
    ((cron_day, nths),) = nth_weekdays.items()
    if len(nths) != 1:
        return None
    nth = next(iter(nths))
    return MonthlyWeekday(LAST if nth == "l" else int(nth), (cron_day - 1) % 7, times)


def weekday_groups(days: Sequence[int]) -> list[tuple[int, int]]:
    """The days as (first, last) pairs to say: one range when they are three or more days in
    a row, counted round the week ((4, 0) is Friday to Monday); else each day on its own."""
    chosen = set(days)
    if len(chosen) >= 3:
        starts = [day for day in sorted(chosen) if (day - 1) % 7 not in chosen]
        if len(starts) == 1:
            first = starts[0]
            return [(first, (first + len(chosen) - 1) % 7)]
    return [(day, day) for day in sorted(chosen)]


def clock_text(clock: Clock) -> str:
    return f"{clock[0]:02d}:{clock[1]:02d}"


def cron_in_english(expr: str) -> str | None:
    """ "every day at 08:30", "Monday to Friday at 08:00", "every 15 minutes"; None for a
    shape `read_cron` does not know."""
    shape = read_cron(expr)
    if shape is None:
        return None
    if isinstance(shape, Every):
        minutes = shape.seconds // 60
        if minutes % 60 == 0:
            return _every_unit(minutes // 60, "hour")
        return _every_unit(minutes, "minute")
    at = "at " + english_list([clock_text(clock) for clock in shape.times])
    if isinstance(shape, Daily):
        return f"every day {at}"
    if isinstance(shape, Monthly):
        if shape.day == LAST:
            return f"on the last day of every month {at}"
        said = f"on day {shape.day} of every month {at}"
        return f"{said} (in shorter months, on the last day)" if shape.last_in_shorter else said
    if isinstance(shape, MonthlyWeekday):
        nth = ENGLISH_ORDINALS[shape.nth]
        return f"on the {nth} {WEEKDAYS[shape.weekday]} of every month {at}"
    groups = weekday_groups(shape.days)
    if len(groups) == 1 and groups[0][0] != groups[0][1]:
        first, last = groups[0]
        return f"{WEEKDAYS[first]} to {WEEKDAYS[last]} {at}"
    return f"every {english_list([WEEKDAYS[day] for day, _ in groups])} {at}"


def english_list(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def _every_unit(count: int, unit: str) -> str:
    return f"every {unit}" if count == 1 else f"every {count} {unit}s"


def _any(field: Sequence[object]) -> bool:
    return list(field) == ["*"]


def _numbers(field: Sequence[object]) -> tuple[int, ...] | None:
    """The values of a field croniter expanded, when they are all plain numbers."""
    numbers: set[int] = set()
    for value in field:
        if not isinstance(value, int):
            return None
        numbers.add(value)
    return tuple(sorted(numbers))


def _every(minute_field: Sequence[object], hour_field: Sequence[object]) -> int | None:
    """Seconds between firings when the two fields fire at an even pace round the clock."""
    if _any(minute_field):
        return 60 if _any(hour_field) else None
    minutes = _numbers(minute_field)
    if minutes is None:
        return None
    if _any(hour_field):
        step = _even_step(minutes, 60)
        return None if step is None else step * 60
    hours = _numbers(hour_field)
    if len(minutes) != 1 or hours is None or len(hours) < MIN_EVERY_HOURS_COUNT:
        return None
    step = _even_step(hours, 24)
    return None if step is None else step * 3_600


def _even_step(values: tuple[int, ...], cycle: int) -> int | None:
    """The step when `values` (sorted) are evenly spaced round the whole cycle ("*/15",
    "5/15" or "0,15,30,45" of 60), else None; one value is the whole cycle."""
    step, rest = divmod(cycle, len(values))
    if rest or any(b - a != step for a, b in itertools.pairwise(values)):
        return None
    return step
