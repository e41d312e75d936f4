"""English clock times said in words, as the digits `time_words` reads: a pure function.

"at half past eight", "at quarter to nine", "at ten past seven", "at eight thirty", "at
eight", "eight o'clock", "eight pm": found live, each refused ("could not read") or, for
"at eight", read by dateparser as August. The hour is a number word from one to twelve;
the minutes a number word ("thirty", "forty-five", "oh five"). The clock time left ("at
8:30") gets its half of the day from the words around it, as any clock time does
("tonight at eight" is 20:00).
"""

from __future__ import annotations

import re

_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen")  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty")

HOUR_WORDS = {word: hour for hour, word in enumerate((*_UNITS, *_TEENS[:3]), 1)}


def _minute_words() -> dict[str, int]:
    """ "five" 5, "fifteen" 15, "forty-five" 45, "oh five" 5: every minute of an hour."""
    words = {word: minute for minute, word in enumerate(_UNITS, 1)}
    words |= {word: minute for minute, word in enumerate(_TEENS, 10)}
    for tens, ten in enumerate(_TENS, 2):
        words[ten] = tens * 10
        for unit, one in enumerate(_UNITS, 1):
            words[f"{ten}-{one}"] = words[f"{ten} {one}"] = tens * 10 + unit
    for unit, one in enumerate(_UNITS, 1):
        words[f"oh {one}"] = words[f"o {one}"] = unit
    return words


MINUTE_WORDS = _minute_words()


def _alternation(words: dict[str, int]) -> str:
    # The longer first: "twenty-five" before "twenty"; a space said as any run of spaces.
    ordered = sorted(words, key=len, reverse=True)
    return "|".join(word.replace(" ", r"\s+") for word in ordered)


_HOUR = rf"(?P<hour>{_alternation(HOUR_WORDS)})"
# Minutes after an hour: two words or more ("eight thirty", "eight oh five"), never a lone
# "eight five", which is two numbers.
_MINUTE_AFTER = {word: said for word, said in MINUTE_WORDS.items() if said >= 10 or " " in word}
_NOT_A_COUNT = r"(?!\s*(?:minutes?|mins?|hours?|days?|weeks?|months?|years?)\b)"

# "half past eight", "a quarter to nine", "ten (minutes) past seven", "twenty to six".
_PAST_OR_TO = re.compile(
    rf"\b(?:(?P<half>half)|(?:a\s+)?(?P<quarter>quarter)|(?P<minutes>{_alternation(MINUTE_WORDS)}"
    rf"|\d{{1,2}})(?:\s+minutes?)?)\s+(?P<way>past|after|to|till|before)\s+{_HOUR}\b",
    re.IGNORECASE,
)
# An hour, with its minutes if said, that is a clock time: after "at" ("at eight", "at
# eight thirty"), before "o'clock" or "pm", or with its minutes ("eight thirty").
_HOUR_AND_MINUTES = re.compile(
    rf"\b(?:(?P<at>at|around|about|by)\s+)?{_HOUR}"
    rf"(?:[\s-]+(?P<minute>{_alternation(_MINUTE_AFTER)}))?\b{_NOT_A_COUNT}"
    r"(?P<mark>\s*(?:o['’]?\s?clock|[ap]\.?m\b\.?))?",
    re.IGNORECASE,
)


def _spaces(said: str) -> str:
    return re.sub(r"\s+", " ", said.lower())


def _past_or_to(match: re.Match[str]) -> str:
    hour = HOUR_WORDS[match["hour"].lower()]
    if match["half"]:
        minutes = 30
    elif match["quarter"]:
        minutes = 15
    else:
        said = _spaces(match["minutes"])
        minutes = int(said) if said.isdigit() else MINUTE_WORDS[said]
    if not 1 <= minutes <= 59:
        return match[0]
    if match["way"].lower() in ("past", "after"):
        return f"{hour}:{minutes:02d}"
    if match["half"]:
        return match[0]  # "half to eight" is no English time
    return f"{hour - 1 if hour > 1 else 12}:{60 - minutes:02d}"


def _hour_and_minutes(match: re.Match[str]) -> str:
    if match["at"] is None and match["minute"] is None and match["mark"] is None:
        return match[0]  # "two", alone: a count, not an hour
    hour = HOUR_WORDS[match["hour"].lower()]
    minute = f":{MINUTE_WORDS[_spaces(match['minute'])]:02d}" if match["minute"] else ""
    at = f"{match['at']} " if match["at"] else ""
    return f"{at}{hour}{minute}{match['mark'] or ''}"


def english_clock_words(text: str) -> str:
    """English clock times in words as digits: "at half past eight" -> "at 8:30", "at
    quarter to nine" -> "at 8:45", "at eight thirty pm" -> "at 8:30 pm", "at eight" -> "at
    8"."""
    text = _PAST_OR_TO.sub(_past_or_to, text)
    return _HOUR_AND_MINUTES.sub(_hour_and_minutes, text)
