"""German and Spanish clock times in words ("um halb neun", "a las ocho y media") read as
times."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.schedule.german_clock import german_clock_words
from mnemobot.bot.schedule.parsing import with_clock_times
from mnemobot.bot.schedule.spanish_clock import spanish_clock_words

GERMAN_HOURS = ["eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun"]
GERMAN_HOURS += ["zehn", "elf", "zwölf"]
SPANISH_HOURS = ["una", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve"]
SPANISH_HOURS += ["diez", "once", "doce"]


def before(hour: int) -> int:
    return hour - 1 if hour > 1 else 12


@pytest.mark.parametrize(
    ("words", "read"),
    [
        ("um halb neun", "um 8:30"),
        ("erinnere mich um halb neun", "erinnere mich um 8:30"),
        ("jeden Monat am 3. um halb neun", "jeden Monat am 3. um 8:30"),
        ("um Viertel nach acht", "um 8:15"),
        ("um Viertel vor neun", "um 8:45"),
        ("um halb eins", "um 12:30"),
        ("um Viertel vor eins", "um 12:45"),
        ("um dreiviertel neun", "um 8:45"),
        ("um Viertel neun", "um 8:15"),
        ("um zehn nach acht", "um 8:10"),
        ("um fünf vor zwölf", "um 11:55"),
        ("um fuenf vor zwoelf", "um 11:55"),
        ("um zehn vor halb neun", "um 8:20"),
        ("um fünf nach halb neun", "um 8:35"),
        ("um acht", "um 8"),
        ("um acht Uhr", "um 8 Uhr"),
        ("um acht Uhr dreißig", "um 8:30"),
        ("ein Uhr", "1 Uhr"),
        ("morgen um halb neun abends", "morgen um 8:30 abends"),
        # Not a clock time: "halb" with no hour, counts, digits (read elsewhere).
        ("in einer halben Stunde", "in einer halben Stunde"),
        ("halb so lang", "halb so lang"),
        ("um halb", "um halb"),
        ("in zwei Stunden", "in zwei Stunden"),
        ("um acht Minuten", "um acht Minuten"),
        ("um halb 9", "um halb 9"),
        ("um 8:30", "um 8:30"),
    ],
)
def test_german_clock_words_are_read_as_said(words: str, read: str) -> None:
    assert german_clock_words(words) == read


@pytest.mark.parametrize(
    ("words", "read"),
    [
        ("a las ocho y media", "a las 8:30"),
        ("a las nueve menos cuarto", "a las 8:45"),
        ("a las ocho y cuarto", "a las 8:15"),
        ("a la una y media", "a la 1:30"),
        ("a la una menos diez", "a las 12:50"),
        ("a las ocho y veinticinco", "a las 8:25"),
        ("a las diez menos veinte", "a las 9:40"),
        ("a las ocho y cuarenta y cinco", "a las 8:45"),
        ("a las ocho", "a las 8"),
        ("a la una", "a la 1"),
        ("mañana a las ocho y media de la tarde", "mañana a las 8:30 de la tarde"),
        ("ocho y media", "8:30"),
        # Not a clock time: counts, "menos media", digits (read elsewhere).
        ("en dos horas y media", "en dos horas y media"),
        ("las dos semanas", "las dos semanas"),
        ("dos", "dos"),
        ("las ocho menos media", "las ocho menos media"),
        ("a las 8 y media", "a las 8 y media"),
        ("a las 8", "a las 8"),
    ],
)
def test_spanish_clock_words_are_read_as_said(words: str, read: str) -> None:
    assert spanish_clock_words(words) == read


@given(
    hour=st.integers(1, 12),
    said=st.sampled_from(["halb", "Viertel nach", "Viertel vor"]),
    day=st.sampled_from(["", "morgen "]),
)
def test_every_german_hour_in_words_is_that_clock_time(hour: int, said: str, day: str) -> None:
    words = f"{day}um {said} {GERMAN_HOURS[hour - 1]}"
    clock = {
        "halb": f"{before(hour)}:30",
        "Viertel nach": f"{hour}:15",
        "Viertel vor": f"{before(hour)}:45",
    }[said]
    assert re.fullmatch(rf"{day}um 0?{clock}", with_clock_times(words)), words


@given(
    hour=st.integers(1, 12),
    said=st.sampled_from(["y media", "y cuarto", "menos cuarto"]),
    day=st.sampled_from(["", "mañana "]),
)
def test_every_spanish_hour_in_words_is_that_clock_time(hour: int, said: str, day: str) -> None:
    article = "la" if hour == 1 else "las"
    words = f"{day}a {article} {SPANISH_HOURS[hour - 1]} {said}"
    clock = {
        "y media": f"{hour}:30",
        "y cuarto": f"{hour}:15",
        "menos cuarto": f"{before(hour)}:45",
    }[said]
    assert re.fullmatch(rf"{day}a las? 0?{clock}", with_clock_times(words)), words


CLOCK_WORDS = ["halb", " ", "neun", "Viertel", "vor", "nach", "um", "Uhr", "zehn", "9", "drei"]
CLOCK_WORDS += ["a", "las", "la", "una", "ocho", "y", "menos", "media", "cuarto", "horas"]


@given(st.lists(st.sampled_from(CLOCK_WORDS)))
def test_any_run_of_clock_words_is_read_without_error(words: list[str]) -> None:
    german_clock_words("".join(words))
    spanish_clock_words("".join(words))
    with_clock_times(" ".join(words))


@pytest.mark.parametrize(
    ("read_words", "phrase"),
    [
        (german_clock_words, "um halb neun "),
        (german_clock_words, "zehn vor halb "),
        (german_clock_words, "um Viertel vor "),
        (german_clock_words, "acht Uhr dreißig "),
        (german_clock_words, "fünf nach "),
        (spanish_clock_words, "a las ocho y media "),
        (spanish_clock_words, "las nueve menos "),
        (spanish_clock_words, "ocho y cuarenta y "),
    ],
)
def test_a_hostile_run_of_clock_words_is_read_quickly(
    read_words: Callable[[str], str], phrase: str
) -> None:
    # (The readers that take the model's words cap them at MAX_WHEN_CHARS before the
    # rest of `with_clock_times` runs; these take any text.)
    started = time.perf_counter()
    read_words(phrase * 5_000)
    assert time.perf_counter() - started < 0.2
