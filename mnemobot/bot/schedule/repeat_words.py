"""A repeat said in words, as a cron expression: pure functions.

The schedule tool's `repeat` takes cron or an interval; a small local model passes the
user's own words ("every Monday at 8", "по будням в 9", "每天早上7点"), which were refused.
Days of the week (or every day, weekdays, weekends) and a clock time, in the languages
the bot speaks (en, ru, de, es, zh), become "M H * * D"; the hour is read as `parsing`
reads a one-off time ("at 8 in the evening" is 20:00). A day of every month, in en, ru,
de and es, becomes croniter's cron for it: "every first Monday of the month" "M H * * 1#1",
"every last Friday" "M H * * L5" (croniter 7 reads "L5", not "5L"), "on the 3rd of every
month" "M H 3 * *", "the last day of every month" "M H L * *". Anything else is None,
and the tool reads the words as it did (cron, then an interval).
"""

from __future__ import annotations

import contextlib
import re

from mnemobot.bot.schedule.date_words import russian_day_words_as_numbers
from mnemobot.bot.schedule.month_words import (
    DAY,
    DAY_WORD,
    LAST,
    ORDINAL,
    WEEKDAY,
    WEEKDAY_NUMBERS,
    NoSuchDay,
    ordinal,
)
from mnemobot.bot.schedule.parsing import MAX_WHEN_CHARS, with_clock_times

