"""Which row of the vector file holds each live item's vector, kept in numpy columns.

A scope's live item ids are known at load (the item store has them); each is stored in a
record as its 32-byte key (`vector_file.id_key`). The index holds the keys sorted by a
64-bit hash of them, and beside each the row of its latest valid record (-1: none yet),
so a lookup is a `searchsorted` and a whole file's records are matched in a few vectorized
passes. Python dicts of a million keys took 375 MB and most of a 2.7 s load at 1M items
(`mnemobot bench vector-backends`); these columns take 49 bytes a key.

Hashes are only the sort order: every match is confirmed on the whole key. Keys whose
hashes collide, and items written after the load, sit in a small dict beside the columns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

ID_BYTES = 32
KEY_DTYPE = np.dtype(f"S{ID_BYTES}")
_NUL = 0
_TILDE = ord("~")
# splitmix64-style odd multipliers: any fixed mixing does, every match is checked whole.
_MIX = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
    dtype=np.uint64,
)


def id_key(item_id: str) -> bytes:
    """The id as stored: itself when it fits in 32 bytes, else "~" and its hash."""
    raw = item_id.encode()
    if len(raw) <= ID_BYTES and not raw.startswith(b"~") and b"\0" not in raw:
        return raw
    return b"~" + hashlib.blake2b(raw, digest_size=15).hexdigest().encode()


def id_keys(item_ids: Sequence[str]) -> tuple[np.ndarray, dict[bytes, str]]:
    """The keys of `item_ids` (an S32 column), and the ids stored hashed by their key.

    Vectorized `id_key`: a million ids in about 0.4 s against 1.4 s one by one."""
    raw = list(map(str.encode, item_ids))
    lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
    keys = np.fromiter(raw, dtype=KEY_DTYPE, count=len(raw))  # longer ones cut: fixed below
    data = keys.view(np.uint8).reshape(len(raw), ID_BYTES)
    inside = np.arange(ID_BYTES) < lengths[:, None]
    odd = (lengths > ID_BYTES) | (data[:, 0] == _TILDE) | ((data == _NUL) & inside).any(axis=1)
    hashed: dict[bytes, str] = {}
    for position in np.flatnonzero(odd).tolist():
        key = id_key(item_ids[position])
        keys[position] = key
        hashed[key] = item_ids[position]
    return keys, hashed


def key_hashes(keys: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each S32 key."""
    words = np.ascontiguousarray(keys, dtype=KEY_DTYPE).view("<u8").reshape(len(keys), 4)
    mixed = words * _MIX
    hashed = mixed[:, 0] ^ mixed[:, 1] ^ mixed[:, 2] ^ mixed[:, 3]
    hashed ^= hashed >> np.uint64(31)
    hashed *= np.uint64(0xBF58476D1CE4E5B9)
    hashed ^= hashed >> np.uint64(29)
    return hashed


# Keys written since the load that are kept in the dict before they join the columns:
# a million-key merge costs about 0.2 s, so it comes at most once per this many new items.
_EXTRA_MAX = 65_536


