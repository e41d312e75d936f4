"""Item ids as two numpy columns: by position, and sorted (with their positions).

A scope loaded from its index file (`memory.store.index_file`) keeps its million ids this
way instead of as a list of str and a dict from id to position: at 1M items those were
about 150 MB and half a second to build, while the columns are mapped from the file
(about 40 bytes an id, read as lookups touch them). A lookup is a binary search
(`np.searchsorted`, a few microseconds); a position's id is decoded when asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

# Ids longer than this (in UTF-8) are kept as str only: a fixed-width column of them
# would waste what it saves. Item ids are 32 hex digits.
MAX_ID_BYTES = 64
# Ids remembered after decoding (a few packs' worth of hits).
_RECENT_IDS = 16_384


class IdColumn:
    """Ids by position (`by_position[i]` is position i's), and the same ids sorted with
    the position of each (`order`). Immutable."""

    __slots__ = ("_recent", "by_position", "order", "sorted_ids")

    def __init__(
        self,
        by_position: npt.NDArray[np.bytes_],
        sorted_ids: npt.NDArray[np.bytes_],
        order: npt.NDArray[np.int32],
    ) -> None:
        self.by_position = by_position
        self.sorted_ids = sorted_ids
        self.order = order
        # Ids decoded lately, with their positions: a pack looks up by id the very items
        # the BM25 index just named by position (a dict hit instead of a binary search).
        self._recent: dict[str, int] = {}

    @classmethod
    def of(cls, ids: Iterable[str]) -> IdColumn | None:
        """The column of `ids` (unique); None when one cannot be held (empty, a NUL in
        it, or longer than `MAX_ID_BYTES`)."""
        encoded = [item_id.encode() for item_id in ids]
        if any(not key or b"\0" in key or len(key) > MAX_ID_BYTES for key in encoded):
            return None
        width = max(map(len, encoded), default=1)
        by_position = np.array(encoded, dtype=f"S{width}")
        order = np.argsort(by_position, kind="stable").astype(np.int32)
        return cls(by_position, by_position[order], order)

    def __len__(self) -> int:
        return len(self.by_position)

    def __getitem__(self, position: int) -> str:
        item_id = bytes(self.by_position[position]).decode()
        recent = self._recent
        if len(recent) >= _RECENT_IDS:
            recent.clear()
        recent[item_id] = position
        return item_id

    def __iter__(self) -> Iterator[str]:
        return (key.decode() for key in self.by_position.tolist())

    def get(self, item_id: str, default: int | None = None) -> int | None:
        """The position of `item_id`, or `default`."""
        position = self._recent.get(item_id)
        if position is not None:
            return position
        key = item_id.encode()
        sorted_ids = self.sorted_ids
        if len(key) > sorted_ids.itemsize:
            return default
        # The key in the column's own width: a key of another width makes numpy cast the
        # whole column to a common one first (60 us a lookup at 100k ids, not 2).
        found = int(sorted_ids.searchsorted(np.array(key, dtype=sorted_ids.dtype)))
        if found < len(sorted_ids) and sorted_ids[found] == key:
            return int(self.order[found])
        return default

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self.get(item_id) is not None

    def take(self, positions: npt.NDArray[np.int64]) -> list[str]:
        """The ids at `positions`, decoded."""
        return [key.decode() for key in self.by_position[positions].tolist()]
