"""Russian clock times said in words, as the digits `time_words` reads: a pure function.

Russian counts minutes into the coming hour, named by its ordinal: "пять минут шестого" is
5:05, "четверть восьмого" 7:15, "половина восьмого" (and "полвосьмого") 7:30; and back
from the coming hour, named by its number: "без четверти девять" is 8:45, "без десяти
девять" 8:50. Found live: dateparser read "в пять минут шестого" as "in five minutes" and
"в десять минут восьмого" as 19:00, silently; "без четверти девять" and "в девять утра" not
at all. The hour left ("в 5:05 вечера") gets its half of the day from the words around it,
as any clock time does.
"""

from __future__ import annotations

import re

# Hours as the coming hour's ordinal (genitive): "шестого" is the sixth, so 5:xx.
_ORDINAL_HOURS = {
    "первого": 1, "второго": 2, "третьего": 3, "четвёртого": 4, "четвертого": 4,
    "пятого": 5, "шестого": 6, "седьмого": 7, "восьмого": 8, "девятого": 9,
    "десятого": 10, "одиннадцатого": 11, "двенадцатого": 12,
}  # fmt: skip
# Hours by their number, as said after "без ...": "без четверти час" is 12:45.
_CARDINAL_HOURS = {
    "час": 1, "один": 1, "два": 2, "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7,
    "восемь": 8, "девять": 9, "десять": 10, "одиннадцать": 11, "двенадцать": 12,
}  # fmt: skip
# Minutes past: "пять минут шестого", "двадцать пять минут восьмого".
_MINUTES_PAST = {
    "одну": 1, "одна": 1, "две": 2, "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7,
    "восемь": 8, "девять": 9, "десять": 10, "пятнадцать": 15, "двадцать": 20,
    "двадцать пять": 25, "тридцать": 30,
}  # fmt: skip
# Minutes to, in the genitive: "без пяти девять", "без двадцати пяти восемь".
_MINUTES_TO = {
    "одной": 1, "двух": 2, "трёх": 3, "трех": 3, "четырёх": 4, "четырех": 4, "пяти": 5,
    "десяти": 10, "пятнадцати": 15, "двадцати": 20, "двадцати пяти": 25, "четверти": 15,
}  # fmt: skip


def _words(table: dict[str, int]) -> str:
    return "|".join(sorted(table, key=len, reverse=True))


_ORDINAL = rf"(?P<ordinal>{_words(_ORDINAL_HOURS)})"
_CARDINAL = rf"(?P<cardinal>{_words(_CARDINAL_HOURS)}|\d{{1,2}})"
_AT = r"(?P<at>\bв\s+)?"
_PAST = re.compile(
    rf"(?<!\w){_AT}(?:"
    rf"(?P<past>{_words(_MINUTES_PAST)}|\d{{1,2}})\s+минут[уы]?\s+"
    r"|(?P<quarter>четверть)\s+"
    r"|(?P<half>половин[аеуы]\s+|пол[\s-]*)"
    rf"){_ORDINAL}(?!\w)",
    re.IGNORECASE,
)
_TO = re.compile(
    rf"(?<!\w){_AT}без\s+(?P<to>{_words(_MINUTES_TO)}|\d{{1,2}})(?:\s+минут[ы]?)?\s+"
    rf"{_CARDINAL}(?!\w)(?!:)",
    re.IGNORECASE,
)
# An hour by its number after "в", before a word of the day's half or "часов":
# "в девять утра", "в пять вечера" (dateparser reads neither).
_HOUR_WORD = re.compile(
    rf"(?<!\w)(?P<at>в\s+)(?P<cardinal>{_words(_CARDINAL_HOURS)})"
    r"(?=\s+(?:час(?:а|ов)?\s+)?(?:утра|вечера|дня|ночи)\b|\s+час(?:а|ов)\b)",
    re.IGNORECASE,
)


def _before(hour: int) -> int:
    """The hour before `hour` on a 12-hour dial: the one before "первого" is 12."""
    return hour - 1 if hour > 1 else 12


def _past(match: re.Match[str]) -> str:
    hour = _before(_ORDINAL_HOURS[match["ordinal"].lower()])
    if match["quarter"]:
        minute = 15
    elif match["half"]:
        minute = 30
    else:
        said = match["past"].lower()
        minute = int(said) if said.isdigit() else _MINUTES_PAST[said]
    if minute > 59:
        return match[0]
    return f"{match['at'] or 'в '}{hour}:{minute:02d}"


def _to(match: re.Match[str]) -> str:
    said, hour_said = match["to"].lower(), match["cardinal"].lower()
    minutes = int(said) if said.isdigit() else _MINUTES_TO[said]
    hour = int(hour_said) if hour_said.isdigit() else _CARDINAL_HOURS[hour_said]
    if not 1 <= minutes <= 59 or not 1 <= hour <= 24:
        return match[0]
    return f"{match['at'] or 'в '}{_before(hour) if hour <= 12 else hour - 1}:{60 - minutes:02d}"


def russian_clock_words(text: str) -> str:
    """Russian clock times in words as digits: "в пять минут шестого вечера" -> "в 5:05
    вечера", "без четверти девять" -> "в 8:45", "в девять утра" -> "в 9 утра"."""
    text = _PAST.sub(_past, text)
    text = _TO.sub(_to, text)
    return _HOUR_WORD.sub(lambda m: f"{m['at']}{_CARDINAL_HOURS[m['cardinal'].lower()]}", text)
