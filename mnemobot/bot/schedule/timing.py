"""When a task fires next, and what is due now: pure functions of times and zones.

Local times are wall-clock times in the task's IANA zone (`zoneinfo`), so "09:00 every day"
is 09:00 on both sides of a daylight-saving change. Cron expressions (`croniter`) are
walked in local wall time and each match is then placed in the zone:

- a wall time that does not exist (02:30 on the night clocks go forward) fires as the zone
  reads it with the offset before the change: shifted forward by the gap (03:30);
- a wall time that exists twice (02:30 on the night clocks go back) fires once, at the
  first of the two.

"Every N hours/minutes" counts elapsed time from the first firing; "every N days" keeps
the first firing's local time of day.
"""

from __future__ import annotations

import itertools
import math
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.bot.schedule.cron_words import cron_in_english, short_month_stand_in
from mnemobot.bot.schedule.tasks import Firing, Schedule, Task
from mnemobot.config.zones import zone_of

# Cron matches walked at most to find the next one past a time (a few are walked past
# when a time falls in a repeated hour); far above any valid expression's need.
MAX_CRON_STEPS = 10_000
# Catching up after an outage counts missed occurrences only this far back; older ones
# are passed over at once (a minutely task offline for a year would be half a million).
CATCH_UP_WINDOW_SECONDS = 7 * SECONDS_PER_DAY
# Occurrences compared to find a cron expression's shortest gap.
GAP_SAMPLES = 400


def wall_time(ts: float, zone: ZoneInfo) -> datetime:
    """The local wall-clock time of an instant, without a zone."""
    return datetime.fromtimestamp(ts, zone).replace(tzinfo=None)


def wall_to_epoch(wall: datetime, zone: ZoneInfo) -> float:
    """The instant of a local wall time: the first of two (fold=0) when it repeats, and
    shifted forward by the gap when it does not exist."""
    return wall.replace(tzinfo=zone, fold=0).timestamp()


def valid_cron(expr: str) -> bool:
    return len(expr.split()) == 5 and croniter.is_valid(expr)


def next_occurrence(schedule: Schedule, after: float, zone: ZoneInfo) -> float | None:
    """The first time strictly after `after` the schedule fires; None when it never will."""
    if schedule.type == "once":
        return schedule.at if schedule.at is not None and schedule.at > after else None
    if schedule.type == "cron":
        assert schedule.cron is not None
        return _next_cron(schedule.cron, after, zone)
    anchor = schedule.anchor
    assert anchor is not None
    if after < anchor:
        return anchor
    if schedule.seconds is not None:
        steps = math.floor((after - anchor) / schedule.seconds) + 1
        return anchor + steps * schedule.seconds
    assert schedule.days is not None
    start = wall_time(anchor, zone)
    step = schedule.days
    # One day or so short of the answer (DST moves an instant by an hour at most), then on.
    k = max(0, math.floor((after - anchor) / (step * SECONDS_PER_DAY)) - 1)
    while True:
        candidate = wall_to_epoch(start + timedelta(days=k * step), zone)
        if candidate > after:
            return candidate
        k += 1


def _next_cron(expr: str, after: float, zone: ZoneInfo) -> float | None:
    # "The 31st of every month" is also the last day of a shorter month (`short_month_stand_in`).
    stand_in = short_month_stand_in(expr)
    found = [_next_match(expr, after, zone)]
    if stand_in is not None:
        found.append(_next_match(stand_in, after, zone))
    return min((at for at in found if at is not None), default=None)


def _next_match(expr: str, after: float, zone: ZoneInfo) -> float | None:
    walker = croniter(expr, wall_time(after, zone))
    for _ in range(MAX_CRON_STEPS):
        candidate = wall_to_epoch(walker.get_next(datetime), zone)
        # A match in the second pass of a repeated hour maps to before `after`: skip it.
        if candidate > after:
            return candidate
    return None


def shortest_gap(schedule: Schedule, zone: ZoneInfo, start: float) -> float:
    """The shortest time between two firings from `start` on (inf for a one-shot)."""
    if schedule.type == "once":
        return math.inf
    if schedule.seconds is not None:
        return schedule.seconds
    times: list[float] = []
    at = start
    for _ in range(GAP_SAMPLES if schedule.type == "cron" else 3):
        following = next_occurrence(schedule, at, zone)
        if following is None:
            break
        times.append(following)
        at = following
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return min(gaps) if gaps else math.inf