# Every day, weekdays, weekends: cron's day-of-week field.
_EVERY_DAY = re.compile(
    r"\b(?:every\s?day|each day|daily)\b"
    r"|(?<!\w)(?:каждый день|ежедневно)(?!\w)"
    r"|\b(?:jeden tag|täglich)\b"
    r"|\b(?:cada día|todos los días|diariamente)\b"
    r"|每天|每日|天天",
    re.IGNORECASE,
)
# "Every evening": every day, at the part of the day `parsing` reads an hour in.
_EVERY_DAY_PART: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), part)
    for pattern, part in (
        (r"\bevery morning\b", "in the morning"),
        (r"\bevery afternoon\b", "in the afternoon"),
        (r"\bevery evening\b", "in the evening"),
        (r"\bevery night\b", "at night"),
        (r"(?<!\w)каждое утро(?!\w)", "утром"),
        (r"(?<!\w)каждый вечер(?!\w)", "вечером"),
        (r"(?<!\w)каждую ночь(?!\w)", "ночью"),
        (r"\bjeden morgen\b", "morgens"),
        (r"\bjeden nachmittag\b", "nachmittags"),
        (r"\bjeden abend\b", "abends"),
        (r"\bcada mañana\b", "por la mañana"),
        (r"\bcada tarde\b", "por la tarde"),
        (r"\bcada noche\b", "por la noche"),
    )
)
_WEEKDAYS = re.compile(
    r"\b(?:(?:on |every )?weekdays?|monday (?:to|through|-) friday)\b"
    r"|(?<!\w)(?:по будням|в будни|в будние дни|с понедельника по пятницу)(?!\w)"
    r"|\b(?:werktags|wochentags|an wochentagen|an werktagen|montag bis freitag)\b"
    r"|\b(?:entre semana|de lunes a viernes|los días laborables)\b"
    r"|工作日|周一(?:到|至)周五|星期一(?:到|至)星期五",
    re.IGNORECASE,
)
_WEEKENDS = re.compile(
    r"\b(?:(?:on |every )?weekends?)\b"
    r"|(?<!\w)(?:по выходным|в выходные)(?!\w)"
    r"|\b(?:am wochenende|an wochenenden|wochenends)\b"
    r"|\b(?:los fines de semana|cada fin de semana)\b"
    r"|周末",
    re.IGNORECASE,
)
# Day names, cron's numbers (0 Sunday): the stems inflected forms share ("по средам",
# "montags", "los sábados").
_DAY_NAMES: tuple[tuple[int, str], ...] = (
    (1, r"\bmon(?:day)?s?\b|(?<!\w)понедельник|\bmontags?\b|\blunes\b"),
    (2, r"\btue(?:s(?:day)?)?s?\b|(?<!\w)вторник|\bdienstags?\b|\bmartes\b"),
    (3, r"\bwed(?:nesday)?s?\b|(?<!\w)сред[аыуе]|(?<!\w)средам|\bmittwochs?\b|\bmiércoles\b"),
    (4, r"\bthu(?:r(?:s(?:day)?)?)?s?\b|(?<!\w)четверг|\bdonnerstags?\b|\bjueves\b"),
    (5, r"\bfri(?:day)?s?\b|(?<!\w)пятниц|\bfreitags?\b|\bviernes\b"),
    (6, r"\bsat(?:urday)?s?\b|(?<!\w)суббот|\b(?:samstags?|sonnabends?)\b|\bsábados?\b"),
    (0, r"\bsun(?:day)?s?\b|(?<!\w)воскресень|\bsonntags?\b|\bdomingos?\b"),
)
_DAY_PATTERNS = tuple(
    (number, re.compile(pattern, re.IGNORECASE)) for number, pattern in _DAY_NAMES
)
# Chinese: 周一, 星期一, 礼拜一 ... 周日/周天; 周一三五 is three days.
_ZH_DAY = re.compile(r"(?:周|星期|礼拜)([一二三四五六日天]+)")
_ZH_DAY_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 0, "天": 0}
# Between two days named, a range: "mon-fri", "Tuesday to Thursday", "周二到周四".
_RANGE = re.compile(
    r"\s*[-–—]\s*|\s+(?:to|through|thru|bis|по|a|al|hasta)\s+|\s*(?:到|至)\s*", re.IGNORECASE
)
# A count of a unit: an interval ("every 3 days at 9"), which is not said here.
_INTERVAL_COUNT = re.compile(
    r"(?<!\d)\d++\s*(?:minutes?|mins?|hours?|days?|weeks?|минут|час|дн|недел|minuten|stunden"
    r"|tage?n?|wochen|minutos|horas|días|semanas|分钟|小时|天|周)",
    re.IGNORECASE,
)
# Words that make a repeat more than days and a time ("every day except Sunday", "until
# Friday", "the first Monday"): refused, so the model gives cron or asks.
_MORE_THAN_DAYS = re.compile(
    r"\b(?:except|excluding|but|not|until|till|from|starting|since|first|second|third"
    r"|fourth|last|other|biweekly|fortnightly|alternate|for|this|next|during|within|time"
    r"|january|february|march|april|may|june|july|august|september|october|november"
    r"|december)\b"
    r"|(?<!\w)(?:кроме|не|до|с|со|начиная|перв\w*|втор(?:ой|ую|ое)|последн\w*|через)(?!\w)"
    r"|\b(?:außer|ausser|nicht|bis|ab|ersten|zweiten|letzten|jeden zweiten)\b"
    r"|\b(?:excepto|salvo|no|hasta|desde|primer\w*|segund\w*|últim\w*)\b"
    # "menos" is "except", but not in a clock time: "a las nueve menos cuarto" is 8:45.
    r"|\bmenos\b(?!\s+(?:cuarto|cinco|diez|veinte|veinticinco|\d{1,2})\b)"
    r"|除了|不|为止|第|隔",
    re.IGNORECASE,
)
# A zone named: the repeat is read in the chat's zone, so it is refused. Upper case only
# ("UTC", "EST", "Europe/Berlin"): checked case-sensitively.
_ZONE = re.compile(
    r"\b(?:(?i:utc|gmt)|[A-Z]{2,4}T|MSK)\b|\b[A-Z][a-z]+/[A-Z][A-Za-z_]+|(?i:\btime zone\b)"
)
# A day of every month: "every first Monday (of the month)", "on the last Friday of every
# month", "каждую последнюю пятницу месяца", "am ersten Montag jedes Monats", "el último
# día de cada mes", "todos los primeros lunes de mes", "on the 3rd of every month".
_EVERY = r"every|each|каждый|каждую|каждое|каждого|jeden|jede|cada|todos\s+los"
# ... or "every month" said first: "every month on the 3rd", "jeden Monat am 3.", "каждый
# месяц 5-го числа", "cada mes el día 3" (found live: refused).
_EVERY_MONTH_FIRST = (
    r"(?:every|each)\s+month|monthly|каждый\s+месяц|ежемесячно|jeden\s+monat|monatlich"
    r"|cada\s+mes|todos\s+los\s+meses|mensualmente"
)
_OF_EVERY_MONTH = (
    r"of\s+(?:every|each)\s+month|(?:every|each|a)\s+month|каждого\s+месяца|jedes\s+monats"
    r"|jeden\s+monats|de\s+cada\s+mes|de\s+todos\s+los\s+meses"
)
_OF_THE_MONTH = (
    r"of\s+the\s+month|in\s+the\s+month|месяца|des\s+monats|im\s+monat|del\s+mes|de\s+mes"
)
_MONTHLY = re.compile(
    rf"(?<!\w)(?:(?P<month_first>{_EVERY_MONTH_FIRST}),?\s+)?"
    rf"(?P<every>(?:{_EVERY})\s+)?(?:(?:on|am|el|в|во)\s+)?(?:the\s+)?"
    rf"(?:(?P<nth>{ORDINAL})\s+(?:(?P<weekday>{WEEKDAY})|(?P<the_day>{DAY_WORD}))|{DAY})"
    rf"(?:\s+(?P<month>{_OF_EVERY_MONTH}|{_OF_THE_MONTH}))?(?!\w)",
    re.IGNORECASE,
)
# The most weeks a month has part of: "the 5th Monday" is in some months, a 6th in none.
_MAX_NTH = 5
_LONGEST_MONTH = 31
_BARE_NUMBER = re.compile(r"\d")
_RUSSIAN_DAY_OF_MONTH = re.compile(r"числ[оа]", re.IGNORECASE)
_CLOCK = re.compile(r"(?<![\d:])([01]?\d|2[0-3]):([0-5]\d)(?![\d:])")


