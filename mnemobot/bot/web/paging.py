"""Pages of a long list: a chat with thousands of items is read fifty at a time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

# Rows a page shows: a screen or two of items, rendered in a few milliseconds.
PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class Page:
    """Page `number` (from 1) of `total` rows, `size` a page."""

    number: int
    size: int
    total: int

    @property
    def count(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def start(self) -> int:
        return (self.number - 1) * self.size

    @property
    def first_shown(self) -> int:
        return min(self.total, self.start + 1)

    @property
    def last_shown(self) -> int:
        return min(self.total, self.start + self.size)

    def of(self, rows: Sequence[T]) -> list[T]:
        return list(rows[self.start : self.start + self.size])


def page_of(requested: str | None, total: int, size: int = PAGE_SIZE) -> Page:
    """The page asked for (`?page=N`), within 1..last; anything else is the first."""
    try:
        number = int(requested or 1)
    except ValueError:
        number = 1
    last = max(1, -(-total // size))
    return Page(min(max(number, 1), last), size, total)
