"""What was written per day, as a bar chart the server draws (SVG, no script).

A bar a day over the last `days` days, its height the items written that day, stacked by
layer (episodes, facts, procedures); each bar's title says the day and the counts, so a
pointer over it reads them. Days are the chat's local days (the assistant's time zone).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from mnemobot.base.counts import counted
from mnemobot.memory.store.items import Layer, MemoryItem

# Days the chart spans unless asked otherwise (`?days=`), and the most it may span.
DEFAULT_DAYS = 90
MAX_DAYS = 730
WIDTH = 760
HEIGHT = 170
# Room for the count axis on the left and the date labels below.
LEFT = 36
BOTTOM = 22
TOP = 8
# Layers from the bottom of a bar up.
LAYER_ORDER = (Layer.EPISODIC, Layer.SEMANTIC, Layer.PROCEDURAL)


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    layer: str
    title: str


@dataclass(frozen=True, slots=True)
class Label:
    x: float
    y: float
    text: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    labels: list[Label]
    most: int
    total: int
    first: str
    last: str


def per_day(items: Iterable[MemoryItem], tz: tzinfo) -> dict[date, Counter[Layer]]:
    """Items written on each local day, per layer."""
    counts: dict[date, Counter[Layer]] = {}
    for item in items:
        day = datetime.fromtimestamp(item.created_at, tz).date()
        counts.setdefault(day, Counter())[item.layer] += 1
    return counts


def chart(counts: dict[date, Counter[Layer]], last: date, days: int) -> Chart:
    """The bars of the `days` days up to `last`."""
    days = min(max(days, 7), MAX_DAYS)
    first = last - timedelta(days=days - 1)
    shown = [first + timedelta(days=n) for n in range(days)]
    most = max((sum(counts.get(day, Counter()).values()) for day in shown), default=0)
    scale = (HEIGHT - TOP - BOTTOM) / max(most, 1)
    step = (WIDTH - LEFT) / days
    bars: list[Bar] = []
    labels = [Label(LEFT - 4, TOP + 10, str(most)), Label(LEFT - 4, HEIGHT - BOTTOM, "0")]
    total = 0
    for n, day in enumerate(shown):
        of_day = counts.get(day, Counter())
        total += sum(of_day.values())
        x = LEFT + n * step
        base: float = HEIGHT - BOTTOM
        words = ", ".join(f"{of_day[layer]} {layer.value.lower()}" for layer in LAYER_ORDER)
        title = f"{day.isoformat()}: {counted(sum(of_day.values()), 'item')} ({words})"
        for layer in LAYER_ORDER:
            if not of_day[layer]:
                continue
            height = of_day[layer] * scale
            base -= height
            bars.append(Bar(x, base, max(step - 1, 1), height, layer.value.lower(), title))
        if n % max(1, days // 6) == 0:
            labels.append(Label(x, HEIGHT - 6, day.isoformat()))
    return Chart(WIDTH, HEIGHT, bars, labels, most, total, first.isoformat(), last.isoformat())