def plan_firing(
    task: Task, now: float, *, grace_seconds: float, late_after_seconds: float
) -> Firing | None:
    """What to hand to the chat for a task whose time has come; None if not due yet.

    The newest occurrence that has passed is the one handed over; earlier ones that passed
    while the bot was offline are counted (`skipped`), not run one by one. It is `late`
    once more than `late_after_seconds` old, and only reported (`missed`) once older than
    `grace_seconds`.
    """
    due = task.next_due
    if due is None or due > now or task.paused:
        return None
    zone = zone_of(task.zone)
    skipped = 0
    if task.schedule.recurring and now - due > CATCH_UP_WINDOW_SECONDS:
        window_start = now - CATCH_UP_WINDOW_SECONDS
        jumped = next_occurrence(task.schedule, window_start, zone)
        if jumped is not None and jumped <= now:
            skipped, due = 1, jumped
    following = next_occurrence(task.schedule, due, zone)
    while following is not None and following <= now:
        skipped += 1
        due = following
        following = next_occurrence(task.schedule, due, zone)
    return Firing(
        task=task,
        due=due,
        late=now - due > late_after_seconds,
        missed=now - due > grace_seconds,
        skipped=skipped,
        next_due=following,
    )


# -- words ---------------------------------------------------------------------------------


def format_when(ts: float, zone_name: str, now: float | None = None) -> str:
    """ "Thursday 27 November, 09:00 (Europe/Berlin)"; the year too when not this year's."""
    zone = zone_of(zone_name)
    local = datetime.fromtimestamp(ts, zone)
    year = ""
    if now is not None and datetime.fromtimestamp(now, zone).year != local.year:
        year = f" {local.year}"
    return f"{local:%A} {local.day} {local:%B}{year}, {local:%H:%M} ({zone_name})"


def format_clock(ts: float, zone_name: str, now: float) -> str:
    """ "09:00" when `ts` is on the day of `now` (locally), else "09:00 on Thursday 27 November"."""
    zone = zone_of(zone_name)
    local = datetime.fromtimestamp(ts, zone)
    if local.date() == datetime.fromtimestamp(now, zone).date():
        return f"{local:%H:%M}"
    return f"{local:%H:%M} on {local:%A} {local.day} {local:%B}"


def soon_in_english(ts: float, zone_name: str, now: float) -> str:
    """ "15:00" later on the day of `now`, "Mon 08:30" within the week, else "Mon 7 Dec,
    08:30" (the year too when not this year's): when a repeat comes next, said short."""
    zone = zone_of(zone_name)
    local = datetime.fromtimestamp(ts, zone)
    today = datetime.fromtimestamp(now, zone).date()
    if local.date() == today:
        return f"{local:%H:%M}"
    if (local.date() - today).days < 7:
        return f"{local:%a} {local:%H:%M}"
    year = f" {local.year}" if local.year != today.year else ""
    return f"{local:%a} {local.day} {local:%b}{year}, {local:%H:%M}"


def describe_schedule(schedule: Schedule, zone_name: str) -> str:
    """How often, in words: "once", "every Monday at 09:00", "every 2 hours", "every 3 days
    at 09:00"; "cron 0 9 * * 1#2" for a cron expression of no common shape."""
    if schedule.type == "once":
        return "once"
    if schedule.type == "cron":
        assert schedule.cron is not None
        return cron_in_english(schedule.cron) or f"cron {schedule.cron}"
    if schedule.seconds is not None:
        return "every " + describe_seconds(schedule.seconds)
    assert schedule.days is not None and schedule.anchor is not None
    at = f"{wall_time(schedule.anchor, zone_of(zone_name)):%H:%M}"
    if schedule.days % 7 == 0:
        weeks = schedule.days // 7
        return f"every {'week' if weeks == 1 else f'{weeks} weeks'} at {at}"
    return f"every {'day' if schedule.days == 1 else f'{schedule.days} days'} at {at}"


def repeat_suffix(schedule: Schedule, zone_name: str) -> str:
    """ ", every 2 hours" for a recurring schedule, "" for a one-shot."""
    return "" if schedule.type == "once" else f", {describe_schedule(schedule, zone_name)}"


def describe_seconds(seconds: float) -> str:
    for unit, size in (("day", SECONDS_PER_DAY), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return unit if count == 1 else f"{count} {unit}s"
    count = round(seconds)
    return f"{count} seconds"
