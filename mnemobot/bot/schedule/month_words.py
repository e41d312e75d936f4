"""A day named by where it falls in a month, in English, Russian, German and Spanish: "the
3rd of the month", "next month on the 3rd", "the 1st Monday of December", "the last Friday
of the month", "the last day of the month"; "3-го числа следующего месяца", "в первый
понедельник декабря", "в последнюю пятницу месяца", "в последний день месяца"; "am 3. des
Monats", "am ersten Montag im Dezember", "am letzten Freitag des Monats", "am letzten Tag
des Monats"; "el 3 del mes", "el primer lunes de diciembre", "el último viernes del mes",
"el último día del mes". dateparser read them wrong and said nothing: "3rd of the month"
was three months from now, "next month on 3rd" a month from now at this minute, "1st
Monday of December" the 1st of December; the other languages' it did not read.

Each becomes an ISO date. "Of the month" is the next such day from today on (today's
included while the time said is ahead: `parsing` reads the words again from tomorrow when
today's has passed); "of this month" this month's (refused if past, as a date is); "of
next month" next month's; a month by name the next such month from this one on. A day the
month has not ("the 31st of next month" in February, "the 5th Monday of December") raises
NoSuchDay: refused, never moved to another day.

Russian day words ("третьего") are digits ("3-го") by the time these are read
(`date_words`). Each pattern is tried at every word of a time's words: on 200 characters
of repeated month words it took under 1 ms (measured on a 2-core AMD EPYC).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta

from mnemobot.bot.schedule.month_names import MONTH as _MONTH
from mnemobot.bot.schedule.month_names import MONTHS as _MONTHS

# Which month a phrase names: the next that has the day, this one, the next one.
THE, THIS, NEXT = "the", "this", "next"
# The ordinal of the last day, or weekday, of a month.
LAST = -1

# ------------------------------------------------------------------------------- tables

# Ordinal words, in each language and gender they are said in, and their numbers.
_ORDINAL_NAMES = (
    (1, "first primer primero primera primeros первый первую первое ersten erster erste"),
    (2, "second segundo segunda segundos второй вторую второе zweiten zweiter zweite"),
    (3, "third tercer tercero tercera terceros третий третью третье dritten dritter dritte"),
    (4, "fourth cuarto cuarta cuartos четвёртый четвертый четвёртую четвертую четвёртое четвертое"
        " vierten vierter vierte"),
    (5, "fifth quinto quinta quintos пятый пятую пятое fünften fünfter fünfte"),
    (LAST, "last último ultimo última ultima últimos ultimos последний последнюю последнее"
           " последнего letzten letzter letzte"),
)  # fmt: skip
ORDINAL_WORDS = {word: number for number, words in _ORDINAL_NAMES for word in words.split()}
_ORDINAL_WORD = "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
# An ordinal in digits: "1st", "1.", "1-й", "1-ю", "1-е", "1er", "1º".
ORDINAL_DIGITS = r"\d{1,2}(?:st|nd|rd|th|\.|-[йюея]|er|\.?º|°|ª)"
ORDINAL = rf"(?:{ORDINAL_DIGITS}|{_ORDINAL_WORD})"

# Weekday names, Monday first as `date.weekday()` counts them; Russian as said after "в",
# Spanish plurals as said after "todos los".
_WEEKDAY_NAMES = (
    "monday mon montag понедельник lunes",
    "tuesday tues tue dienstag вторник martes",
    "wednesday wed mittwoch среду среда miércoles miercoles",
    "thursday thurs thur thu donnerstag четверг jueves",
    "friday fri freitag пятницу пятница viernes",
    "saturday sat samstag sonnabend субботу суббота sábado sabado sábados sabados",
    "sunday sun sonntag воскресенье domingo domingos",
)
WEEKDAY_NUMBERS = {name: day for day, names in enumerate(_WEEKDAY_NAMES) for name in names.split()}
WEEKDAY = "|".join(sorted(WEEKDAY_NUMBERS, key=len, reverse=True))
# The word for a day itself: "the last day", "последний день", "letzten Tag", "último día".
DAY_WORD = r"day|день|число|числа|tag|d[ií]a"

# Which month, said after the day: "of the month", "следующего месяца", "des Monats"
# (the longer first: "del mes que viene" before "del mes").
_WHICH_AFTER = {
    THIS: "of this month|this month|этого месяца|текущего месяца|в этом месяце|dieses monats"
    "|diesen monats|in diesem monat|de este mes|este mes",
    NEXT: "of next month|of the next month|next month|следующего месяца|в следующем месяце"
    "|des nächsten monats|nächsten monats|im nächsten monat|des kommenden monats"
    "|kommenden monats|im kommenden monat|del pr[óo]ximo mes|del mes que viene"
    "|del mes siguiente|del siguiente mes",
    THE: "of the month|in the month|месяца|des monats|im monat|del mes",
}
# ... and before it: "next month on the 3rd", "nächsten Monat am 3.", "el mes que viene el 3".
_WHICH_BEFORE = {
    THIS: "this month|в этом месяце|diesen monat|in diesem monat|este mes",
    NEXT: "next month|в следующем месяце|im nächsten monat|nächsten monat|im kommenden monat"
    "|kommenden monat|el pr[óo]ximo mes|el mes que viene|el mes siguiente|pr[óo]ximo mes",
}


_SPACE = r"\s+"


def _which(phrases: dict[str, str]) -> str:
    """The phrases as one alternation, each kind of month a group named after it."""
    return "|".join(
        f"(?P<{kind}>{alternation.replace(' ', _SPACE)})" for kind, alternation in phrases.items()
    )


# Words before a day that say nothing more: "on the", "am", "el", "в".
_BEFORE = r"(?:(?:on|am|el|в|во)\s+)?(?:the\s+)?"
# A day of the month said alone: "3rd", "3-го", "3 числа", "3.", "el 3", "el día 3", "third".
DAY = (
    r"(?:d[ií]a\s+)?(?:(?P<day>\d{1,2})(?:st|nd|rd|th|-?го(?:\s+числа)?|\s+числ[оа]|\.)"
    r"|(?:(?<=\bel\s)|(?<=d[ií]a\s))(?P<day_es>\d{1,2})(?![\d.:,])"
    rf"|(?P<day_word>{_ORDINAL_WORD}))"
)
_DAY_THEN_MONTH = re.compile(
    rf"(?<!\w){_BEFORE}{DAY},?\s+(?:{_which(_WHICH_AFTER)})(?!\w)", re.IGNORECASE
)
_MONTH_THEN_DAY = re.compile(
    rf"(?<!\w)(?:{_which(_WHICH_BEFORE)}),?\s+{_BEFORE}{DAY}(?!\w)", re.IGNORECASE
)
# The nth weekday, or day, of a month: "1st Monday of December", "el último día del mes".
_NTH_OF_MONTH = re.compile(
    rf"(?<!\w){_BEFORE}(?P<nth>{ORDINAL})\s+(?:(?P<weekday>{WEEKDAY})|(?P<the_day>{DAY_WORD}))"
    rf"\s+(?:{_which(_WHICH_AFTER)}|(?:(?:of|in|im|de)\s+)?(?P<month>{_MONTH})"
    r"(?:,?\s+(?:de\s+)?(?P<year>\d{4})(?:\s*(?:года|г\.))?)?)(?!\w)",
    re.IGNORECASE,
)
# German says the last (or first) day of a month in one word.
_MONTH_END_WORD = re.compile(r"\b(?:am\s+)?monats(?P<end>letzten|ersten)\b", re.IGNORECASE)
# How many months on "the month" looks for one that has the day (the 31st, a 5th Monday).
_MONTHS_AHEAD = 12

# ---------------------------------------------------------------------------- functions


class NoSuchDay(ValueError):
    """The words name a day the month they name does not have."""


def month_days_as_iso(text: str, today: date, earliest: date | None = None) -> str:
    """ "3rd of the month at 10" -> " 2026-12-03  at 10", "1st Monday of December at 9" ->
    " 2026-12-07  at 9" (said on 2026-11-24); NoSuchDay for a day the month has not.
    "Of the month" is the first such day from `earliest` (today unless given) on."""
    start = earliest or today
    text = _MONTH_END_WORD.sub(lambda match: _month_end(match, start), text)
    text = _NTH_OF_MONTH.sub(lambda match: _nth_of_month(match, today, start), text)
    text = _MONTH_THEN_DAY.sub(lambda match: _day_of_month(match, today, start), text)
    return _DAY_THEN_MONTH.sub(lambda match: _day_of_month(match, today, start), text)


def ordinal(said: str) -> int:
    """ "3rd", "3.", "3-й", "third", "dritten", "tercer" -> 3; "last", "последнюю" -> LAST."""
    word = said.lower()
    if word in ORDINAL_WORDS:
        return ORDINAL_WORDS[word]
    return int(re.match(r"\d+", word)[0])  # type: ignore[index]


def last_day(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def nth_weekday(year: int, month: int, weekday: int, nth: int) -> date | None:
    """The `nth` (LAST: the last) `weekday` of a month; None if it has no such day."""
    if not date.min.year <= year <= date.max.year:
        return None
    if nth == LAST:
        last = last_day(year, month)
        return last - timedelta(days=(last.weekday() - weekday) % 7)
    if not 1 <= nth <= 5:
        return None
    first = date(year, month, 1)
    found = first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (nth - 1))
    return found if found.month == month else None


def _months_from(today: date, ahead: int) -> tuple[int, int]:
    index = today.year * 12 + today.month - 1 + ahead
    return index // 12, index % 12 + 1


def _day(year: int, month: int, day: int) -> date | None:
    if not date.min.year <= year <= date.max.year:
        return None
    if day == LAST:
        return last_day(year, month)
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _which_said(match: re.Match[str]) -> str | None:
    return next((kind for kind in (THE, THIS, NEXT) if match.groupdict().get(kind)), None)


def _first_from(
    today: date, start: date, which: str, find: Callable[[int, int], date | None]
) -> date:
    """The day `find(year, month)` names in the month `which` says (THE: the first such day
    from `start` on)."""
    if which == THE:
        for ahead in range(_MONTHS_AHEAD + 1):
            found = find(*_months_from(start, ahead))
            if found is not None and found >= start:
                return found
        raise NoSuchDay
    found = find(*_months_from(today, 1 if which == NEXT else 0))
    if found is None:
        raise NoSuchDay
    return found


def _iso(found: date) -> str:
    return f" {found:%Y-%m-%d} "


def _day_of_month(match: re.Match[str], today: date, start: date) -> str:
    day = ordinal(match["day"] or match["day_es"] or match["day_word"])
    which = _which_said(match) or THE
    return _iso(_first_from(today, start, which, lambda year, month: _day(year, month, day)))


def _month_end(match: re.Match[str], start: date) -> str:
    day = LAST if match["end"].lower() == "letzten" else 1
    return _iso(_first_from(start, start, THE, lambda year, month: _day(year, month, day)))


def _nth_of_month(match: re.Match[str], today: date, start: date) -> str:
    nth = ordinal(match["nth"])
    find: Callable[[int, int], date | None]
    if match["weekday"] is not None:
        weekday = WEEKDAY_NUMBERS[match["weekday"].lower()]
        find = lambda year, month: nth_weekday(year, month, weekday, nth)  # noqa: E731
    else:
        find = lambda year, month: _day(year, month, nth)  # noqa: E731
    if match["month"] is None:
        return _iso(_first_from(today, start, _which_said(match) or THE, find))
    month = _MONTHS[match["month"].lower()]
    if match["year"] is not None:
        named = find(int(match["year"]), month)
    else:
        year = today.year + (1 if month < today.month else 0)
        named = find(year, month)
        if named is not None and named < today:
            named = find(year + 1, month)
    if named is None:
        raise NoSuchDay
    return _iso(named)
