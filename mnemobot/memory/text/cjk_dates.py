"""Days named in Chinese and Japanese ("昨天", "三天前", "上周二", "3月8日", "先週の月曜日").

`memory.text.dates` asks dateparser about every other language. For these two it cannot be
used: dateparser 1.2 (measured with a base date of 2026-03-12) reads "3月8日" as
2025-12-04, "8日" as eight days ago and "十月八号" as a day in October 2025 picked from
"十月" alone; it finds nothing in "三天前" or "两周前", and "三月八日" comes back as
today. These forms are regular (numbers, in digits or Chinese numerals, before a unit
character), so they are read here, by pure functions over the text and today's date.

Each phrase gives the days it names, first and last (inclusive): a day, a week (Monday to
Sunday), a month or a year. A date without a year is the latest one not after today.
Future days ("明天", "下周") are not looked for: a question about memory asks about the
past.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4}
_DIGITS |= {"五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_NUMBER = r"(?:[0-9０-９]{1,4}|[零〇一二两三四五六七八九十]{1,4})"
# Monday = 0, as date.weekday().
_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_WEEKDAYS_JA = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}
_WEEK = r"(?:周|星期|礼拜)"


@dataclass(frozen=True, slots=True)
class NamedDays:
    phrase: str
    first: date
    last: date


def cjk_number(text: str) -> int | None:
    """The value of a number in digits or Chinese numerals ("12", "十二", "二十", "二〇二五",
    "两"); None when it is neither."""
    if not text:
        return None
    if text.isdigit():
        return int(text)  # (int() reads full-width digits too)
    if "十" not in text:
        if not all(ch in _DIGITS for ch in text):
            return None
        value = 0
        for ch in text:  # "二〇二五": digit by digit
            value = value * 10 + _DIGITS[ch]
        return value
    tens, _, ones = text.partition("十")
    if (tens and tens not in _DIGITS) or (ones and ones not in _DIGITS):
        return None
    return (_DIGITS[tens] if tens else 1) * 10 + (_DIGITS[ones] if ones else 0)


def _month_span(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _week_of(day: date) -> tuple[date, date]:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6)


def _months_back(today: date, months: int) -> tuple[date, date]:
    index = today.year * 12 + today.month - 1 - months
    return _month_span(index // 12, index % 12 + 1)


def _latest_past(today: date, month: int, day: int) -> date | None:
    """The latest date with this month and day that is not after today."""
    for year in (today.year, today.year - 1, today.year - 2, today.year - 3, today.year - 4):
        try:
            found = date(year, month, day)
        except ValueError:  # 2月30日, or 2月29日 outside a leap year
            continue
        if found <= today:
            return found
    return None


def _weekday_in_week(today: date, weeks_back: int, weekday: int) -> date:
    monday = today - timedelta(days=today.weekday() + 7 * weeks_back)
    return monday + timedelta(days=weekday)


def _latest_weekday(today: date, weekday: int) -> date:
    return today - timedelta(days=(today.weekday() - weekday) % 7)


Reading = Callable[["re.Match[str]", date], tuple[date, date] | None]


def _full_date(match: re.Match[str], today: date) -> tuple[date, date] | None:
    year, month, day = (cjk_number(match.group(n)) for n in (1, 2, 3))
    if year is None or month is None or day is None:
        return None
    try:
        found = date(year, month, day)
    except ValueError:
        return None
    return found, found


def _month_day(match: re.Match[str], today: date) -> tuple[date, date] | None:
    month, day = cjk_number(match.group(1)), cjk_number(match.group(2))
    if month is None or day is None or not 1 <= month <= 12:
        return None
    found = _latest_past(today, month, day)
    return (found, found) if found else None


def _year_month(match: re.Match[str], today: date) -> tuple[date, date] | None:
    year, month = cjk_number(match.group(1)), cjk_number(match.group(2))
    if year is None or month is None or not 1 <= month <= 12 or year < 1000:
        return None
    return _month_span(year, month)


def _year(match: re.Match[str], today: date) -> tuple[date, date] | None:
    year = cjk_number(match.group(1))
    if year is None or year < 1000:
        return None
    return date(year, 1, 1), date(year, 12, 31)


def _month(match: re.Match[str], today: date) -> tuple[date, date] | None:
    month = cjk_number(match.group(1))
    if month is None or not 1 <= month <= 12:
        return None
    year = today.year if month <= today.month else today.year - 1
    return _month_span(year, month)


def _days_ago(days: int) -> Reading:
    def read(match: re.Match[str], today: date) -> tuple[date, date]:
        day = today - timedelta(days=days)
        return day, day

    return read


def _n_days_ago(match: re.Match[str], today: date) -> tuple[date, date] | None:
    days = cjk_number(match.group(1))
    if days is None:
        return None
    day = today - timedelta(days=days)
    return day, day


def _n_weeks_ago(match: re.Match[str], today: date) -> tuple[date, date] | None:
    weeks = cjk_number(match.group(1))
    return None if weeks is None else _week_of(today - timedelta(weeks=weeks))


def _n_months_ago(match: re.Match[str], today: date) -> tuple[date, date] | None:
    months = cjk_number(match.group(1))
    return None if months is None else _months_back(today, months)


def _week_back(weeks: int, weekdays: dict[str, int] | None = None) -> Reading:
    """A week `weeks` before this one, or one day of it when the phrase names a weekday
    (its last group)."""

    def read(match: re.Match[str], today: date) -> tuple[date, date] | None:
        named = match.group(match.lastindex) if match.lastindex and weekdays else None
        if named:
            day = _weekday_in_week(today, weeks, weekdays[named])  # type: ignore[index]
            return (day, day) if day <= today else None
        return _week_of(today - timedelta(weeks=weeks))

    return read


def _weekday(weekdays: dict[str, int]) -> Reading:
    def read(match: re.Match[str], today: date) -> tuple[date, date]:
        day = _latest_weekday(today, weekdays[match.group(1)])
        return day, day

    return read


def _month_back(months: int) -> Reading:
    def read(match: re.Match[str], today: date) -> tuple[date, date]:
        return _months_back(today, months)

    return read


def _year_back(years: int) -> Reading:
    def read(match: re.Match[str], today: date) -> tuple[date, date]:
        year = today.year - years
        return date(year, 1, 1), date(year, 12, 31)

    return read


_CN_DAY = "[一二三四五六日天]"
_JA_DAY = "[月火水木金土日]"
# Longest forms first: a phrase's characters are read once, by the first form that takes
# them ("2025年10月8日" is a day, not also a year and a month).
_FORMS: tuple[tuple[re.Pattern[str], Reading], ...] = tuple(
    (re.compile(pattern), reading)
    for pattern, reading in (
        (rf"({_NUMBER})年({_NUMBER})月({_NUMBER})[日号號]", _full_date),
        (rf"({_NUMBER})月({_NUMBER})[日号號]", _month_day),
        (rf"({_NUMBER})年({_NUMBER})月", _year_month),
        (rf"上上个?{_WEEK}({_CN_DAY})?", _week_back(2, _WEEKDAYS)),
        (rf"上个?{_WEEK}({_CN_DAY})?", _week_back(1, _WEEKDAYS)),
        (rf"(?:这|本)个?{_WEEK}({_CN_DAY})?", _week_back(0, _WEEKDAYS)),
        (rf"先々週(?:の)?(?:({_JA_DAY})曜日?)?", _week_back(2, _WEEKDAYS_JA)),
        (rf"先週(?:の)?(?:({_JA_DAY})曜日?)?", _week_back(1, _WEEKDAYS_JA)),
        (rf"今週(?:の)?(?:({_JA_DAY})曜日?)?", _week_back(0, _WEEKDAYS_JA)),
        (rf"({_NUMBER})个?(?:{_WEEK}|週間?)前", _n_weeks_ago),
        (rf"({_NUMBER})(?:个|か|ヶ|ヵ|カ)月前", _n_months_ago),
        (rf"({_NUMBER})(?:天|日)前", _n_days_ago),
        (r"大前天", _days_ago(3)),
        (r"前天|一昨日|おととい", _days_ago(2)),
        (r"昨天|昨日|きのう", _days_ago(1)),
        (r"今天|今日|きょう", _days_ago(0)),
        (r"上上个月|先々月", _month_back(2)),
        (r"上个?月|先月", _month_back(1)),
        (r"(?:这|本)个?月|今月", _month_back(0)),
        (r"前年|一昨年", _year_back(2)),
        (r"去年|昨年", _year_back(1)),
        (r"今年", _year_back(0)),
        (rf"{_WEEK}({_CN_DAY})", _weekday(_WEEKDAYS)),
        (rf"({_JA_DAY})曜日", _weekday(_WEEKDAYS_JA)),
        (r"([0-9０-９]{4})年", _year),
        (rf"(?<![个個])({_NUMBER})月(?!前)", _month),
    )
)


def find_cjk_dates(text: str, today: date) -> list[NamedDays]:
    """The past days a Chinese or Japanese text names, in the order they appear."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, NamedDays]] = []
    for pattern, reading in _FORMS:
        for match in _matches(pattern, text, taken):
            span = reading(match, today)
            taken.append(match.span())
            if span is None or span[0] > today:
                continue
            found.append((match.start(), NamedDays(match.group(0), span[0], min(span[1], today))))
    return [days for _, days in sorted(found, key=lambda entry: entry[0])]


def _matches(
    pattern: re.Pattern[str], text: str, taken: list[tuple[int, int]]
) -> Iterator[re.Match[str]]:
    for match in pattern.finditer(text):
        start, end = match.span()
        if all(end <= first or start >= last for first, last in taken):
            yield match
