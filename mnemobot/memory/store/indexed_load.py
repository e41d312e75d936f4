"""The store's half that loads a scope from its index file and saves that file.

`ScopeItemStore` (`memory.store.item_store`) inherits this: a load first tries the index
file (`memory.store.index_file`). When it is usable, the items stay on disk behind the
store's `ItemTable`, the BM25 index and the timeline are mapped from the file, and only
the lines written since the file was saved are read (the *tail*: parsed, put in the
store, tokenized in one bulk call). When it is not (none yet, stale, torn), the store
reads its files as it always did, and a big enough scope saves the file and takes its
items from it, so what stays in memory is the same either way.

Measured with `mnemobot bench memory --items 1000000` (see docs/measured.md).
"""

from __future__ import annotations

import os
import threading
import weakref
from array import array
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.id_column import IdColumn
from mnemobot.memory.store.index_file import IndexLoad, StoreMeta, read_index, write_index
from mnemobot.memory.store.item_table import (
    LAYER_CODE,
    TYPE_CODE,
    BaseItems,
    ItemTable,
    fingerprint_key,
)
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.store.turn_timeline import TurnTimeline

# After a load that read this many items from their lines (written since the index file
# was saved; at least the share 1/_RESAVE_SHARE of the scope), the file is saved again,
# so the next load does not read and tokenize them once more.
RESAVE_MIN_ITEMS = 2_000
_RESAVE_SHARE = 20
# Up to this many items read since the save go into the BM25 index one by one (its
# dynamic segment holds up to 2,048 before merging them into its base).
_ADD_ONE_BY_ONE = 1_024
# Below this much JSONL (about 10k items) checking every file's CRC costs under 10 ms.
RESAVE_MIN_BYTES = 5_000_000


class MovedItem(Exception):
    """A line written since the index file was saved puts an item in another file than
    the one the index knows it in (a hand edit): the files are read whole instead."""


