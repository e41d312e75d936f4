"""Spanish clock times said in words, as the digits `time_words` reads: a pure function.

Spanish adds minutes to the hour or takes them from it: "a las ocho y media" is 8:30, "a
las ocho y cuarto" 8:15, "a las nueve menos cuarto" 8:45, "a la una menos diez" 12:50.
Found live: each was refused. The hour is a number word after "la"/"las" ("a las ocho"),
or any hour word with its minutes ("ocho y media"); "dos" alone, or "las dos semanas",
stays a count. The clock time left ("a las 8:30 de la tarde") gets its half of the day
from the words around it, as any clock time does.
"""

from __future__ import annotations

import re

_UNITS = ("uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve")
_TEENS = ("diez", "once", "doce", "trece", "catorce", "quince", "dieciséis", "diecisiete",
          "dieciocho", "diecinueve")  # fmt: skip
_TWENTIES = ("veintiuno", "veintidós", "veintitrés", "veinticuatro", "veinticinco",
             "veintiséis", "veintisiete", "veintiocho", "veintinueve")  # fmt: skip
_TENS = ("treinta", "cuarenta", "cincuenta")

HOUR_WORDS = {word: hour for hour, word in enumerate((*_UNITS, *_TEENS[:3]), 1)}
HOUR_WORDS["una"] = 1


def _minute_words() -> dict[str, int]:
    """ "cinco" 5, "veinticinco" 25, "cuarenta y cinco" 45: every minute of an hour."""
    words = {word: minute for minute, word in enumerate(_UNITS, 1)}
    words |= {word: minute for minute, word in enumerate(_TEENS, 10)}
    words["veinte"] = 20
    words |= {word: minute for minute, word in enumerate(_TWENTIES, 21)}
    for tens, ten in enumerate(_TENS, 3):
        words[ten] = tens * 10
        for unit, one in enumerate(_UNITS, 1):
            words[f"{ten} y {one}"] = tens * 10 + unit
    return words


MINUTE_WORDS = _minute_words()
_ACCENTS = str.maketrans("áéíóú", "aeiou")


def _plain(said: str) -> str:
    return re.sub(r"\s+", " ", said.lower()).translate(_ACCENTS)


_PLAIN_HOURS = {_plain(word): hour for word, hour in HOUR_WORDS.items()}
_PLAIN_MINUTES = {_plain(word): minute for word, minute in MINUTE_WORDS.items()}


def _alternation(words: dict[str, int]) -> str:
    # Each word with its accents and without; the longer first; a space as any run of them.
    spelled = set(words) | {_plain(word) for word in words}
    return "|".join(word.replace(" ", r"\s+") for word in sorted(spelled, key=len, reverse=True))


_HOUR = rf"(?P<hour>{_alternation(HOUR_WORDS)})"
_NOT_A_COUNT = r"(?!\s*(?:minutos?|horas?|d[ií]as?|semanas?|mes(?:es)?|años?|veces)\b)"
_MINUTES = (
    rf"(?P<half>media)|(?P<quarter>cuarto)|(?P<minutes>{_alternation(MINUTE_WORDS)}|\d{{1,2}})"
    r"(?:\s+minutos?)?"
)
# "(las) ocho y media", "(las) nueve menos cuarto", "las ocho", "la una".
_CLOCK = re.compile(
    rf"\b(?:(?P<article>las?)\s+)?{_HOUR}"
    rf"(?:\s+(?P<way>y|menos)\s+(?:{_MINUTES})\b{_NOT_A_COUNT})?\b{_NOT_A_COUNT}",
    re.IGNORECASE,
)


def _clock(match: re.Match[str]) -> str:
    if match["way"] is None and match["article"] is None:
        return match[0]  # "dos", alone: a count, not an hour
    hour = _PLAIN_HOURS[_plain(match["hour"])]
    article = f"{match['article']} " if match["article"] else ""
    if match["way"] is None:
        return f"{article}{hour}"
    if match["half"]:
        if match["way"].lower() == "menos":
            return match[0]  # "menos media" is no Spanish time
        minutes = 30
    elif match["quarter"]:
        minutes = 15
    else:
        said = _plain(match["minutes"])
        minutes = int(said) if said.isdigit() else _PLAIN_MINUTES[said]
    if not 1 <= minutes <= 59:
        return match[0]
    if match["way"].lower() == "y":
        return f"{article}{hour}:{minutes:02d}"
    before = hour - 1 if hour > 1 else 12
    # "la una menos diez" is at twelve: "las 12:50".
    return f"{'las ' if article else ''}{before}:{60 - minutes:02d}"


def spanish_clock_words(text: str) -> str:
    """Spanish clock times in words as digits: "a las ocho y media" -> "a las 8:30", "a
    las nueve menos cuarto" -> "a las 8:45", "a la una" -> "a la 1"."""
    return _CLOCK.sub(_clock, text)
