"""Time as the bot reads it: the clock every module is handed, and the length of a day.

"Now" (of a turn, of a compaction, of a maintenance run) comes from a `Clock` passed in
by the composition root, never from `time.time()` in the module that needs it: a replay
of a past conversation (an import, an eval, a bench) passes its own, and every write of
the turn (its messages, its memory items, the facts a tool saves) is dated by it alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

# Seconds since the epoch, as `time.time()` gives them.
Clock = Callable[[], float]

SYSTEM_CLOCK: Clock = time.time

SECONDS_PER_DAY = 86_400


def to_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def from_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def shown_time(when: float | str) -> str:
    """`2026-11-27 23:54 UTC`: a moment as `/status` shows each of its times (seconds since
    the epoch, or an ISO text as `to_iso` writes it; one that does not parse as it is)."""
    if isinstance(when, str):
        try:
            seconds = from_iso(when)
        except ValueError:
            return when
    else:
        seconds = when
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")