def cron_from_words(text: str) -> str | None:
    """ "every Monday at 8" -> "0 8 * * 1", "по будням в 9:30" -> "30 9 * * 1-5",
    "每天早上7点" -> "0 7 * * *", "every last Friday at 17" -> "0 17 * * L5"; None when the
    words are not days and a time."""
    if len(text) > MAX_WHEN_CHARS:
        # A few words say a repeat; 5,000 of them took 0.7 s to refuse.
        return None
    with contextlib.suppress(NoSuchDay):
        text = russian_day_words_as_numbers(text)  # "третьего числа" as "3-го числа"
    monthly = _MONTHLY.search(text)
    if monthly is not None and (
        monthly["month"]
        or monthly["month_first"]
        # "каждого 5-го числа": "число" is a day of the month, as "every 3rd" is not.
        or (monthly["every"] and (monthly["nth"] or _RUSSIAN_DAY_OF_MONTH.search(monthly[0])))
    ):
        return _monthly_cron(monthly, text)
    rest = _without_days(text)
    if _ZONE.search(text) or _MORE_THAN_DAYS.search(rest):
        return None
    # The hour as `parsing` reads it (a day-part word wins over how the hour is written:
    # "every day at 8 in the evening" is 20:00); the days' words are out, so none is
    # taken as a date.
    clocked = with_clock_times(rest)
    if _INTERVAL_COUNT.search(clocked):
        return None
    days = days_of_week(text)
    clock = clock_in(clocked)
    if days is None or clock is None:
        return None
    hour, minute = clock
    return f"{minute} {hour} * * {days}"


def _monthly_cron(monthly: re.Match[str], text: str) -> str | None:
    """The cron of a day of every month and the one time said with it; None if there is
    more ("every first Monday at 9 except in July") or no such day ("the 6th Monday")."""
    rest = text[: monthly.start()] + " " + text[monthly.end() :]
    if _ZONE.search(text) or _MORE_THAN_DAYS.search(rest) or days_of_week(rest) is not None:
        return None
    clocked = with_clock_times(rest)
    clock = clock_in(clocked)
    if clock is None or _INTERVAL_COUNT.search(clocked):
        return None
    if monthly["weekday"] is not None:
        nth = ordinal(monthly["nth"])
        weekday = (WEEKDAY_NUMBERS[monthly["weekday"].lower()] + 1) % 7  # cron's: 0 Sunday
        if nth == LAST:
            days = f"* * L{weekday}"
        elif 1 <= nth <= _MAX_NTH:
            days = f"* * {weekday}#{nth}"
        else:
            return None
    else:
        said = monthly["nth"] or monthly["day"] or monthly["day_es"] or monthly["day_word"]
        day = ordinal(said)
        if day == LAST:
            days = "L * *"
        elif 1 <= day <= _LONGEST_MONTH:
            days = f"{day} * *"
        else:
            return None
    hour, minute = clock
    return f"{minute} {hour} {days}"


def days_of_week(text: str) -> str | None:
    """Cron's day-of-week field the words name ("*", "1-5", "0,6", "1,3"); None if none."""
    if _WEEKDAYS.search(text):
        return "1-5"
    if _WEEKENDS.search(text):
        return "0,6"
    named = _named_days(text)
    if named:
        return ",".join(str(number) for number in sorted(named))
    if _EVERY_DAY.search(text) or any(p.search(text) for p, _ in _EVERY_DAY_PART):
        return "*"
    return None


def _named_days(text: str) -> set[int]:
    """The days named, with those between two joined as a range ("mon-fri")."""
    found = [
        (match.start(), match.end(), [number])
        for number, pattern in _DAY_PATTERNS
        for match in pattern.finditer(text)
    ]
    found += [
        (match.start(), match.end(), [_ZH_DAY_NUMBERS[day] for day in match[1]])
        for match in _ZH_DAY.finditer(text)
    ]
    found.sort()
    days: set[int] = set()
    for index, (_, end, numbers) in enumerate(found):
        days.update(numbers)
        if index + 1 < len(found):
            start, _, following = found[index + 1]
            if _RANGE.fullmatch(text[end:start]):
                first, last = numbers[-1], following[0]
                days.update((first + step) % 7 for step in range((last - first) % 7 + 1))
    return days


def clock_in(clocked: str) -> tuple[int, int] | None:
    """The one clock time of a text `with_clock_times` rewrote, as (hour, minute); None if
    none, several, or an hour it could not read ("at 9 and 18")."""
    clocks = {(int(h), int(m)) for h, m in _CLOCK.findall(clocked)}
    if len(clocks) != 1 or _BARE_NUMBER.search(_CLOCK.sub(" ", clocked)):
        return None
    return clocks.pop()


def _without_days(text: str) -> str:
    """`text` without its day words, which `with_clock_times` might read as a date word;
    "every evening" as the part of the day it names."""
    for pattern, part in _EVERY_DAY_PART:
        text = pattern.sub(f" {part} ", text)
    for pattern in (_EVERY_DAY, _WEEKDAYS, _WEEKENDS, _ZH_DAY, *(p for _, p in _DAY_PATTERNS)):
        text = pattern.sub(" ", text)
    return text
