"""Russian clock times said in words ("пять минут шестого", "без четверти девять"), and a
clock time with a word for the morning ("в 8:45 утра", "morgen früh um 8:30").

Found live: "в десять минут восьмого" was read as 19:00 and "в пять минут шестого" as
"in five minutes", silently; "завтра в пять минут шестого вечера", "без четверти девять",
"завтра в девять утра" and "завтра в 8:45 утра" were not read at all."""

from __future__ import annotations

import pytest

from mnemobot.bot.schedule.russian_clock import russian_clock_words
from tests.schedule_harness import ZONES, read

# Sunday 29 November 2026, 18:50 local time (the live chat), and early on a Tuesday.
EVENING = (2026, 11, 29, 18, 50)
EARLY = (2026, 11, 24, 4, 55)

CASES = [
    ("завтра в пять минут шестого вечера", EVENING, "2026-11-30 17:05"),
    ("в десять минут восьмого", EVENING, "2026-11-30 07:10"),
    ("в десять минут восьмого вечера", EARLY, "2026-11-24 19:10"),
    ("в пять минут шестого", EVENING, "2026-11-30 05:05"),
    ("в 5 минут шестого", EVENING, "2026-11-30 05:05"),
    ("завтра в двадцать пять минут восьмого вечера", EVENING, "2026-11-30 19:25"),
    ("без четверти девять", EVENING, "2026-11-30 08:45"),
    ("без четверти девять вечера", EVENING, "2026-11-29 20:45"),
    ("завтра без четверти девять утра", EVENING, "2026-11-30 08:45"),
    ("завтра без пяти девять", EVENING, "2026-11-30 08:55"),
    ("без четверти 9 вечера", EARLY, "2026-11-24 20:45"),
    ("завтра в половине восьмого", EVENING, "2026-11-30 07:30"),
    ("завтра в полвосьмого утра", EVENING, "2026-11-30 07:30"),
    ("завтра в четверть одиннадцатого вечера", EVENING, "2026-11-30 22:15"),
    ("в половине первого ночи", EVENING, "2026-11-30 00:30"),
    ("завтра в девять утра", EVENING, "2026-11-30 09:00"),
    ("завтра в пять часов вечера", EVENING, "2026-11-30 17:00"),
    ("завтра в 8:45 утра", EVENING, "2026-11-30 08:45"),
    ("morgen früh um 8:30", EVENING, "2026-11-30 08:30"),
    # What was read before stays as it was.
    ("через пять минут", EVENING, "2026-11-29 18:55"),
    ("пятого декабря в 9", EVENING, "2026-12-05 09:00"),
    ("5-го в 9 утра", EVENING, "2026-12-05 09:00"),
    ("tomorrow morning at 09:30", EVENING, "2026-11-30 09:30"),
]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(("words", "local_now", "expected"), CASES)
def test_russian_clock_words_are_read_as_said(
    words: str, local_now: tuple[int, ...], expected: str, zone: str
) -> None:
    assert read(words, local_now, zone) == expected


@pytest.mark.parametrize(
    "words",
    [
        "без трёх дней неделя",
        "в пять минут",
        "пятого числа",
        "половина пирога",
        "четверть века",
    ],
)
def test_words_that_are_no_clock_time_are_left_as_said(words: str) -> None:
    assert russian_clock_words(words) == words