class IndexedLoad:
    """Loading from, and saving, the index file (mixed into `ScopeItemStore`, whose
    state its methods use: declared here, not imported, which would make a cycle)."""

    paths: ScopePaths
    items: ItemTable
    timeline: TurnTimeline
    index_load: IndexLoad | None
    _lock: threading.RLock
    _loaded: bool
    _index: Any  # the store's `TermIndex` (a `BM25Index` when it keeps an index file)
    _terms_identity: str | None
    _lines_at: dict[str, tuple[int, int, int]] | None
    _lines: Counter[Path]
    _home: dict[str, Path]
    _skipped: int
    _tombstones: dict[str, dict[str, Any]]
    _tombstone_home: dict[str, Path]
    _remember_tombstone: Callable[[dict[str, Any], Path], None]
    _drop: Callable[[str], MemoryItem | None]
    _insert: Callable[..., None]
    _is_forgotten: Callable[[MemoryItem], bool]
    _with_fingerprint: Callable[[str], list[MemoryItem]]
    _index_all: Callable[[list[MemoryItem]], None]
    _index_one: Callable[[MemoryItem], None]

    @property
    def scope(self) -> str:
        return self.paths.scope

    def _open_index_file(self) -> IndexLoad | None:
        """The index file as this load finds it (None: this store keeps none)."""
        if self._terms_identity is None:
            self.index_load = None
            return None
        found = read_index(self.paths.index_file, self._terms_identity)
        index = self._index
        assert isinstance(index, BM25Index)
        if found is not None and found.params != (index.k1, index.b, index.delta):
            found = None
        self.index_load = IndexLoad(self.paths.items_dir, found)
        return self.index_load

    def _load_indexed(self, keeper: IndexLoad) -> bool:
        """Load from the index file and the tails of the item files; False (the store
        half-loaded: reset it) when the file turns out stale."""
        found = keeper.found
        assert found is not None and self._lines_at is not None
        paths = self.paths.item_files()
        if not set(found.files) <= {keeper.name(path) for path in paths}:
            return False
        tails: list[tuple[int, Path, bytes, int]] = []
        for number, path in enumerate(paths):
            try:
                if keeper.unchanged(path, os.stat(path)):
                    continue
                with open(path, "rb") as handle:
                    stat = os.fstat(handle.fileno())
                    data = handle.read()
            except FileNotFoundError:
                return False
            start = keeper.check(path, stat, data)
            if start is None:
                return False
            if start < len(data):
                tails.append((number, path, data, start))
        base = found.items
        # A weak callback: no cycle keeps a dropped store alive (see `ScopeItemStore`).
        changed = weakref.WeakMethod(self._files_changed)
        self.items = ItemTable(self.scope, base, on_stale=lambda: _call(changed))
        index = self._index
        assert isinstance(index, BM25Index)
        index.load_arrays(found.arrays)
        turns = base.turns
        times = array("d")
        times.frombytes(np.ascontiguousarray(base.created[turns]).tobytes())
        self.timeline.rebuild_from(times, turns.tolist())
        for number, record in found.meta.tombstones:
            self._remember_tombstone(record, base.files[number])
        self._skipped = found.meta.skipped
        for number, count in enumerate(found.meta.lines):
            self._lines[base.files[number]] = count
        try:
            self._read_tails(tails)
        except MovedItem:
            return False
        read_anew = list(self.items.new.values())
        if len(read_anew) > _ADD_ONE_BY_ONE:
            self._index_all(read_anew)
        else:
            # Into the index's small segment: a bulk add rebuilds its whole base (2-4 s at
            # 1M items), a few hundred single adds take milliseconds.
            for item in read_anew:
                self._index_one(item)
        keeper.read_anew = len(read_anew)
        # Saved again when many lines were read (they would be at every load), or most
        # files had to be checked by their bytes (a copied scope: new inodes and times).
        if len(read_anew) >= max(RESAVE_MIN_ITEMS, len(self.items) // _RESAVE_SHARE) or (
            keeper.checked_bytes > keeper.total_bytes // 2 >= RESAVE_MIN_BYTES
        ):
            self.save_index_file()
        return True

    def _read_tails(self, tails: list[tuple[int, Path, bytes, int]]) -> None:
        """Take in the lines written since the index file was saved, as a full load
        would have: only the last line of an id counts, tombstones forget (whichever file
        they are in); nothing is indexed yet."""
        assert self._lines_at is not None
        base = self.items.base
        # id -> (item, or None when its last line does not parse; file number, path,
        # offset and length of that line), in the order of their last lines.
        latest: dict[str, tuple[MemoryItem | None, int, Path, int, int]] = {}
        tombstones: list[dict[str, Any]] = []
        for number, path, data, start in tails:
            offset = start
            lines = 0
            for line in data[start:].split(b"\n"):
                at = offset
                offset += len(line) + 1
                if not line or line.isspace():
                    continue
                lines += 1
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    record = None
                if type(record) is not dict:
                    self._skipped += 1
                    continue
                if record.get("tombstone") is True:
                    self._remember_tombstone(record, path)
                    tombstones.append(record)
                    continue
                item_id = record.get("id")
                if type(item_id) is not str or not item_id:
                    self._skipped += 1
                    continue
                position = base.ids.get(item_id) if base is not None else None
                if base is not None and position is not None:
                    if base.files[base.file[position]] != path:
                        raise MovedItem(item_id)
                elif item_id in latest and latest[item_id][2] != path:
                    raise MovedItem(item_id)
                try:
                    item: MemoryItem | None = MemoryItem.from_json_dict(record)
                except (KeyError, ValueError, TypeError, OverflowError):
                    item = None
                latest.pop(item_id, None)
                latest[item_id] = (item, number, path, at, len(line))
            self._lines[path] += lines
        for record in tombstones:
            self._drop_forgotten(record)
        for item_id, (item, number, path, at, length) in latest.items():
            if item_id in self.items:
                self._drop(item_id)
            if item is None:
                self._skipped += 1
                continue
            if self._is_forgotten(item):
                continue
            if item.scope == self.scope:
                item.scope = self.scope
            self._insert(item, index=False)
            self._home[item_id] = path
            self._lines_at[item_id] = (number, at, length)

    def _drop_forgotten(self, tombstone: dict[str, Any]) -> None:
        """Drop what a tombstone read after the items forgets: its id, its fingerprint."""
        item_id = tombstone.get("id")
        if isinstance(item_id, str) and item_id in self.items:
            self._drop(item_id)
            self._home.pop(item_id, None)
        fp = tombstone.get("fingerprint")
        if isinstance(fp, str) and fp:
            for item in self._with_fingerprint(fp):
                if self._is_forgotten(item):
                    self._drop(item.id)
                    self._home.pop(item.id, None)

    def _files_changed(self) -> None:
        """An item's line no longer holds it: read the files anew at the next call."""
        self._loaded = False

    # ------------------------------------------------------------------ saving

    def save_index_file(self) -> bool:
        """Write the index file (atomically) for the items as this load read them; False
        when this store keeps none, or anything was written since the load (the file can
        only say where the lines it read are)."""
        with self._lock:
            keeper = self.index_load
            if keeper is None or self._lines_at is None or self._terms_identity is None:
                return False
            index = self._index
            assert isinstance(index, BM25Index)
            arrays = index.to_arrays()
            items = self._columns(len(keeper.states))
            if items is None:
                return False
            if _same_order(arrays.ids, items.ids):
                arrays.ids = items.ids
            elif not isinstance(arrays.ids, IdColumn):
                # Some items are not in the word index (the days' digests).
                documents = IdColumn.of(arrays.ids)
                if documents is None:
                    return False
                arrays.ids = documents
            numbers = self._file_numbers(keeper)
            tombstones = [
                (numbers[self._tombstone_home[item_id]], record)
                for item_id, record in self._tombstones.items()
                if self._tombstone_home[item_id] in numbers
            ]
            lines = [0] * len(keeper.states)
            for path, count in self._lines.items():
                if path in numbers:
                    lines[numbers[path]] = count
            write_index(
                self.paths.index_file,
                arrays,
                items,
                keeper.states,
                StoreMeta(tombstones, self._skipped, lines),
                self._terms_identity,
                (index.k1, index.b, index.delta),
            )
            keeper.saved = True
            return True

    def _file_numbers(self, keeper: IndexLoad) -> dict[Path, int]:
        return {self.paths.items_dir / state.name: n for n, state in enumerate(keeper.states)}

    def _columns(self, files: int) -> BaseItems | None:
        """The columns of every item, in the store's order (None: a line is not known)."""
        assert self._lines_at is not None
        table = self.items
        keeper = self.index_load
        assert keeper is not None
        numbers = self._file_numbers(keeper)
        parts: dict[str, list[np.ndarray]] = {
            name: [] for name in ("ids", "layer", "type", "created", "updated", "file")
        }
        parts.update(offset=[], length=[], fingerprints=[])
        base = table.base
        if base is not None and table.base_live:
            live = np.flatnonzero(table.alive)
            # The base's file numbers, as this load numbers the files.
            renumber = np.array([numbers.get(path, -1) for path in base.files], dtype=np.int64)
            fingerprints = np.empty(len(base.fingerprint_keys), dtype=base.fingerprint_keys.dtype)
            fingerprints[base.fingerprint_order] = base.fingerprint_keys
            parts["ids"].append(base.ids.by_position[live])
            parts["layer"].append(base.layer[live])
            parts["type"].append(base.type[live])
            parts["created"].append(base.created[live])
            parts["updated"].append(base.updated[live])
            parts["file"].append(renumber[base.file[live]])
            parts["offset"].append(base.offset[live])
            parts["length"].append(base.length[live])
            parts["fingerprints"].append(fingerprints[live])
        fresh = list(table.new.values())
        places = [self._lines_at.get(item.id) for item in fresh]
        if any(place is None for place in places):
            return None
        ids = IdColumn.of(item.id for item in fresh)
        if fresh and ids is None:
            return None
        if fresh and ids is not None:
            parts["ids"].append(ids.by_position)
            parts["layer"].append(np.array([LAYER_CODE[i.layer] for i in fresh], np.uint8))
            parts["type"].append(np.array([TYPE_CODE[i.type] for i in fresh], np.uint8))
            parts["created"].append(np.array([i.created_at for i in fresh], np.float64))
            parts["updated"].append(np.array([i.updated_at for i in fresh], np.float64))
            known = [place for place in places if place is not None]
            parts["file"].append(np.array([p[0] for p in known], np.int64))
            parts["offset"].append(np.array([p[1] for p in known], np.int64))
            parts["length"].append(np.array([p[2] for p in known], np.uint32))
            parts["fingerprints"].append(
                np.array([fingerprint_key(i.layer, i.fingerprint) for i in fresh])
            )
        if not parts["ids"]:
            return _empty_columns(base.files if base is not None else [])
        by_position = _joined(parts["ids"])
        order = np.argsort(by_position, kind="stable").astype(np.int32)
        files_of = np.concatenate(parts["file"])
        if len(files_of) and (files_of.min() < 0 or files_of.max() >= files):
            return None
        keys = _joined(parts["fingerprints"])
        key_order = np.argsort(keys, kind="stable").astype(np.int32)
        layer = np.concatenate(parts["layer"])
        kind = np.concatenate(parts["type"])
        created = np.concatenate(parts["created"])
        turn = np.flatnonzero(
            (kind == TYPE_CODE[ItemType.TURN]) & (layer == LAYER_CODE[Layer.EPISODIC])
        )
        turns = turn[np.lexsort((by_position[turn], created[turn]))].astype(np.int32)
        return BaseItems(
            ids=IdColumn(by_position, by_position[order], order),
            layer=layer,
            type=kind,
            created=created,
            updated=np.concatenate(parts["updated"]),
            file=files_of.astype(np.uint32),
            offset=np.concatenate(parts["offset"]),
            length=np.concatenate(parts["length"]).astype(np.uint32),
            fingerprint_keys=keys[key_order],
            fingerprint_order=key_order,
            turns=turns,
            files=[],
        )


