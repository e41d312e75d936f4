"""The items of a loaded scope, as the store's `items` mapping: those the index file lists
stay in their JSONL files until asked for.

A scope loaded from its index file (`memory.store.index_file`) gets its items as columns
(`BaseItems`: per item its id, layer, type, times, and where its line is in which file),
mapped from the file, not parsed: a million items are then a few dozen MB and no Python
objects, where parsing them took most of a 12.7 s load and 1.8 GB. `ItemTable[id]` reads
the item's one line (`os.pread`) and parses it (about 10 us; a cache keeps the last few
thousand). Items written after the load (and the ones the load read because they were
written after the index file was saved) are held as objects in `new`, after the base in
the mapping's order, as in a dict where they were inserted last.

The lines are the store's own (only appended; a rewrite replaces the file, which makes the
index file stale). A line that no longer holds its item (another process rewrote the file
under a running bot) reads as a missing item, and `on_stale` is told, so the store loads
again at its next call.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
    ValuesView,
)
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, overload

import numpy as np
import numpy.typing as npt
import orjson

from mnemobot.memory.store.id_column import IdColumn
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem

_T = TypeVar("_T")
LAYERS: tuple[Layer, ...] = tuple(Layer)
TYPES: tuple[ItemType, ...] = tuple(ItemType)
LAYER_CODE = {layer: code for code, layer in enumerate(LAYERS)}
TYPE_CODE = {item_type: code for code, item_type in enumerate(TYPES)}
# Items parsed from their lines and kept: a pack reads the same few hundred again and
# again (its hits, the turns around them); a long chat's newest turns are read every turn.
_CACHE_ITEMS = 32_768
# Item files kept open for reading lines (one per episodic day: thousands in a big scope).
_OPEN_FILES = 64
# Lines read per chunk when many items are asked for at once (`values()`).
_BULK_CHUNK = 16_384


@dataclass(slots=True)
class BaseItems:
    """Items as an index file lists them, by position (see the module docstring)."""

    ids: IdColumn
    layer: npt.NDArray[np.uint8]
    type: npt.NDArray[np.uint8]
    created: npt.NDArray[np.float64]
    updated: npt.NDArray[np.float64]
    file: npt.NDArray[np.uint32]
    offset: npt.NDArray[np.int64]
    length: npt.NDArray[np.uint32]
    # (layer code byte + fingerprint) sorted, and each one's position.
    fingerprint_keys: npt.NDArray[np.bytes_]
    fingerprint_order: npt.NDArray[np.int32]
    # Positions of the conversation turns, in (created_at, id) order.
    turns: npt.NDArray[np.int32]
    files: list[Path]


def fingerprint_key(layer: Layer, fingerprint: str) -> bytes:
    return bytes((LAYER_CODE[layer] + 65,)) + fingerprint.encode()


class _Lines:
    """Reads lines of the item files by position, a few files kept open (closed when the
    table goes, or is closed). Callers outside the scope's lock (the memory page reads a
    store's items) may read at the same time: the open files are behind a lock."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self._open: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._open)

    def read(self, file: int, offset: int, length: int) -> bytes:
        with self._lock:
            fd = self._open.get(file)
            if fd is None:
                fd = os.open(self.files[file], os.O_RDONLY)
                self._open[file] = fd
                if len(self._open) > _OPEN_FILES:
                    os.close(self._open.popitem(last=False)[1])
            else:
                self._open.move_to_end(file)
            return os.pread(fd, length, offset)

    def close(self) -> None:
        with self._lock:
            _close_all(self._open)


def _close_all(open_files: OrderedDict[int, int]) -> None:
    while open_files:
        os.close(open_files.popitem()[1])


