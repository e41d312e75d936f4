"""Words for times that dateparser does not read, as the digits and clock times it does:
pure functions and their tables, for `parsing`.

- Numbers in words: "两小时后" -> "2小时后", "二十点" -> "20点", "half an hour" -> "30
  minutes", "an hour and a half" -> "90 minutes".
- Minutes in words: "half past 9" -> "9:30", "quarter to 9" -> "8:45", "halb 9" -> "8:30"
  (German counts to the coming hour), "9 y media" -> "9:30", "8点一刻" -> "8:15"
  (clock words with the hour in words: `russian_clock`, `german_clock`, `spanish_clock`,
  `english_clock`).
- Noon and midnight: "at noon" -> "at 12:00", "midnight" -> "at 12" (the twelve of a night:
  `parsing` puts it after the midnight that follows).
- An hour right after a day word, with no "at": "tomorrow 9" -> "tomorrow at 9", "Friday
  9" -> "Friday at 9" (dateparser read "Friday 9" as 2 September).
- The next day's word, for an hour past the coming midnight: "завтра" -> "послезавтра",
  "2026-12-05" -> "2026-12-06".
- About a time: "around 9pm" -> "at 9pm", "gegen 21 Uhr" -> "um 21 Uhr", "около 9 вечера"
  -> "в 9 вечера", "sobre las 9" -> "a las 9", "9点左右" -> "9点"; "9 o'clock" -> "at 9". A
  reminder fires at one time: the hour said is the best reading of "about".
- Spanish "pasado mañana" as "en 2 días" (dateparser reads neither it nor "pasado mañana a
  las 10").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

# ------------------------------------------------------------------ numbers in words

_CHINESE_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7}
_CHINESE_DIGITS |= {"八": 8, "九": 9}
CHINESE_NUMBER = r"[二三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九]"
_CHINESE_COUNT = re.compile(
    rf"(?P<count>{CHINESE_NUMBER})(?=\s*个?\s*(?:小时|钟头|分钟|天|周|星期|点))"
)
_WORD_DURATIONS = {
    re.compile(r"\ban hour and a half\b", re.IGNORECASE): "90 minutes",
    re.compile(r"\b(?:half an|a half|half a|half)[ -]hour\b", re.IGNORECASE): "30 minutes",
    re.compile(r"\b(?:anderthalb|eineinhalb) stunden\b", re.IGNORECASE): "90 Minuten",
    re.compile(r"\beiner halben stunde\b", re.IGNORECASE): "30 Minuten",
    re.compile(r"\b(?:una )?hora y media\b", re.IGNORECASE): "90 minutos",
    re.compile(r"\bmedia hora\b", re.IGNORECASE): "30 minutos",
    # "через пол часа", "пол-часа": the one word, written apart (found live: refused).
    re.compile(r"(?<!\w)пол[\s-]?часа(?!\w)", re.IGNORECASE): "30 минут",
    re.compile(r"一个半(?:小时|钟头)"): "90分钟",
    re.compile(r"半个?(?:小时|钟头)"): "30分钟",
    re.compile(r"一个(?=小时|钟头)"): "1",
}


def chinese_number(said: str) -> int:
    """ "二十一" -> 21, "十三" -> 13, "九" -> 9."""
    if "十" not in said:
        return _CHINESE_DIGITS[said]
    tens, _, units = said.partition("十")
    return (_CHINESE_DIGITS[tens] if tens else 1) * 10 + (_CHINESE_DIGITS[units] if units else 0)


def numbers_as_digits(text: str) -> str:
    """Durations and Chinese counts in words as digits (see the module docstring)."""
    for pattern, minutes in _WORD_DURATIONS.items():
        text = pattern.sub(minutes, text)
    return _CHINESE_COUNT.sub(lambda match: str(chinese_number(match["count"])), text)


# ----------------------------------------------------------------- minutes in words


def _clock(hour: int, minute: int) -> str:
    return f"{hour % 24}:{minute:02d}"


_MINUTE_WORDS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), said)
    for pattern, said in (
        (r"\bhalf past (\d{1,2})\b", lambda m: _clock(int(m[1]), 30)),
        (r"\b(?:a )?quarter past (\d{1,2})\b", lambda m: _clock(int(m[1]), 15)),
        (r"\b(?:a )?quarter to (\d{1,2})\b", lambda m: _clock(int(m[1]) - 1, 45)),
        (r"\bhalb (\d{1,2})\b", lambda m: _clock(int(m[1]) - 1, 30)),
        (r"\bviertel nach (\d{1,2})\b", lambda m: _clock(int(m[1]), 15)),
        (r"\bviertel vor (\d{1,2})\b", lambda m: _clock(int(m[1]) - 1, 45)),
        (r"\b(\d{1,2}) y media\b", lambda m: _clock(int(m[1]), 30)),
        (r"\b(\d{1,2}) y cuarto\b", lambda m: _clock(int(m[1]), 15)),
        (r"\b(\d{1,2}) menos cuarto\b", lambda m: _clock(int(m[1]) - 1, 45)),
        (r"(\d{1,2})\s*点\s*一刻", lambda m: _clock(int(m[1]), 15)),
        (r"(\d{1,2})\s*点\s*三刻", lambda m: _clock(int(m[1]), 45)),
        # "at 9.30", "um 9.30": a clock time written with a dot.
        (r"\b(at|um|в|a las)\s+(\d{1,2})\.(\d{2})\b", lambda m: f"{m[1]} {m[2]}:{m[3]}"),
    )
)
# Noon, said as a word: its clock time, with each language's word for "at".
_NOON = (
    (re.compile(r"\b(?:at )?(?:12 )?noon\b|\bmidday\b", re.IGNORECASE), "at 12:00"),
    (re.compile(r"(?<!\w)(?:в )?полдень(?!\w)", re.IGNORECASE), "в 12:00"),
    (re.compile(r"\b(?:um 12 uhr )?mittags?\b", re.IGNORECASE), "um 12:00"),
    (re.compile(r"\b(?:a las 12 del )?(?:a )?mediodía\b", re.IGNORECASE), "a las 12:00"),
    (re.compile(r"中午(?:12点)?"), "12:00"),
)
# Midnight, as the twelve of a night, with each language's word for "at".
_MIDNIGHT = (
    (re.compile(r"(?:\bat\s+)?(?:\b12(?::00)?\s*)?\bmidnight\b", re.IGNORECASE), "at 12"),
    (re.compile(r"(?:\bum\s+)?\bmitternacht\b", re.IGNORECASE), "um 12"),
    (re.compile(r"(?<!\w)(?:в\s+)?полночь(?!\w)", re.IGNORECASE), "в 12"),
    (re.compile(r"\b(?:a\s+)?medianoche\b", re.IGNORECASE), "a las 12"),
    (re.compile(r"午夜12点|午夜|半夜12点"), "12点"),
)


def minutes_as_clock(text: str) -> tuple[str, bool]:
    """Minutes, noon and midnight in words as clock times (see the module docstring); and
    whether a midnight was said."""
    for pattern, said in _MINUTE_WORDS:
        text = pattern.sub(said, text)
    for pattern, noon in _NOON:
        text = pattern.sub(noon, text)
    midnight = False
    for pattern, twelve in _MIDNIGHT:
        text, found = pattern.subn(twelve, text)
        midnight = midnight or found > 0
    return text, midnight


# ------------------------------------------------------ an hour after a day word

# A day word, then an hour with no "at": the hour is meant ("tomorrow 9", "Friday 9").
_DAY_THEN_HOUR: tuple[tuple[str, str], ...] = (
    (
        r"\b(?:today|tomorrow|tonight|mon|tue|wed|thu|fri|sat|sun)(?:day|s|sday|nesday|rsday"
        r"|urday)?(?:\s+(?:morning|afternoon|evening|night))?,?\s+"
        r"(?=\d{1,2}\b(?![:.,]\d|\s*(?:st|nd|rd|th|minutes?|hours?|days?)\b))",
        "at ",
    ),
    (
        r"(?<!\w)(?:сегодня|завтра|послезавтра|(?:в\s+)?(?:понедельник|вторник|среду|четверг"
        r"|пятницу|субботу|воскресенье)|пятница|суббота)\s+(?=\d{1,2}(?![\d:.,])(?!\s*(?:минут|час|дн)))",
        "в ",
    ),
    (
        r"\b(?:heute|morgen|übermorgen|(?:am\s+)?(?:montag|dienstag|mittwoch|donnerstag|freitag"
        r"|samstag|sonntag))\s+(?=\d{1,2}(?![\d:.,])(?!\s*(?:minuten|stunden|tage)))",
        "um ",
    ),
    (
        r"\b(?:hoy|mañana|(?:el\s+)?(?:lunes|martes|miércoles|jueves|viernes|sábado|domingo))"
        r"\s+(?=\d{1,2}(?![\d:.,])(?!\s*(?:minutos|horas|días)))",
        "a las ",
    ),
)
# An ISO date (a day or date `date_words` read), then an hour: "2026-12-04 9".
_DATE_THEN_HOUR = (
    r"(?<![\d-])\d{4}-\d{2}-\d{2},?\s+"
    r"(?=\d{1,2}\b(?![:.,]\d|\s*(?:minutes?|hours?|days?|минут|час|дн|minuten|stunden|tage"
    r"|minutos|horas|días)))"
)
_DAY_THEN_HOUR += ((_DATE_THEN_HOUR, "at "),)
# ... or the hour first: "9 tomorrow".
_HOUR_THEN_DAY = r"(?<![\w:.,@])(?<!\bat\s)(?<!\bin\s)(?=\d{1,2}\s+(?:tomorrow|today|tonight)\b)"
_DAY_THEN_HOUR += ((_HOUR_THEN_DAY, "at "),)
_DAY_THEN_HOUR_PATTERNS = tuple(
    (re.compile(pattern, re.IGNORECASE), at) for pattern, at in _DAY_THEN_HOUR
)


# An article before a weekday, which dateparser does not read: "el viernes", "am Freitag".
_WEEKDAY_ARTICLE = re.compile(
    r"\b(?:el|este)\s+(?=(?:lunes|martes|miércoles|jueves|viernes|sábado|domingo)\b)"
    r"|\bam\s+(?=(?:montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag)\b)",
    re.IGNORECASE,
)


def hour_after_day_word(text: str) -> str:
    """ "tomorrow 9" -> "tomorrow at 9", "Freitag 9" -> "Freitag um 9"; "el viernes" and
    "am Freitag" without their article."""
    text = _WEEKDAY_ARTICLE.sub("", text)
    for pattern, at in _DAY_THEN_HOUR_PATTERNS:
        # The pattern ends before the hour: "at" goes where it ends.
        text = pattern.sub(rf"\g<0>{at}", text)
    return text


# ------------------------------------------------------------------- the next day

# "Tomorrow" and "today" as the day after, for an hour past the midnight that follows
# ("завтра в 1 ночи" is the day after tomorrow's 01:00, "сегодня в 2 ночи" tomorrow's
# 02:00); the day after tomorrow as three days on. The first found moves, once.
_NEXT_DAY = (
    (re.compile(r"\bday after tomorrow\b", re.IGNORECASE), "in 3 days"),
    (re.compile(r"(?<!\w)послезавтра(?!\w)", re.IGNORECASE), "через 3 дня"),
    (re.compile(r"\bübermorgen\b", re.IGNORECASE), "in 3 Tagen"),
    (re.compile(r"\bpasado mañana\b", re.IGNORECASE), "en 3 días"),
    (re.compile(r"后天"), "3天后"),
    (re.compile(r"\btomorrow\b", re.IGNORECASE), "day after tomorrow"),
    (re.compile(r"(?<!\w)завтра(?!\w)", re.IGNORECASE), "послезавтра"),
    (re.compile(r"\bmorgen\b", re.IGNORECASE), "übermorgen"),
    (re.compile(r"明天"), "后天"),
    (re.compile(r"\btoday\b", re.IGNORECASE), "tomorrow"),
    (re.compile(r"(?<!\w)сегодня(?!\w)", re.IGNORECASE), "завтра"),
    (re.compile(r"\bheute\b", re.IGNORECASE), "morgen"),
    (re.compile(r"\bhoy\b", re.IGNORECASE), "mañana"),
    (re.compile(r"今天"), "明天"),
)


_ISO_DATE = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d-])")


def next_day_words(text: str) -> str:
    """`text` with its day word moved a day on (see `_NEXT_DAY`), if it has one; else its
    ISO date ("5 декабря в 1 ночи" is the 6th's 01:00, as "завтра в 1 ночи" is the day
    after tomorrow's)."""
    for pattern, later in _NEXT_DAY:
        text, moved = pattern.subn(later, text, count=1)
        if moved:
            return text

    def day_after(match: re.Match[str]) -> str:
        try:
            return (
                f"{date(int(match[1]), int(match[2]), int(match[3])) + timedelta(days=1):%Y-%m-%d}"
            )
        except (ValueError, OverflowError):  # no such date, or the last there is
            return match[0]

    return _ISO_DATE.sub(day_after, text, count=1)


# ------------------------------------------------------------------ about a time

# Words for "about" before (or, in Chinese, after) a clock time, and what is left: the
# language's "at", which makes the number an hour. Durations keep theirs ("in about 2
# hours" -> "in 2 hours").
_NOT_A_DURATION = (
    r"(?!\d*(?:[:.]\d{2})?\s*(?:hours?|minutes?|mins?|days?|weeks?|stunden|minuten|tage?n?"
    r"|час|минут|дн|недел|horas?|minutos?|días?|semanas?)\b)"
)
_ABOUT: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rest)
    for pattern, rest in (
        (r"\bin\s+(?:about|around|roughly|approximately|approx\.)\s+(?=\d)", "in "),
        (
            rf"(?:\bat\s+)?\b(?:around|about|roughly|approximately|approx\.|circa|ca\.)\s+"
            rf"(?:at\s+)?(?=\d{_NOT_A_DURATION})",
            "at ",
        ),
        (r"\bin\s+(?:etwa|ungefähr|circa|ca\.)\s+(?=\d)", "in "),
        (
            rf"(?:\bum\s+)?\b(?:so\s+)?(?:gegen|etwa|ungefähr|circa|ca\.)\s+(?:um\s+)?"
            rf"(?=\d{_NOT_A_DURATION})",
            "um ",
        ),
        (
            rf"(?<!\w)(?:в\s+)?(?:около|примерно|приблизительно|где-то|в районе)\s+(?:в\s+)?"
            rf"(?=\d{_NOT_A_DURATION})",
            "в ",
        ),
        (r"\b(?:sobre|hacia|alrededor de|a eso de|como a)\s+(?=las?\s+\d)", "a "),
        (r"(?:大约|大概|差不多)\s*(?=\d{1,2}\s*点)", ""),
        (r"(?<=点)(\s*(?:半|\d{1,2}\s*分?)?)\s*(?:左右|前后)", r"\1"),
        (r"(?<=\d分)\s*(?:左右|前后)", ""),
        # "9 o'clock": an hour, as "9 Uhr" is.
        (r"(?:\bat\s+)?\b(\d{1,2})\s*o['’]?\s?clock\b", r"at \1"),
    )
)


def about_as_at(text: str) -> str:
    """ "around 9pm" -> "at 9pm", "gegen 21 Uhr" -> "um 21 Uhr" (see `_ABOUT`)."""
    for pattern, rest in _ABOUT:
        text = pattern.sub(rest, text)
    return text


# --------------------------------------------------------------- day words read

# Day words dateparser does not read, as words it does.
_DAY_WORDS = ((re.compile(r"\bpasado\s+mañana\b", re.IGNORECASE), "en 2 días"),)


def day_words_read(text: str) -> str:
    """ "pasado mañana a las 10:00" -> "en 2 días a las 10:00"."""
    for pattern, read in _DAY_WORDS:
        text = pattern.sub(read, text)
    return text