def _call(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    found = method()
    if found is not None:
        found()


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """Fixed-width byte columns of different widths as one column."""
    width = max(part.dtype.itemsize for part in parts)
    return np.concatenate([part.astype(f"S{max(width, 1)}") for part in parts])


def _empty_columns(files: list[Path]) -> BaseItems:
    empty_ids = np.zeros(0, dtype="S1")
    return BaseItems(
        ids=IdColumn(empty_ids, empty_ids, np.zeros(0, np.int32)),
        layer=np.zeros(0, np.uint8),
        type=np.zeros(0, np.uint8),
        created=np.zeros(0, np.float64),
        updated=np.zeros(0, np.float64),
        file=np.zeros(0, np.uint32),
        offset=np.zeros(0, np.int64),
        length=np.zeros(0, np.uint32),
        fingerprint_keys=np.zeros(0, dtype="S1"),
        fingerprint_order=np.zeros(0, np.int32),
        turns=np.zeros(0, np.int32),
        files=files,
    )


def _same_order(ids: list[str] | IdColumn, column: IdColumn) -> bool:
    """Whether the BM25 index's documents are the items, in the same order."""
    if isinstance(ids, IdColumn):
        return ids is column or np.array_equal(ids.by_position, column.by_position)
    if len(ids) != len(column):
        return False
    encoded = np.array([doc_id.encode() for doc_id in ids], dtype=column.by_position.dtype)
    return bool(np.array_equal(encoded, column.by_position))