class KeyIndex:
    """Live item key -> row of its latest valid record (see the module docstring)."""

    def __init__(self, keys: np.ndarray, rows: np.ndarray | None = None) -> None:
        hashes = key_hashes(keys)
        order = np.argsort(hashes, kind="stable")
        hashes, keys = hashes[order], keys[order]
        rows = np.full(len(keys), -1, dtype=np.int64) if rows is None else rows[order]
        clash = np.zeros(len(hashes), dtype=bool)
        if len(hashes) > 1:
            same = hashes[1:] == hashes[:-1]
            clash[1:] |= same
            clash[:-1] |= same
        # Keys whose hash is not unique (or given twice): looked up in the dict instead.
        self._extra: dict[bytes, int] = {}
        for key, row in zip(keys[clash].tolist(), rows[clash].tolist(), strict=True):
            self._extra[key] = max(row, self._extra.get(key, -1))
        self._hashes = np.ascontiguousarray(hashes[~clash])
        self._keys = np.ascontiguousarray(keys[~clash])
        self._rows = np.ascontiguousarray(rows[~clash])
        # Discarded (forgotten) since the load: their later records count no more.
        self._gone = np.zeros(len(self._keys), dtype=bool)

    def _positions(self, keys: np.ndarray) -> np.ndarray:
        """Each key's place in the columns, or -1."""
        if not len(self._keys) or not len(keys):
            return np.full(len(keys), -1, dtype=np.int64)
        hashes = key_hashes(keys)
        # Sorted queries walk the columns in order (three times faster at 1M than random).
        order = np.argsort(hashes)
        found = np.empty(len(keys), dtype=np.int64)
        found[order] = np.searchsorted(self._hashes, hashes[order])
        np.minimum(found, len(self._keys) - 1, out=found)
        hit = (self._hashes[found] == hashes) & (self._keys[found] == keys)
        return np.where(hit, found, -1)

    def rows_of(self, keys: Sequence[bytes]) -> np.ndarray:
        """The row of each key's vector, or -1 (no vector, or not a live item)."""
        column = np.array(keys, dtype=KEY_DTYPE) if keys else np.zeros(0, dtype=KEY_DTYPE)
        found = self._positions(column)
        hit = found >= 0
        rows = np.full(len(keys), -1, dtype=np.int64)
        rows[hit] = np.where(self._gone[found[hit]], -1, self._rows[found[hit]])
        if self._extra:
            for position in np.flatnonzero(~hit).tolist():
                rows[position] = self._extra.get(keys[position], -1)
        return rows

    def track(self, keys: Sequence[bytes]) -> None:
        """These keys are live items from now on (written since the load)."""
        column = np.array(keys, dtype=KEY_DTYPE) if keys else np.zeros(0, dtype=KEY_DTYPE)
        found = self._positions(column)
        self._gone[found[found >= 0]] = False
        for position in np.flatnonzero(found < 0).tolist():
            self._extra.setdefault(keys[position], -1)
        if len(self._extra) > _EXTRA_MAX:
            self._merge_extra()

    def _merge_extra(self) -> None:
        """Move the dict's keys into the columns (discarded keys are left out)."""
        live = ~self._gone
        merged = KeyIndex(
            np.concatenate([self._keys[live], np.array(list(self._extra), dtype=KEY_DTYPE)]),
            np.concatenate([self._rows[live], np.fromiter(self._extra.values(), dtype=np.int64)]),
        )
        self._extra, self._hashes, self._keys = merged._extra, merged._hashes, merged._keys
        self._rows, self._gone = merged._rows, merged._gone

    def discard(self, keys: Sequence[bytes]) -> np.ndarray:
        """These keys are live items no more; the rows their vectors were in."""
        column = np.array(keys, dtype=KEY_DTYPE) if keys else np.zeros(0, dtype=KEY_DTYPE)
        found = self._positions(column)
        places = found[found >= 0]
        dropped = [self._rows[places][~self._gone[places]]]
        self._rows[places] = -1
        self._gone[places] = True
        for position in np.flatnonzero(found < 0).tolist():
            row = self._extra.pop(keys[position], -1)
            if row >= 0:
                dropped.append(np.array([row], dtype=np.int64))
        rows = np.concatenate(dropped)
        return rows[rows >= 0]

    def clear_rows(self) -> None:
        """The file was replaced: no key has a row until its records are read again."""
        self._rows.fill(-1)
        self._extra = dict.fromkeys(self._extra, -1)

    def take(
        self, start: int, keys: np.ndarray, valid: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Records `start`, `start + 1`, ... with these keys were read (`valid`: their
        checksums held). Returns (rows now live, rows no longer live): the last record
        of a key wins."""
        rows = np.arange(start, start + len(keys), dtype=np.int64)
        found = self._positions(keys)
        hit = valid & (found >= 0)
        hit[hit] = ~self._gone[found[hit]]
        places = found[hit]
        before = self._rows[places]
        # Rows only grow, so the largest is the latest record.
        np.maximum.at(self._rows, places, rows[hit])
        taken = rows[hit]
        now = [taken[self._rows[places] == taken]]  # each key's latest, once
        replaced = [before[before >= 0]]
        if self._extra:
            touched: set[bytes] = set()
            for offset in np.flatnonzero(valid & ~hit).tolist():
                key = bytes(keys[offset])
                previous = self._extra.get(key)
                if previous is None:
                    continue
                if previous >= 0 and previous < start:
                    replaced.append(np.array([previous], dtype=np.int64))
                self._extra[key] = start + offset
                touched.add(key)
            now.append(np.array([self._extra[key] for key in touched], dtype=np.int64))
        return np.concatenate(now), np.concatenate(replaced)


def hashed_ids(item_ids: Iterable[str]) -> dict[bytes, str]:
    """The ids among these stored hashed ("~" and a hash), by their key."""
    found = {}
    for item_id in item_ids:
        key = id_key(item_id)
        if key.startswith(b"~"):
            found[key] = item_id
    return found
