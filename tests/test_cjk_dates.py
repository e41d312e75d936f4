"""Chinese and Japanese dates in a question name the days a person means."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.memory.text.cjk_dates import cjk_number, find_cjk_dates
from mnemobot.memory.text.dates import find_dates

# A Thursday.
TODAY = date(2026, 3, 12)


def days(text: str) -> list[tuple[str, date, date]]:
    return [(d.phrase, d.first, d.last) for d in find_cjk_dates(text, TODAY)]


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("昨天我们说了什么？", date(2026, 3, 11), date(2026, 3, 11)),
        ("前天", date(2026, 3, 10), date(2026, 3, 10)),
        ("三天前我提到过", date(2026, 3, 9), date(2026, 3, 9)),
        ("上周二我们聊了什么？", date(2026, 3, 3), date(2026, 3, 3)),
        ("两周前我说过什么？", date(2026, 2, 23), date(2026, 3, 1)),
        ("3月8日我们打算去哪里？", date(2026, 3, 8), date(2026, 3, 8)),
        ("三月八号", date(2026, 3, 8), date(2026, 3, 8)),
        # Not yet this year: last year's.
        ("十月八号我们去了哪里？", date(2025, 10, 8), date(2025, 10, 8)),
        ("2025年10月8日", date(2025, 10, 8), date(2025, 10, 8)),
        ("上个月", date(2026, 2, 1), date(2026, 2, 28)),
        ("三个月前", date(2025, 12, 1), date(2025, 12, 31)),
        ("去年", date(2025, 1, 1), date(2025, 12, 31)),
        ("周二说了什么", date(2026, 3, 10), date(2026, 3, 10)),
        ("先週の月曜日に何を話した？", date(2026, 3, 2), date(2026, 3, 2)),
        ("3日前", date(2026, 3, 9), date(2026, 3, 9)),
    ],
)
def test_a_named_day_is_that_day(text: str, first: date, last: date) -> None:
    ((_, found_first, found_last),) = days(text)
    assert (found_first, found_last) == (first, last)


def test_no_date_and_future_days_name_nothing() -> None:
    assert days("我们订的是哪家宾馆？") == []
    assert days("三个人一起去") == []
    assert days("明天见") == []
    # "this week" ends today, not on Sunday.
    assert days("这周") == [("这周", date(2026, 3, 9), TODAY)]


def test_find_dates_reads_chinese_here_and_other_languages_with_dateparser() -> None:
    now = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
    (span,) = find_dates("3月8日我们打算去哪里？", now, ["en", "ru", "zh"])
    assert datetime.fromtimestamp(span.start, UTC) == datetime(2026, 3, 8, tzinfo=UTC)
    assert span.end - span.start == 86_400
    (span,) = find_dates("What did we talk about yesterday?", now, ["en", "ru", "zh"])
    assert datetime.fromtimestamp(span.start, UTC) == datetime(2026, 3, 11, tzinfo=UTC)


_CN_ONES = "零一二三四五六七八九"


def _chinese(value: int) -> str:
    tens, ones = divmod(value, 10)
    if tens == 0:
        return _CN_ONES[ones]
    return ("" if tens == 1 else _CN_ONES[tens]) + "十" + (_CN_ONES[ones] if ones else "")


@given(st.integers(min_value=0, max_value=99))
def test_chinese_numerals_and_digits_read_the_same(value: int) -> None:
    assert cjk_number(_chinese(value)) == cjk_number(str(value)) == value


@given(
    st.text(
        alphabet="一二三四五六七八九十两0123456789年月日号周前天上个星期这昨去今的我说", max_size=20
    )
)
def test_every_day_found_is_a_past_range(text: str) -> None:
    for found in find_cjk_dates(text, TODAY):
        assert found.first <= found.last <= TODAY
        assert found.phrase in text
