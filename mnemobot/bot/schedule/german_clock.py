"""German clock times said in words, as the digits `time_words` reads: a pure function.

German counts the half hour into the coming hour: "halb neun" is 8:30, not 9:30 (nor
21:30); "Viertel nach acht" 8:15, "Viertel vor neun" 8:45, and, in the south and east,
"Viertel neun" 8:15 and "dreiviertel neun" 8:45. Minutes go past or to an hour ("zehn nach
acht" 8:10, "fünf vor halb neun" 8:25), or after its "Uhr" ("acht Uhr dreißig"). Found
live: "um halb neun" and "um Viertel vor neun" were refused, and "jeden Monat am 3. um
halb neun" read as no repeat. A "halb" with no hour after it ("in einer halben Stunde",
"halb so lang") is left alone. The clock time left ("um 8:30 abends") gets its half of
the day from the words around it, as any clock time does.
"""

from __future__ import annotations

import re

_UNITS = ("eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun")
_TEENS = ("zehn", "elf", "zwölf", "dreizehn", "vierzehn", "fünfzehn", "sechzehn", "siebzehn",
          "achtzehn", "neunzehn")  # fmt: skip
_TENS = ("zwanzig", "dreißig", "vierzig", "fünfzig")

HOUR_WORDS = {word: hour for hour, word in enumerate((*_UNITS, *_TEENS[:3]), 1)}


def _minute_words() -> dict[str, int]:
    """ "fünf" 5, "fünfzehn" 15, "fünfundvierzig" 45: every minute of an hour."""
    words = {word: minute for minute, word in enumerate(_UNITS, 1)}
    words["ein"] = words["eine"] = 1
    words |= {word: minute for minute, word in enumerate(_TEENS, 10)}
    for tens, ten in enumerate(_TENS, 2):
        words[ten] = tens * 10
        for unit, one in enumerate(_UNITS, 1):
            words[f"{'ein' if unit == 1 else one}und{ten}"] = tens * 10 + unit
    return words


MINUTE_WORDS = _minute_words()
# Written without ü and ß, as keyboards without them do: "fuenf", "zwoelf", "dreissig".
_SPELLINGS = (("ü", "ue"), ("ß", "ss"), ("ö", "oe"))


def _plain(said: str) -> str:
    said = re.sub(r"\s+", " ", said.lower())
    for letter, written in _SPELLINGS:
        said = said.replace(written, letter)
    return said


def _alternation(words: dict[str, int]) -> str:
    spelled = set(words)
    for word in words:
        for letter, written in _SPELLINGS:
            word = word.replace(letter, written)
        spelled.add(word)
    return "|".join(sorted(spelled, key=len, reverse=True))  # the longer first


_HOUR = rf"(?P<hour>{_alternation(HOUR_WORDS)})"
_MINUTES = rf"(?P<minutes>{_alternation(MINUTE_WORDS)}|\d{{1,2}})(?:\s+minuten?)?"
_NOT_A_COUNT = r"(?!\s*(?:minuten?|stunden?|tage?n?|wochen?|monate?n?|jahre?n?|mal)\b)"

# "halb neun", "Viertel nach acht", "dreiviertel neun", "zehn vor halb neun".
_TO_AN_HOUR = re.compile(
    r"\b(?:"
    rf"(?:{_MINUTES}\s+(?P<around_half>nach|vor)\s+)?(?P<half>halb)"
    r"|(?P<three_quarters>dreiviertel|drei\s+viertel)"
    r"|(?P<quarter>viertel)(?:\s+(?P<quarter_way>nach|vor))?"
    rf"|{_MINUTES.replace('minutes', 'count')}\s+(?P<way>nach|vor)"
    rf")\s+{_HOUR}\b{_NOT_A_COUNT}",
    re.IGNORECASE,
)
# An hour said as one: after "um" ("um acht"), or before "Uhr" ("acht Uhr dreißig").
_HOUR_AND_MINUTES = re.compile(
    rf"\b(?:(?P<at>um|gegen)\s+{_HOUR}\b{_NOT_A_COUNT}(?P<uhr>\s+uhr\b)?"
    rf"|(?P<hour_before_uhr>{_alternation(HOUR_WORDS)}|ein)\s+uhr\b)"
    rf"(?:\s+(?P<minute>{_alternation(MINUTE_WORDS)})\b{_NOT_A_COUNT})?",
    re.IGNORECASE,
)


def _before(hour: int) -> int:
    """The hour before `hour` on a 12-hour dial: the one before "eins" is 12."""
    return hour - 1 if hour > 1 else 12


def _number(said: str) -> int:
    return int(said) if said.isdigit() else MINUTE_WORDS[_plain(said)]


def _to_an_hour(match: re.Match[str]) -> str:
    hour = HOUR_WORDS[_plain(match["hour"])]
    if match["half"]:
        minute = 30
        if match["minutes"]:
            past = _number(match["minutes"])
            if not 1 <= past <= 29:
                return match[0]
            minute += past if match["around_half"].lower() == "nach" else -past
        return f"{_before(hour)}:{minute:02d}"
    if match["three_quarters"]:
        return f"{_before(hour)}:45"
    if match["quarter"]:
        way = (match["quarter_way"] or "").lower()
        # "Viertel neun" (said alone) is the first quarter into nine: 8:15.
        return f"{hour}:15" if way == "nach" else f"{_before(hour)}:{45 if way else 15}"
    minutes = _number(match["count"])
    if not 1 <= minutes <= 59:
        return match[0]
    if match["way"].lower() == "nach":
        return f"{hour}:{minutes:02d}"
    return f"{_before(hour)}:{60 - minutes:02d}"


def _hour_and_minutes(match: re.Match[str]) -> str:
    said = match["hour"] or match["hour_before_uhr"]
    hour = 1 if _plain(said) == "ein" else HOUR_WORDS[_plain(said)]
    at = f"{match['at']} " if match["at"] else ""
    if match["minute"]:
        return f"{at}{hour}:{MINUTE_WORDS[_plain(match['minute'])]:02d}"
    return f"{at}{hour}{' Uhr' if match['uhr'] or match['hour_before_uhr'] else ''}"


def german_clock_words(text: str) -> str:
    """German clock times in words as digits: "um halb neun" -> "um 8:30", "um Viertel
    vor neun" -> "um 8:45", "acht Uhr dreißig" -> "8:30", "um acht" -> "um 8"."""
    text = _TO_AN_HOUR.sub(_to_an_hour, text)
    return _HOUR_AND_MINUTES.sub(_hour_and_minutes, text)
