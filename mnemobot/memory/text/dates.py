"""Dates named in a message ("yesterday", "last Tuesday", "on March 3", "в прошлую пятницу").

`find_dates` turns the dates a question names into time ranges in the chat's time zone,
so retrieval can look at what was said on those days. Chinese and Japanese dates are read
by `memory.text.cjk_dates` (dateparser misreads them); every other language's parsing is
`dateparser`'s; it costs about 0.8 s to import and 0.5-2 ms a call once a language is loaded
(the first call in a language loads it: 30-400 ms), so:

- a cheap regular expression (`has_date_words`) runs first, and a message with no
  date-like word or digit never reaches the parser;
- the parser is imported on first use, and asked only about the languages of the
  message's script (Latin, Cyrillic, CJK) among the configured ones: language detection
  over every language costs 100x more and finds dates in words like "are" and "we".

Only past days are returned (a question about memory asks about the past), and a date
phrase is kept only if it holds a date-like word itself, which drops parser guesses.
"""

from __future__ import annotations

import calendar
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo
from typing import Any

from mnemobot.memory.text.cjk_dates import find_cjk_dates
from mnemobot.memory.text.scripts import CJK_CHAR, CYRILLIC_CHAR, HAN, LATIN_CHAR

log = logging.getLogger(__name__)

_EN = (
    r"yesterday|today|tonight|ago|last|past|previous|week|weeks|month|months|year|"
    r"mon(?:day)?|tue(?:s|sday)?|wed(?:nesday)?|thu(?:rs|rsday)?|fri(?:day)?|"
    r"sat(?:urday)?|sun(?:day)?|jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|"
    r"june?|july?|aug(?:ust)?|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_RU = (
    r"вчера|позавчера|сегодня|назад|прошл\w*|недел\w*|месяц\w*|год\w*|"
    r"понедельник\w*|вторник\w*|сред\w*|четверг\w*|пятниц\w*|суббот\w*|воскресень\w*|"
    r"январ\w*|феврал\w*|март\w*|апрел\w*|ма[йя]|июн\w*|июл\w*|август\w*|сентябр\w*|"
    r"октябр\w*|ноябр\w*|декабр\w*"
)
_CJK = r"昨天|前天|今天|上周|上个|上星期|星期|礼拜|周[一二三四五六日天]|天前|月|日|号|年"
_DATE_WORDS = re.compile(rf"\d|\b(?:{_EN}|{_RU})\b|{_CJK}", re.IGNORECASE)
_WEEK = re.compile(r"\bweeks?\b|недел|周(?![一二三四五六日天])|星期(?![一二三四五六日天])", re.I)
_MONTH_UNIT = re.compile(r"\bmonths?\b|месяц|个月", re.I)
_MONTH_NAME = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|june|july|aug(?:ust)?|"
    r"sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|январ|феврал|март|апрел|"
    r"июн|июл|август|сентябр|октябр|ноябр|декабр)|\d{1,2}月",
    re.I,
)
_DAY_NUMBER = re.compile(r"\b\d{1,2}\b(?![:.]\d\d\b)|\d{1,2}[日号]")
_YEAR_ONLY = re.compile(r"^\D*\b(?:19|20)\d\d\b\D*$")
# "at 5pm", "7:30": a time of day, not a day to look at.
_TIME_ONLY = re.compile(r"^\W*(?:at\s+|в\s+)?\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm|h|ч)?\W*$", re.I)

_CYRILLIC_LANGUAGES = frozenset({"ru", "uk", "be", "bg", "sr", "kk", "mk"})
_CJK_LANGUAGES = frozenset({"zh", "ja", "ko"})
# Languages whose dates `memory.text.cjk_dates` reads instead of dateparser.
_READ_HERE = frozenset({"zh", "ja"})


@dataclass(frozen=True, slots=True)
class DateSpan:
    """A date phrase of a message and the days it names: [start, end) in epoch seconds."""

    phrase: str
    start: float
    end: float


_RELATIVE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|next|last|this)\b\s*(?:\w+\b)?"
    r"|\b(?:вчера|позавчера|сегодня|завтра|послезавтра|назад|следующ\w*|прошл\w*|эт\w+\s+недел\w*)\b"
    r"|昨天|前天|今天|明天|后天|下周|上周|下个|上个|本周|这周|天前|天后",
    re.IGNORECASE,
)
_RELATIVE_UNIT = re.compile(
    r"\b(?:ago|tomorrow|yesterday|today|tonight|week|weekend|month|year|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)\b|[а-яё]|" + f"[{HAN}]",
    re.IGNORECASE,
)


