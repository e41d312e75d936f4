"""Days and dates people name that dateparser misreads or does not read, as the ISO dates
("2026-12-04") it does: pure functions of the words and the local time now, for `parsing`.

- A weekday with "next" or "this", in the languages the bot speaks: "next Friday",
  "nächsten Freitag", "в следующую пятницу", "el próximo viernes" (dateparser reads only
  the English), "this Friday", "diesen Freitag", "в эту пятницу", "este viernes".
  "Next Friday" is dateparser's reading, which the English had before: the first Friday
  after today (said on a Thursday, the next day; on a Friday, a week on). "This Friday" is
  the coming one, today included. Chinese names the week itself: "下周五" is the Friday of
  next week (weeks run Monday to Sunday; said on a Thursday, eight days on), "这周五" this
  week's (said on a Saturday, yesterday: refused as past), and so do "Friday next week",
  "nächste Woche Freitag", "в пятницу на следующей неделе", "el viernes de la próxima
  semana" and their "this week".
- A date: "5 December", "December 5th", "am 5. Dezember", "5 декабря", "el 5 de
  diciembre", "12月5日", and day-first digits "5.12." (German and Russian), "5/12" only
  when the words around it are German, Russian or Spanish: in English "5/12" is 12 May to
  some and 5 December to others, and it is left to dateparser as before (month first, as
  in American English and Chinese). The confirmation names the month in words, so a
  misread shows. Without a year, the next such date from today on: one already past this
  year is next year's; today's stays today's (so "5 December at 9" said at 10:00 that day
  is refused as past, where dateparser moved it a year on).
- A day of the month by its number alone: "on the 5th", "am 5.", "5-го", "5 числа",
  "пятого", "el (día) 5", "5号" (dateparser read "the 5th" as May, "5. um 9" and "пятого"
  as this month's 5th, and the rest not at all): the next 5th of a month, from today on
  (today's at an hour already past is next month's, as "the 5th of the month" is: found
  live, "30-го числа в 9" said on the 30th at 10 was refused). German needs its article or
  an "um" after ("am 5.", "5. um 9"): "5." alone is a number in a list. A Russian ordinal
  word after "половине", "четверть", "минут" is an hour ("в половине второго"), left as
  said.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from mnemobot.bot.schedule.month_names import MONTH as _MONTH
from mnemobot.bot.schedule.month_names import MONTHS as _MONTHS
from mnemobot.bot.schedule.month_words import NoSuchDay, month_days_as_iso
from mnemobot.bot.schedule.time_words import CHINESE_NUMBER, chinese_number

# The characters of a Chinese number: one before "五号" makes it part of a bigger one.
_CHINESE_DIGIT_CHARS = "一二两三四五六七八九十"

# ------------------------------------------------------------------------------- tables

# Weekday names, Monday first as `date.weekday()` counts; Russian as said after "в".
_WEEKDAY_NAMES = (
    r"monday|mon|montag|понедельник|lunes",
    r"tuesday|tues|tue|dienstag|вторник|martes",
    r"wednesday|wed|mittwoch|сред[ауе]|mi[ée]rcoles",
    r"thursday|thurs|thur|thu|donnerstag|четверг|jueves",
    r"friday|fri|freitag|пятниц[ауе]|viernes",
    r"saturday|sat|samstag|sonnabend|суббот[ауе]|s[áa]bado",
    r"sunday|sun|sonntag|воскресень[ея]|domingo",
)


def _weekday_groups(prefix: str) -> str:
    """The weekday names as one alternation, each day a group: `prefix` and its number."""
    return "|".join(f"(?P<{prefix}{index}>{names})" for index, names in enumerate(_WEEKDAY_NAMES))


_ANY_WEEKDAY = "|".join(_WEEKDAY_NAMES)
_NEXT_WORDS = (
    r"next|this\s+coming|coming|nächste[nrs]?|kommende[nrs]?|следующ(?:ий|ую|ее|ая)"
    r"|pr[óo]xim[oa]"
)
_THIS_WORDS = r"this|diese[nrs]?|эт(?:у|от|о|а)|ближайш(?:ий|ую|ее|ая)|este|esta"
# Words before a day that say nothing more: "on", "am", "el", "в".
_ON = r"(?:(?:on|am|el|den|в|во)\s+)?"
# The word for "at" before a number makes it a clock time ("um 9.30"), never a date.
_NOT_AFTER_AT = r"(?<!\bat\s)(?<!\bum\s)(?<!в\s)(?<!\blas\s)(?<!\bla\s)(?<!\balle\s)(?<!@)"

# What each kind of day word counts from today's weekday to the named one.
NEXT, THIS, NEXT_WEEK, THIS_WEEK = "next", "this", "next week", "this week"

_QUALIFIED_WEEKDAY = re.compile(
    rf"(?<!\w){_ON}(?:(?P<next>{_NEXT_WORDS})|(?P<this>{_THIS_WORDS}))\s+"
    rf"(?:{_weekday_groups('d')})(?!\w)"
    # Spanish also says it after the day: "el viernes próximo", "el viernes que viene".
    rf"|(?<!\w)(?:el\s+)?(?:{_weekday_groups('s')})\s+"
    r"(?P<after>pr[óo]ximo|que\s+viene)(?!\w)",
    re.IGNORECASE,
)
# A weekday with the week named: "Friday next week", "nächste Woche Freitag", "в пятницу
# на следующей неделе", "el viernes de la próxima semana" (weeks run Monday to Sunday, as
# "下周五" counts them), and "this week" likewise.
_NEXT_WEEK = (
    r"next\s+week|(?:nächste|kommende)\s+woche|на\s+следующей\s+неделе"
    r"|(?:de\s+)?la\s+(?:pr[óo]xima\s+semana|semana\s+que\s+viene)"
)
_THIS_WEEK = r"this\s+week|diese\s+woche|на\s+этой\s+неделе|(?:de\s+)?esta\s+semana"
_WEEKDAY_OF_WEEK = re.compile(
    rf"(?<!\w){_ON}(?:{_weekday_groups('a')})\s+(?:(?P<anext>{_NEXT_WEEK})|{_THIS_WEEK})(?!\w)"
    rf"|(?<!\w)(?:(?P<bnext>{_NEXT_WEEK})|{_THIS_WEEK}),?\s+{_ON}(?:{_weekday_groups('b')})"
    r"(?!\w)",
    re.IGNORECASE,
)
_CHINESE_WEEKDAY = re.compile(
    r"(?<!下)(?P<week>[下这這本])个?(?:周|星期|礼拜|禮拜)(?P<day>[一二三四五六日天])"
)
_CHINESE_DAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_DAY_MONTH = re.compile(
    rf"(?:\b(?:on|am|el|den)\s+)?(?:the\s+)?(?:d[ií]a\s+)?(?<![\d.:/-])(?P<day>\d{{1,2}})"
    rf"(?:st|nd|rd|th|\.|-?го)?\s*(?:of\s+|de\s+)?(?P<month>{_MONTH})\.?(?!\w)"
    r"(?:,?\s+(?:del?\s+)?(?P<year>\d{4})(?:\s*(?:года|г\.))?)?(?!\d)",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    rf"(?:\bon\s+)?(?<!\w)(?P<month>{_MONTH})\.?\s+(?:the\s+)?(?P<day>\d{{1,2}})"
    r"(?:st|nd|rd|th)?(?![\d:.,]\d|\s*(?:[ap]\.?m\b|h\b|uhr\b|o['’]?clock))(?!\w)"
    r"(?:,?\s+(?P<year>\d{4}))?(?!\d)",
    re.IGNORECASE,
)
# "5.12.", "5.12.2026", and "5.12" with the time after it ("5.12 в 9") or an article
# before it ("am 5.12"); not "um 9.30".
_DOTTED = re.compile(
    rf"(?P<article>\b(?:am|el|on|den)\s+)?(?<![\w.:/]){_NOT_AFTER_AT}"
    r"(?P<day>\d{1,2})\.(?P<month>\d{1,2})"
    r"(?P<tail>\.(?P<year>\d{4}|\d{2})(?![\d.])|\.(?!\d)|(?=\s+(?:um|в|at|a\s+las?|alle)\s+\d))?"
    r"(?![\d.])",
    re.IGNORECASE,
)
_SLASHED = re.compile(
    rf"(?:\b(?:am|el|on|den)\s+)?(?<![\w./:]){_NOT_AFTER_AT}"
    r"(?P<day>\d{1,2})/(?P<month>\d{1,2})(?:/(?P<year>\d{4}|\d{2}))?(?![\d/])",
    re.IGNORECASE,
)
# Words of the languages that write the day first ("5/12" is 5 December in them).
_DAY_FIRST_WORDS = re.compile(
    r"[а-яё]|\b(?:um|uhr|heute|morgen|übermorgen|gegen|abends|nachts|früh|nächste[nrs]?"
    r"|diese[nrs]?)\b|\bam\s+\d"
    r"|\b(?:a\s+las?|el|hoy|mañana|pasado|próximo|sobre|de\s+la|por\s+la)\b",
    re.IGNORECASE,
)
_CHINESE_DATE = re.compile(
    rf"(?:(?P<year>\d{{4}})\s*年\s*)?(?P<month>\d{{1,2}}|{CHINESE_NUMBER})\s*月\s*"
    rf"(?P<day>\d{{1,2}}|{CHINESE_NUMBER})\s*[日号號]"
)
# A day of the month by its number alone (not "the 2nd week", "every 3rd day", "am 5.
# Tag", "5日后": a count of them; not "9 am 5.": English "am"; nor "the 5th of next month",
# which dateparser reads whole and which, the day put alone, became a month from now).
_ORDINAL_DAY = re.compile(
    r"\b(?:on\s+)?(?:the\s+)?(?P<en>\d{1,2})(?:st|nd|rd|th)\b"
    r"(?!\s+(?:day|week|month|year|time|hour|minute|\w+day)s?\b|\s+of\b)"
    r"|(?<![\w-])(?P<ru>\d{1,2})(?:-?го(?:\s+числа)?|\s+числа)(?!\w)"
    r"|(?<!\d\s)\b(?:am|den)\s+(?P<de>\d{1,2})(?:\.|(?=\s+um\s+\d))(?![\w.])"
    r"(?!\s+(?:tag|woche|monat|jahr|mal)\w*)"
    rf"|(?<![\w.:/-]){_NOT_AFTER_AT}(?P<de_um>\d{{1,2}})\.(?=\s+um\s+\d)"
    r"|\b(?:el\s+d[ií]a|el|d[ií]a)\s+(?P<es>\d{1,2})(?![\w:/%]|[.,]\d|\s+de\b)"
    rf"|(?<![\d月{_CHINESE_DIGIT_CHARS}])(?<!月\s)(?P<zh>\d{{1,2}}|{CHINESE_NUMBER})\s*[日号號]"
    r"(?!\s*(?:后|後|内|內|以|楼|樓|线|線))",
    re.IGNORECASE,
)
# Russian ordinal days, as said for a date (the genitive): "пятого", "двадцать пятого".
_RUSSIAN_DAYS = (
    ("первого",), ("второго",), ("третьего",), ("четвёртого", "четвертого"), ("пятого",),
    ("шестого",), ("седьмого",), ("восьмого",), ("девятого",), ("десятого",),
    ("одиннадцатого",), ("двенадцатого",), ("тринадцатого",), ("четырнадцатого",),
    ("пятнадцатого",), ("шестнадцатого",), ("семнадцатого",), ("восемнадцатого",),
    ("девятнадцатого",), ("двадцатого",),
)  # fmt: skip
_RUSSIAN_DAY_NUMBERS = {
    word: day for day, words in enumerate(_RUSSIAN_DAYS, 1) for word in words
} | {"тридцатого": 30}
_RUSSIAN_DAY_WORD = re.compile(
    # After these words the ordinal is an hour: "в половине второго", "четверть пятого".
    # ("пол-пятого" is written with a hyphen too; "одну минуту второго" is 1:01.)
    r"(?<!\w)(?:(?P<hour>половин[аеуы]|пол|четверть|начал[еу]|конц[еу]|минут[уы]?)"
    r"(?:\s+|(?<=пол)-))?"
    r"(?:(?P<tens>двадцать|тридцать)\s+)?"
    rf"(?P<day>{'|'.join(sorted(_RUSSIAN_DAY_NUMBERS, key=len, reverse=True))})(?!\w)",
    re.IGNORECASE,
)
# A weekday said with a date says nothing more ("Saturday, 5 December"): the date is read.
_WEEKDAY_BEFORE_DATE = re.compile(
    rf"(?<!\w){_ON}(?:{_ANY_WEEKDAY})\.?,?\s+(?=\d{{4}}-\d{{2}}-\d{{2}})", re.IGNORECASE
)
# The most days a month has: a day past it is in none.
_LONGEST_MONTH = 31
# Years a date without one is looked for in (the 29th of February: the next leap year).
_YEARS_AHEAD = 8


# ---------------------------------------------------------------------------- functions


def dates_as_iso(text: str, base: datetime, month_from: date | None = None) -> str:
    """The days and dates of `text` as ISO dates, relative to the local time `base` (see
    the module docstring): "next Friday at 9" -> "2026-11-27 at 9"; NoSuchDay for a day
    no month, or the month named, has ("тридцать пятого", "the 5th Monday of December").
    `month_from`: the first day "of the month", or a day said alone, may be (`month_words`)."""
    today = base.date()
    text = russian_day_words_as_numbers(text)
    text = month_days_as_iso(text, today, month_from)
    text = _DAY_MONTH.sub(lambda match: _named(match, today), text)
    text = _MONTH_DAY.sub(lambda match: _named(match, today), text)
    text = _CHINESE_DATE.sub(lambda match: _numbered(match, today), text)
    text = _DOTTED.sub(lambda match: _dotted(match, today), text)
    if _DAY_FIRST_WORDS.search(text):
        text = _SLASHED.sub(lambda match: _numbered(match, today), text)
    text = _WEEKDAY_OF_WEEK.sub(lambda match: _weekday_of_week(match, today), text)
    text = _QUALIFIED_WEEKDAY.sub(lambda match: _weekday(match, today), text)
    text = _CHINESE_WEEKDAY.sub(lambda match: _chinese_weekday(match, today), text)
    text = ordinal_day_as_date(text, base, month_from)
    text = _WEEKDAY_BEFORE_DATE.sub("", text)
    return re.sub(r"\s{2,}", " ", text).strip()


def day_on_or_after(today: date, month: int, day: int, year: int | None = None) -> date | None:
    """The date of a month and day: in `year`, or the first from `today` on; None if
    there is no such date."""
    if year is not None:
        try:
            return date(year + 2000 if year < 100 else year, month, day)
        except ValueError:
            return None
    for later in range(today.year, today.year + _YEARS_AHEAD + 1):
        try:
            found = date(later, month, day)
        except ValueError:
            continue
        if found >= today:
            return found
    return None


def weekday_date(today: date, weekday: int, kind: str) -> date:
    """The date of a weekday (0 Monday) said with a `kind` of word (NEXT, THIS, NEXT_WEEK,
    THIS_WEEK; see the module docstring)."""
    ahead = (weekday - today.weekday()) % 7
    if kind == NEXT:
        return today + timedelta(days=ahead or 7)
    if kind == THIS:
        return today + timedelta(days=ahead)
    monday = today - timedelta(days=today.weekday())
    return monday + timedelta(days=weekday + (7 if kind == NEXT_WEEK else 0))


def _iso(found: date | None, said: str) -> str:
    return said if found is None else f" {found:%Y-%m-%d} "


def _year(said: str | None) -> int | None:
    return int(said) if said else None


def _named(match: re.Match[str], today: date) -> str:
    month = _MONTHS[match["month"].lower()]
    return _iso(day_on_or_after(today, month, int(match["day"]), _year(match["year"])), match[0])


def _number(said: str) -> int:
    return int(said) if said.isdigit() else chinese_number(said)


def _numbered(match: re.Match[str], today: date) -> str:
    found = day_on_or_after(
        today, _number(match["month"]), _number(match["day"]), _year(match["year"])
    )
    return _iso(found, match[0])


def _dotted(match: re.Match[str], today: date) -> str:
    if match["tail"] is None and match["article"] is None:
        return match[0]  # "5.12" alone: a time to some ("at 5.12"), left as it was read
    return _numbered(match, today)


def _weekday(match: re.Match[str], today: date) -> str:
    prefix = "d" if match["after"] is None else "s"
    weekday = next(day for day in range(7) if match[f"{prefix}{day}"] is not None)
    kind = THIS if match["this"] is not None else NEXT
    return _iso(weekday_date(today, weekday, kind), match[0])


def _weekday_of_week(match: re.Match[str], today: date) -> str:
    prefix = "a" if any(match[f"a{day}"] is not None for day in range(7)) else "b"
    weekday = next(day for day in range(7) if match[f"{prefix}{day}"] is not None)
    kind = NEXT_WEEK if match[f"{prefix}next"] is not None else THIS_WEEK
    return _iso(weekday_date(today, weekday, kind), match[0])


def _chinese_weekday(match: re.Match[str], today: date) -> str:
    kind = NEXT_WEEK if match["week"] == "下" else THIS_WEEK
    return _iso(weekday_date(today, _CHINESE_DAYS[match["day"]], kind), match[0])


def russian_day_words_as_numbers(text: str) -> str:
    """ "пятого в 9" -> "5-го в 9", "двадцать пятого декабря" -> "25-го декабря"; an hour
    ("в половине второго") left as said; NoSuchDay for a day no month has ("тридцать
    пятого")."""

    def number(match: re.Match[str]) -> str:
        day = _RUSSIAN_DAY_NUMBERS[match["day"].lower()]
        tens = (match["tens"] or "").lower()
        if tens:
            day = (20 if tens == "двадцать" else 30) + day if day < 10 else 99
        if match["hour"] is not None:
            return match[0]
        if day > _LONGEST_MONTH:
            raise NoSuchDay
        return f"{day}-го"

    return _RUSSIAN_DAY_WORD.sub(number, text)


def ordinal_day_as_date(text: str, base: datetime, earliest: date | None = None) -> str:
    """ "on the 5th at 9" -> "2026-12-05 at 9", "am 5. um 9" -> "2026-12-05 um 9", "5号9点"
    -> "2026-12-05 9点": the next 5th of a month, from `base`'s day (or `earliest`, when
    today's has passed: "30-го в 9" said on the 30th at 10 is next month's, as "the 30th
    of the month" is) on; NoSuchDay for a day no month has ("the 35th")."""
    start = earliest or base.date()

    def day_of_month(match: re.Match[str]) -> str:
        said = next(match[kind] for kind in ("en", "ru", "de", "de_um", "es", "zh") if match[kind])
        day = _number(said)
        if not 1 <= day <= _LONGEST_MONTH:
            raise NoSuchDay
        year, month = start.year, start.month
        if day < start.day:
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        for _ in range(12):  # the next month that has that day (the 31st)
            try:
                return _iso(date(year, month, day), match[0])
            except ValueError:
                year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        return match[0]

    return _ORDINAL_DAY.sub(day_of_month, text)