class ItemTable(Mapping[str, MemoryItem]):
    """id -> item for one scope: `BaseItems` read on demand, then the items in `new`.

    Why so many methods: it stands in for the store's dict (a `Mapping`, with the dict's
    `pop`, `update` and item assignment), and answers from its columns what would
    otherwise read every item (times, fingerprints, counts, durable items)."""

    def __init__(
        self,
        scope: str,
        base: BaseItems | None = None,
        on_stale: Callable[[], None] | None = None,
    ) -> None:
        self.scope = scope
        self.base = base
        self.new: dict[str, MemoryItem] = {}
        size = len(base.ids) if base is not None else 0
        # Base items still current (not replaced by a newer version in `new`, not dropped).
        self.alive = np.ones(size, dtype=bool)
        self.base_live = size
        # Two generations: when the newer fills up it becomes the older one, so what is
        # read again and again stays while one-off reads pass through.
        self._cache: dict[str, MemoryItem] = {}
        self._older: dict[str, MemoryItem] = {}
        self._lines = _Lines(base.files) if base is not None else None
        self._on_stale = on_stale

    def close(self) -> None:
        if self._lines is not None:
            self._lines.close()

    # ------------------------------------------------------------------ reads

    def __len__(self) -> int:
        return len(self.new) + self.base_live

    @overload
    def get(self, item_id: str, /) -> MemoryItem | None: ...

    @overload
    def get(self, item_id: str, default: MemoryItem, /) -> MemoryItem: ...

    @overload
    def get(self, item_id: str, default: _T, /) -> MemoryItem | _T: ...

    def get(self, item_id: str, default: object = None, /) -> object:
        found = self.new.get(item_id) or self._cache.get(item_id)
        if found is not None:
            return found
        position = self.base_position(item_id)
        if position is None:
            return default
        item = self.at(position)
        return default if item is None else item

    def __getitem__(self, item_id: str) -> MemoryItem:
        found = self.get(item_id)
        if found is None:
            raise KeyError(item_id)
        return found

    def __contains__(self, item_id: object) -> bool:
        if item_id in self.new:
            return True
        return isinstance(item_id, str) and self.base_position(item_id) is not None

    def base_position(self, item_id: str) -> int | None:
        """Where a current base item is (None: not in the base, or no longer current)."""
        if self.base is None or not self.base_live:
            return None
        position = self.base.ids.get(item_id)
        if position is None or not self.alive[position]:
            return None
        return position

    def at(self, position: int) -> MemoryItem | None:
        """The base item at `position`, read from its line."""
        base, lines = self.base, self._lines
        assert base is not None and lines is not None
        item_id = base.ids[position]
        item = self._cache.get(item_id)
        if item is not None:
            return item
        item = self._older.get(item_id)
        if item is not None:
            self._remember(item)
            return item
        try:
            line = lines.read(
                int(base.file[position]), int(base.offset[position]), int(base.length[position])
            )
        except OSError:
            line = b""
        item = self._parse(line, position)
        if item is not None:
            self._remember(item)
        return item

    def _remember(self, item: MemoryItem) -> None:
        if len(self._cache) >= _CACHE_ITEMS:
            self._older = self._cache
            self._cache = {}
        self._cache[item.id] = item

    def _parse(self, line: bytes, position: int) -> MemoryItem | None:
        assert self.base is not None
        try:
            item = MemoryItem.from_json_dict(orjson.loads(line))
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError, OverflowError):
            item = None
        if item is None or item.id != self.base.ids[position]:
            if self._on_stale is not None:
                self._on_stale()
            return None
        if item.scope == self.scope:
            item.scope = self.scope
        return item

    def __iter__(self) -> Iterator[str]:
        if self.base is not None and self.base_live:
            yield from self.base.ids.take(np.flatnonzero(self.alive))
        yield from self.new

    def __reversed__(self) -> Iterator[str]:
        yield from reversed(self.new)
        if self.base is None or not self.base_live:
            return
        ids, alive = self.base.ids, self.alive
        for position in range(len(alive) - 1, -1, -1):
            if alive[position]:
                yield ids[position]

    def values(self) -> ItemValues:
        return ItemValues(self)

    def items(self) -> ItemPairs:
        return ItemPairs(self)

    def iter_values(self) -> Iterator[MemoryItem]:
        """Every item, in order: the base's read in bulk, a file span at a time."""
        if self.base is not None and self.base_live:
            live = np.flatnonzero(self.alive)
            for start in range(0, len(live), _BULK_CHUNK):
                yield from self.read_many(live[start : start + _BULK_CHUNK])
        yield from self.new.values()

    def read_many(
        self, positions: npt.NDArray[np.int64], needle: bytes | None = None
    ) -> list[MemoryItem]:
        """The base items at `positions` (current ones), in that order; one read of each
        file's span instead of one per line. With `needle`, only items whose line holds
        those bytes (the rest are not even parsed)."""
        base = self.base
        assert base is not None
        found: dict[int, MemoryItem] = {}
        files = base.file[positions]
        for file in np.unique(files).tolist():
            mine = positions[files == file]
            offsets = base.offset[mine]
            ends = offsets + base.length[mine]
            start = int(offsets.min())
            try:
                with open(base.files[file], "rb") as handle:
                    handle.seek(start)
                    span = handle.read(int(ends.max()) - start)
            except OSError:
                span = b""
            for position, offset, end in zip(
                mine.tolist(), (offsets - start).tolist(), (ends - start).tolist(), strict=True
            ):
                if needle is not None and span.find(needle, offset, end) < 0:
                    continue
                item_id = base.ids[position]
                item = (
                    self._cache.get(item_id)
                    or self._older.get(item_id)
                    or self._parse(span[offset:end], position)
                )
                if item is not None:
                    found[position] = item
        return [found[p] for p in positions.tolist() if p in found]

    # -------------------------------------------------------- column queries

    def updated_at(self, item_id: str) -> float | None:
        """When the item was last updated, without reading it (None: unknown)."""
        found = self.new.get(item_id)
        if found is not None:
            return found.updated_at
        position = self.base_position(item_id)
        if position is None or self.base is None:
            return None
        return float(self.base.updated[position])

    def created_within(
        self, ranges: Sequence[tuple[float, float]], layers: Iterable[Layer] | None = None
    ) -> list[MemoryItem]:
        """The current items created within any of `ranges` (base ones by their column)."""
        found: list[MemoryItem] = []
        if self.base is not None and self.base_live:
            created = self.base.created
            inside = np.zeros(len(created), dtype=bool)
            for start, end in ranges:
                inside |= (created >= start) & (created < end)
            inside &= self.alive
            if layers is not None:
                codes = [LAYER_CODE[layer] for layer in layers]
                inside &= np.isin(self.base.layer, codes)
            found = self.read_many(np.flatnonzero(inside))
        found.extend(
            item
            for item in self.new.values()
            if any(start <= item.created_at < end for start, end in ranges)
        )
        return found

    def base_with_fingerprint(self, key: bytes) -> list[int]:
        """Current base positions whose (layer, fingerprint) key is `key`, oldest first."""
        base = self.base
        if base is None or not self.base_live:
            return []
        keys = base.fingerprint_keys
        if len(key) > keys.itemsize:
            return []
        probe = np.array(key, dtype=keys.dtype)  # of the column's width (see `IdColumn.get`)
        start = int(keys.searchsorted(probe, side="left"))
        end = int(keys.searchsorted(probe, side="right"))
        found = sorted(int(p) for p in base.fingerprint_order[start:end])
        return [p for p in found if self.alive[p]]

    def counts(self) -> tuple[dict[Layer, int], dict[ItemType, int]]:
        """Current items per layer and per type."""
        layers: dict[Layer, int] = {}
        types: dict[ItemType, int] = {}
        if self.base is not None and self.base_live:
            per_layer = np.bincount(self.base.layer[self.alive], minlength=len(LAYERS))
            per_type = np.bincount(self.base.type[self.alive], minlength=len(TYPES))
            layers = {LAYERS[c]: int(n) for c, n in enumerate(per_layer.tolist()) if n}
            types = {TYPES[c]: int(n) for c, n in enumerate(per_type.tolist()) if n}
        for item in self.new.values():
            layers[item.layer] = layers.get(item.layer, 0) + 1
            types[item.type] = types.get(item.type, 0) + 1
        return layers, types

    def read_durable(self, needle: bytes | None = None) -> Iterator[MemoryItem]:
        """The current base items that are not episodic, read in bulk, in order (with
        `needle`: those whose line holds it, see `read_many`)."""
        if self.base is None or not self.base_live:
            return
        durable = np.flatnonzero(self.alive & (self.base.layer != LAYER_CODE[Layer.EPISODIC]))
        for start in range(0, len(durable), _BULK_CHUNK):
            yield from self.read_many(durable[start : start + _BULK_CHUNK], needle)

    def durable_base_ids(self) -> list[str]:
        """Ids of the current base items that are not episodic, in order."""
        if self.base is None or not self.base_live:
            return []
        durable = self.alive & (self.base.layer != LAYER_CODE[Layer.EPISODIC])
        return self.base.ids.take(np.flatnonzero(durable))

    # ----------------------------------------------------------------- writes

    def __setitem__(self, item_id: str, item: MemoryItem) -> None:
        """Insert (last in order) or replace; a base item becomes a `new` one."""
        self._retire(item_id)
        self.new.pop(item_id, None)
        self.new[item_id] = item

    def update(self, pairs: Iterable[tuple[str, MemoryItem]]) -> None:
        if self.base is None:
            self.new.update(pairs)
            return
        for item_id, item in pairs:
            self[item_id] = item

    def pop(self, item_id: str, default: MemoryItem | None = None) -> MemoryItem | None:
        found = self.new.pop(item_id, None)
        if found is not None:
            return found
        position = self.base_position(item_id)
        if position is None:
            return default
        item = self.at(position)
        self._retire(item_id)
        return item if item is not None else default

    def _retire(self, item_id: str) -> None:
        position = self.base_position(item_id)
        if position is not None:
            self.alive[position] = False
            self.base_live -= 1
            self._cache.pop(item_id, None)
            self._older.pop(item_id, None)


class ItemValues(ValuesView[MemoryItem]):
    """The table's items as a dict's `values()` is: iterable again and again (a caller
    walking it twice sees every item twice), each walk reading the base in bulk."""

    _mapping: ItemTable

    def __iter__(self) -> Iterator[MemoryItem]:
        return self._mapping.iter_values()


class ItemPairs(ItemsView[str, MemoryItem]):
    """`(id, item)` pairs as a dict's `items()` is, read in bulk like `ItemValues`."""

    _mapping: ItemTable

    def __iter__(self) -> Iterator[tuple[str, MemoryItem]]:
        return ((item.id, item) for item in self._mapping.iter_values())
