"""The conversation turns of one scope in time order, to find the turns around a turn.

A turn that matches a question often needs the turn before it (the question it answers)
or after it (the reply that holds the answer), and those rarely share a word with the
question: the pack asks the timeline for them. The timeline holds only times and keys
(the items stay in the store: a key is an item's id, or the position of an item the store
reads from its index file), sorted by (created_at, id): 16 bytes a turn, and a write
inserts in O(log n) comparisons and one shift of each column.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Iterable
from itertools import compress
from operator import attrgetter, eq, itemgetter, le, lt

from mnemobot.memory.store.items import ItemType, Layer, MemoryItem

_CREATED_AT = attrgetter("created_at")
_ID = attrgetter("id")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


def is_turn(item: MemoryItem) -> bool:
    """A conversation turn: what the timeline holds."""
    return item.type is ItemType.TURN and item.layer is Layer.EPISODIC


TurnKey = str | int


def _same(key: TurnKey) -> str:
    assert isinstance(key, str)
    return key


class TurnTimeline:
    """A scope's turns sorted by (created_at, id); `lookup` reads a key's item from the
    store, `key_id` its id (a key is the id itself, or a position the store knows).

    Two parallel columns: the times as C doubles (bisect runs on them at C speed, 8 bytes
    a turn) and the keys. Equal times are ordered by id.
    """

    __slots__ = ("_ids", "_key_id", "_lookup", "_times")

    def __init__(
        self,
        lookup: Callable[[TurnKey], MemoryItem | None],
        key_id: Callable[[TurnKey], str] = _same,
    ) -> None:
        self._lookup = lookup
        self._key_id = key_id
        self._times = array("d")
        self._ids: list[TurnKey] = []

    def __len__(self) -> int:
        return len(self._ids)

    def rebuild(self, items: Iterable[MemoryItem]) -> None:
        # A scope load calls this on 100k items, which come in order (day files, each in
        # the order it was written): checked in C, and sorted only when they are not.
        # Sorting (time, id) pairs always cost ~60 ms, mostly making the pairs.
        turn, episodic = ItemType.TURN, Layer.EPISODIC
        found = [item for item in items if item.type is turn and item.layer is episodic]
        times = array("d", map(_CREATED_AT, found))
        ids: list[TurnKey] = list(map(_ID, found))
        del found
        later_times, later_ids = times[1:], ids[1:]
        ties = list(map(eq, times, later_times))
        if not all(map(le, times, later_times)) or not all(
            map(lt, compress(ids, ties), compress(later_ids, ties))
        ):
            turns = sorted(zip(times, ids, strict=True))
            times = array("d", map(_FIRST, turns))
            ids = list(map(_SECOND, turns))
        self._times = times
        self._ids = ids

    def rebuild_from(self, times: array[float], keys: list[TurnKey]) -> None:
        """Take turns already in (created_at, id) order (an index file's)."""
        self._times = times
        self._ids = keys

    def _position(self, item: MemoryItem) -> int:
        """Where `item` is, or would go, in the order."""
        times, ids, key_id = self._times, self._ids, self._key_id
        position = bisect.bisect_left(times, item.created_at)
        end = len(ids)
        while (
            position < end
            and times[position] == item.created_at
            and key_id(ids[position]) < item.id
        ):
            position += 1
        return position

    def add(self, item: MemoryItem) -> None:
        if is_turn(item):
            position = self._position(item)
            self._times.insert(position, item.created_at)
            self._ids.insert(position, item.id)

    def discard(self, item: MemoryItem) -> None:
        if not is_turn(item):
            return
        position = self._position(item)
        if position < len(self._ids) and self._key_id(self._ids[position]) == item.id:
            del self._times[position]
            del self._ids[position]

    def between(self, start: float, end: float) -> list[MemoryItem]:
        """The turns written in [start, end), in time order."""
        first = bisect.bisect_left(self._times, start)
        last = bisect.bisect_left(self._times, end)
        lookup = self._lookup
        return [found for i in range(first, last) if (found := lookup(self._ids[i])) is not None]

    def first_at_or_after(self, start: float) -> float | None:
        """The time of the first turn written at `start` or later; None if there is none."""
        position = bisect.bisect_left(self._times, start)
        return self._times[position] if position < len(self._times) else None

    def around(self, item: MemoryItem, steps: int = 1) -> tuple[list[MemoryItem], list[MemoryItem]]:
        """Up to `steps` turns before and after `item`, nearest first (none if unknown)."""
        ids, lookup = self._ids, self._lookup
        position = self._position(item)
        if position >= len(ids) or self._key_id(ids[position]) != item.id:
            return ([], [])
        before = [
            found
            for i in range(position - 1, max(-1, position - 1 - steps), -1)
            if (found := lookup(ids[i])) is not None
        ]
        after = [
            found
            for i in range(position + 1, min(len(ids), position + 1 + steps))
            if (found := lookup(ids[i])) is not None
        ]
        return (before, after)
