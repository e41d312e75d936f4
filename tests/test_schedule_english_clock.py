"""English clock times in words ("at half past eight", "at eight thirty") read as times."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.schedule.english_clock import english_clock_words
from mnemobot.bot.schedule.parsing import with_clock_times

ONES = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
]
ONES += ["fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty"}


def in_words(number: int, joiner: str = "-") -> str:
    """1..59 as an English speaker says it ("forty-five", "thirty two")."""
    if number < 20:
        return ONES[number - 1]
    tens, unit = divmod(number, 10)
    return TENS[tens] + (f"{joiner}{ONES[unit - 1]}" if unit else "")


@pytest.mark.parametrize(
    ("words", "read"),
    [
        ("at half past eight", "at 8:30"),
        ("at quarter to nine", "at 8:45"),
        ("at a quarter past seven", "at 7:15"),
        ("at ten past seven", "at 7:10"),
        ("at twenty to six", "at 5:40"),
        ("at five minutes to twelve", "at 11:55"),
        ("at quarter to one", "at 12:45"),
        ("at eight thirty", "at 8:30"),
        ("at eight oh five", "at 8:05"),
        ("at eleven forty-five", "at 11:45"),
        ("at eight", "at 8"),
        ("tonight at eight", "tonight at 8"),
        ("eight o'clock", "8 o'clock"),
        ("at eight thirty pm", "at 8:30 pm"),
        ("tomorrow eight thirty", "tomorrow 8:30"),
        # Counts stay counts.
        ("in two hours", "in two hours"),
        ("in one day", "in one day"),
        ("every two weeks", "every two weeks"),
        ("at eight minutes", "at eight minutes"),
        ("half to eight", "half to eight"),
    ],
)
def test_english_clock_words_are_read_as_said(words: str, read: str) -> None:
    assert english_clock_words(words) == read


@given(
    hour=st.integers(1, 12),
    minute=st.integers(10, 59),
    joiner=st.sampled_from(["-", " "]),
    half=st.sampled_from(["", " in the morning", " pm"]),
)
def test_every_hour_and_minute_in_words_is_that_clock_time(
    hour: int, minute: int, joiner: str, half: str
) -> None:
    words = f"at {in_words(hour)} {in_words(minute, joiner)}{half}"
    hour24 = hour % 12 + 12 if half == " pm" else hour
    assert re.search(rf"\bat 0?{hour24}:{minute:02d}\b", with_clock_times(words)), words


@given(hour=st.integers(1, 12), minute=st.integers(1, 29))
def test_minutes_past_and_to_an_hour_in_words(hour: int, minute: int) -> None:
    assert english_clock_words(f"{in_words(minute)} past {in_words(hour)}") == (
        f"{hour}:{minute:02d}"
    )
    before = hour - 1 if hour > 1 else 12
    assert english_clock_words(f"{in_words(minute)} to {in_words(hour)}") == (
        f"{before}:{60 - minute:02d}"
    )


@given(st.lists(st.sampled_from(["eight", " ", "-", "half", "past", "thirty", "o", "at", "9"])))
def test_any_run_of_clock_words_is_read_without_error(words: list[str]) -> None:
    english_clock_words("".join(words))
    with_clock_times("".join(words))


@pytest.mark.parametrize(
    "phrase",
    ["at half past eight ", "eight thirty ", "twenty-five to ", "at eight oh ", "quarter "],
)
def test_a_hostile_run_of_clock_words_is_read_quickly(phrase: str) -> None:
    # (The readers that take the model's words cap them at MAX_WHEN_CHARS before the
    # rest of `with_clock_times` runs; this one takes any text.)
    started = time.perf_counter()
    english_clock_words(phrase * 5_000)
    assert time.perf_counter() - started < 0.2
