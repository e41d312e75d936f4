"""When scheduled tasks fire: pure functions of times, zones and words (hypothesis where a
rule holds for every input)."""

from __future__ import annotations

import itertools
from calendar import monthrange
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.bot.schedule.parsing import (
    WhenError,
    parse_interval,
    parse_when,
    with_clock_times,
)
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat
from mnemobot.bot.schedule.timing import (
    format_when,
    next_occurrence,
    plan_firing,
    shortest_gap,
)
from mnemobot.config.zones import zone_of

BERLIN = "Europe/Berlin"
ZONES = ["Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "UTC"]


def at(zone: str, *parts: int) -> float:
    return datetime(*parts, tzinfo=zone_of(zone)).timestamp()  # type: ignore[misc]


def local(ts: float, zone: str) -> datetime:
    return datetime.fromtimestamp(ts, zone_of(zone))


def occurrences(schedule: Schedule, zone: str, start: float, count: int) -> list[float]:
    found, after = [], start
    for _ in range(count):
        following = next_occurrence(schedule, after, zone_of(zone))
        assert following is not None
        found.append(following)
        after = following
    return found


def test_a_daily_cron_fires_at_nine_local_on_both_sides_of_spring_forward() -> None:
    times = occurrences(Schedule("cron", cron="0 9 * * *"), BERLIN, at(BERLIN, 2026, 3, 27, 12), 4)
    assert [local(t, BERLIN).strftime("%d %H:%M") for t in times] == [
        "28 09:00",
        "29 09:00",
        "30 09:00",
        "31 09:00",
    ]
    # 08:00 UTC in winter time, 07:00 UTC in summer time.
    assert [datetime.fromtimestamp(t, UTC).hour for t in times] == [8, 7, 7, 7]


def test_a_time_that_repeats_fires_once_and_one_that_does_not_exist_an_hour_later() -> None:
    nightly = Schedule("cron", cron="30 2 * * *")
    autumn = occurrences(nightly, BERLIN, at(BERLIN, 2026, 10, 24, 12), 2)
    assert [local(t, BERLIN).strftime("%d %H:%M %Z") for t in autumn] == [
        "25 02:30 CEST",
        "26 02:30 CET",
    ]
    spring = occurrences(nightly, BERLIN, at(BERLIN, 2026, 3, 28, 12), 2)
    assert [local(t, BERLIN).strftime("%d %H:%M") for t in spring] == ["29 03:30", "30 02:30"]


@settings(max_examples=60, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
    start=st.integers(1_767_225_600, 1_830_297_600),  # 2026-01-01 .. 2028-01-01
)
def test_a_daily_cron_fires_once_a_local_day_at_its_time(
    zone: str, hour: int, minute: int, start: int
) -> None:
    times = occurrences(Schedule("cron", cron=f"{minute} {hour} * * *"), zone, start, 6)
    assert times[0] > start
    assert all(b > a for a, b in itertools.pairwise(times))
    days = [local(t, zone).date() for t in times]
    assert len(set(days)) == len(days)
    for t in times:
        wall = local(t, zone)
        # Its time, or (on the night clocks go forward) that time shifted by the gap.
        shifted = (wall.hour * 60 + wall.minute) - (hour * 60 + minute)
        assert shifted in (0, 30, 60), (wall, hour, minute)


@settings(max_examples=60, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    days=st.integers(1, 9),
    start=st.integers(1_767_225_600, 1_830_297_600),
)
def test_every_n_days_keeps_the_local_time_of_day(zone: str, days: int, start: int) -> None:
    anchor = float(start - start % 60)
    schedule = Schedule("every", days=days, anchor=anchor)
    times = occurrences(schedule, zone, anchor, 8)
    first = local(anchor, zone)
    for n, t in enumerate(times, start=1):
        wall = local(t, zone)
        assert wall.date() == first.date() + timedelta(days=n * days)
        if not _in_a_gap(first.replace(tzinfo=None) + timedelta(days=n * days), zone):
            assert (wall.hour, wall.minute) == (first.hour, first.minute)


def _in_a_gap(wall: datetime, zone: str) -> bool:
    placed = wall.replace(tzinfo=zone_of(zone))
    return datetime.fromtimestamp(placed.timestamp(), zone_of(zone)).replace(tzinfo=None) != wall


@given(hours=st.integers(1, 48), start=st.integers(1_767_225_600, 1_830_297_600))
def test_every_n_hours_counts_elapsed_time(hours: int, start: int) -> None:
    schedule = Schedule("every", seconds=hours * 3600.0, anchor=float(start))
    times = occurrences(schedule, BERLIN, start - 1.0, 5)
    assert times[0] == start
    assert {b - a for a, b in itertools.pairwise(times)} == {hours * 3600.0}


def test_the_shortest_gap_of_a_schedule() -> None:
    zone = zone_of(BERLIN)
    now = at(BERLIN, 2026, 11, 24, 10)
    assert shortest_gap(Schedule("cron", cron="*/5 * * * *"), zone, now) == 300
    # A week, less the hour clocks go forward in spring.
    assert shortest_gap(Schedule("cron", cron="0 9 * * 1"), zone, now) == 7 * 86_400 - 3600
    assert shortest_gap(Schedule("every", seconds=7200.0, anchor=now), zone, now) == 7200
    assert shortest_gap(Schedule("once", at=now + 60), zone, now) == float("inf")


def task(schedule: Schedule, next_due: float, zone: str = BERLIN) -> Task:
    return Task(
        id="t1",
        number=1,
        chat=TaskChat("telegram", "42"),
        kind="reminder",
        text="stretch",
        schedule=schedule,
        zone=zone,
        created_at=0.0,
        next_due=next_due,
    )


def test_plan_firing_on_time_late_and_missed() -> None:
    nine = at(BERLIN, 2026, 11, 24, 9)
    once = task(Schedule("once", at=nine), nine)
    plan = {"grace_seconds": 3600.0, "late_after_seconds": 60.0}
    assert plan_firing(once, nine - 1, **plan) is None
    on_time = plan_firing(once, nine + 2, **plan)
    assert on_time is not None and not on_time.late and on_time.next_due is None
    late = plan_firing(once, nine + 1800, **plan)
    assert late is not None and late.late and not late.missed
    missed = plan_firing(once, nine + 7200, **plan)
    assert missed is not None and missed.missed

    daily = task(Schedule("cron", cron="0 9 * * *"), nine)
    # Offline for two days and a half hour: the newest 09:00 fires late, two were skipped.
    later = plan_firing(daily, nine + 2 * 86_400 + 1800, **plan)
    assert later is not None and later.late and not later.missed
    assert later.due == nine + 2 * 86_400 and later.skipped == 2
    assert later.next_due == nine + 3 * 86_400
    # A minutely-ish task offline for a month passes the old ones over at once.
    often = task(Schedule("every", seconds=300.0, anchor=nine), nine)
    month = plan_firing(often, nine + 30 * 86_400 + 10, **plan)
    assert month is not None and month.due == nine + 30 * 86_400 and not month.late


@pytest.mark.slow
def test_times_read_in_the_chats_zone() -> None:
    now = at(BERLIN, 2026, 11, 24, 22, 15)

    def read(words: str) -> str:
        return format_when(parse_when(words, now, BERLIN), BERLIN, now)

    assert read("tomorrow at 9") == "Wednesday 25 November, 09:00 (Europe/Berlin)"
    assert read("завтра в 9") == "Wednesday 25 November, 09:00 (Europe/Berlin)"
    assert read("morgen um 9 Uhr") == "Wednesday 25 November, 09:00 (Europe/Berlin)"
    assert read("at 9") == "Wednesday 25 November, 09:00 (Europe/Berlin)"
    assert read("friday 18:30") == "Friday 27 November, 18:30 (Europe/Berlin)"
    assert read("in 90 minutes") == "Tuesday 24 November, 23:45 (Europe/Berlin)"
    assert read("2027-01-05 08:00") == "Tuesday 5 January 2027, 08:00 (Europe/Berlin)"
    assert parse_when("2026-11-25T08:00:00+00:00", now, BERLIN) == at("UTC", 2026, 11, 25, 8)
    with pytest.raises(WhenError, match="in the past"):
        parse_when("today 21:00", now, BERLIN)
    with pytest.raises(WhenError, match="could not read"):
        parse_when("when pigs fly", now, BERLIN)


def test_durations_count_elapsed_time_and_days_keep_the_time_of_day_across_dst() -> None:
    night = at(BERLIN, 2026, 3, 29, 1, 30)  # clocks go from 02:00 to 03:00 tonight
    assert parse_when("in 2 hours", night, BERLIN) - night == 7200
    assert local(parse_when("in 1 day", night, BERLIN), BERLIN).strftime("%d %H:%M") == "30 01:30"
    assert local(parse_when("tomorrow 09:00", night, BERLIN), BERLIN).hour == 9
    # Hours said are elapsed time, even 24 of them (they were a calendar day: 23 real hours).
    evening = at(BERLIN, 2027, 3, 27, 19, 30)
    assert parse_when("in 24 hours", evening, BERLIN) - evening == 24 * 3600
    assert parse_when("in 1 day", evening, BERLIN) - evening == 23 * 3600


@given(
    word=st.sampled_from(["at", "um", "в", "alle"]),
    hour=st.integers(0, 23),
    before=st.sampled_from(["", "tomorrow ", "friday "]),
)
def test_a_bare_hour_after_at_becomes_a_clock_time(word: str, hour: int, before: str) -> None:
    assert with_clock_times(f"{before}{word} {hour}") == f"{before}{word} {hour:02d}:00"
    # Clock times and durations are left as they are; am/pm is the 24-hour clock time.
    for kept in (f"{word} {hour}:15", f"in {hour} hours"):
        assert with_clock_times(kept) == kept
    if 1 <= hour <= 12:
        assert with_clock_times(f"{word} {hour}pm") == f"{word} {hour % 12 + 12:02d}:00"
        assert with_clock_times(f"{word} {hour} a.m.") == f"{word} {hour % 12:02d}:00"


def test_intervals() -> None:
    assert parse_interval("2 hours").seconds == 7200
    assert parse_interval("every 30 minutes").seconds == 1800
    assert parse_interval("3 days").days == 3
    assert parse_interval("1 week").days == 7
    assert parse_interval("daily").days == 1
    with pytest.raises(ValueError, match="interval"):
        parse_interval("every now and then")


def test_a_time_of_thousands_of_words_gets_one_short_line() -> None:
    """The words come from the model (a stranger's input in effect): 9,000 characters took
    the date parser 1.7 s, and the refusal quoted them all back."""
    now = datetime(2026, 11, 29, 10, tzinfo=UTC).timestamp()
    with pytest.raises(WhenError) as refused:
        parse_when("at " * 3_000, now, "Europe/Moscow")
    assert "8,999 characters long" in str(refused.value)
    assert len(str(refused.value)) < 200
    assert parse_when("tomorrow at 9", now, "Europe/Moscow") > now


@settings(max_examples=60, deadline=None)
@given(
    day=st.integers(29, 31),
    start=st.datetimes(datetime(2026, 1, 1), datetime(2031, 12, 31)),
    zone=st.sampled_from(ZONES),
    hour=st.integers(0, 23),
)
def test_a_late_day_of_every_month_falls_on_the_last_day_of_a_shorter_month(
    day: int, start: datetime, zone: str, hour: int
) -> None:
    """Found live: "the 31st of every month" skipped February, April, June, September and
    November without a word. Once every month: the day, or the month's last if sooner."""
    schedule = Schedule(type="cron", cron=f"0 {hour} {day} * *")
    fired = [
        local(ts, zone) for ts in occurrences(schedule, zone, at(zone, *start.timetuple()[:5]), 25)
    ]
    months = [(moment.year, moment.month) for moment in fired]
    assert all((b[0] * 12 + b[1]) - (a[0] * 12 + a[1]) == 1 for a, b in itertools.pairwise(months))
    for moment in fired:
        last = monthrange(moment.year, moment.month)[1]
        assert moment.day == min(day, last)
        assert moment.hour == hour or (moment.hour - hour) % 24 == 1  # a gap in the clocks
    assert shortest_gap(schedule, zone_of(zone), fired[0].timestamp()) >= 27 * 86_400