def mentions_relative_day(text: str) -> bool:
    """Whether `text` names a day relative to when it was said ("turns 7 next week",
    "завтра", "明天"): such a fact means nothing without the date it was said on."""
    return any(_RELATIVE_UNIT.search(m.group(0)) for m in _RELATIVE.finditer(text))


def has_date_words(text: str) -> bool:
    """Whether `text` holds anything date-like (a digit, a weekday, "ago", "вчера", "昨天")."""
    return _DATE_WORDS.search(text) is not None


def languages_for(text: str, languages: Sequence[str]) -> list[str]:
    """The configured languages whose script `text` is written in."""
    chosen = []
    cyrillic = CYRILLIC_CHAR.search(text) is not None
    cjk = CJK_CHAR.search(text) is not None
    latin = LATIN_CHAR.search(text) is not None
    for language in languages:
        base = language.split("-")[0].lower()
        if base in _CYRILLIC_LANGUAGES:
            wanted = cyrillic
        elif base in _CJK_LANGUAGES:
            wanted = cjk
        else:
            wanted = latin or not (cyrillic or cjk)
        if wanted:
            chosen.append(language)
    return chosen


_import_lock = threading.Lock()
# dateparser keeps module-level caches (loaded languages, compiled patterns) that it does
# not promise to fill safely from several threads; a call is about a millisecond, so the
# memory worker threads take turns.
_parse_lock = threading.Lock()
_search_dates: Any = None


def _searcher() -> Any:
    global _search_dates
    with _import_lock:
        if _search_dates is None:
            from dateparser.search import search_dates

            _search_dates = search_dates
    return _search_dates


def find_dates(text: str, now: datetime, languages: Sequence[str]) -> list[DateSpan]:
    """The past days `text` names, each as a range in `now`'s time zone (aware `now`).

    "last Tuesday", "yesterday", "on March 3" name a day; "two weeks ago", "last week" the
    week (Monday to Sunday) holding that day; "in March", "a month ago" the month; a bare
    year the year.
    """
    tz = now.tzinfo
    if tz is None:
        raise ValueError("now must be timezone-aware")
    if not text.strip():
        return []
    chosen = languages_for(text, languages)
    spans: list[DateSpan] = []
    if any(language.split("-")[0].lower() in _READ_HERE for language in chosen):
        # dateparser misreads these (see memory.cjk_dates): read them there.
        chosen = [lang for lang in chosen if lang.split("-")[0].lower() not in _READ_HERE]
        spans += _cjk_spans(text, now, tz)
    if not chosen or not has_date_words(text):
        return spans
    settings = {
        "RELATIVE_BASE": now.replace(tzinfo=None),
        "PREFER_DATES_FROM": "past",
        "RETURN_TIME_AS_PERIOD": True,
    }
    try:
        search = _searcher()
        with _parse_lock:
            found = search(text, languages=chosen, settings=settings) or []
    except Exception:  # the parser's own failure on odd input must not fail a turn
        log.debug("date search failed for %r", text, exc_info=True)
        return []
    for phrase, when in found:
        if not has_date_words(phrase) or _TIME_ONLY.match(phrase):
            continue
        start, end = _period(phrase, when, tz)
        if start > now.timestamp():
            continue
        spans.append(DateSpan(phrase, start, end))
    return spans


def _cjk_spans(text: str, now: datetime, tz: tzinfo) -> list[DateSpan]:
    spans = []
    for days in find_cjk_dates(text, now.date()):
        start = datetime.combine(days.first, time(), tz).timestamp()
        end = datetime.combine(days.last + timedelta(days=1), time(), tz).timestamp()
        spans.append(DateSpan(days.phrase, start, end))
    return spans


def _period(phrase: str, when: datetime, tz: tzinfo | None) -> tuple[float, float]:
    day = when.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    if _YEAR_ONLY.match(phrase):
        first, last = day.replace(month=1, day=1), day.replace(month=12, day=31)
    elif _WEEK.search(phrase):
        first = day - timedelta(days=day.weekday())
        last = first + timedelta(days=6)
    elif _MONTH_UNIT.search(phrase) or (
        _MONTH_NAME.search(phrase) and not _DAY_NUMBER.search(phrase)
    ):
        first = day.replace(day=1)
        last = day.replace(day=calendar.monthrange(day.year, day.month)[1])
    else:
        first = last = day
    start = first.replace(tzinfo=tz).timestamp()
    end = (last + timedelta(days=1)).replace(tzinfo=tz).timestamp()
    return start, end
