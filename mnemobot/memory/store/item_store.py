"""The structured item store of one memory scope.

Items live in JSONL files a person can read: one file per episodic day, one for the
semantic layer, one for the procedural layer. Files are append-only on the hot path:
an updated item is appended again (the last line of an id wins) and a forgotten one
gets a tombstone line. A tombstone forgets the id *and* the fingerprint, so the same
text extracted again later is dropped instead of coming back. Torn or corrupt lines
(a crash mid-append, a bad hand edit) are skipped and counted; the rest loads.

`compact_files()` rewrites each file with only the live last versions (and the
tombstones, which must outlive the items they forget); it is for a CLI, not per turn.

A big scope loads from its index file instead (`memory.store.indexed_load`): its items
stay in their files and are read when asked for (`memory.store.item_table`), so `items`
is an `ItemTable`, a mapping like a dict. Otherwise a load reads every line:

A load is a bot's cold start for that chat, so it is written for speed and memory: one
pass over the lines (an item per line as it is read, its file straight into `_home`),
one over the items (values most items repeat shared, each put in place), the timeline and
the index built in bulk. Measured on the synthetic 100k-item Russian scope of `bench
memory --lang ru` (2 cores): whole load 1.77 -> 1.62 s CPU, peak RSS of the process 314
-> 277 MB. No longer held: ~22 MB of titles (kept as lengths into the content), ~13 MB
of tag strings, ~7 MB of floats, ~6 MB of (layer, fingerprint) pairs; RSS falls by less,
as the allocator keeps some of what is freed during the load. The module is longer than
most (about 950 lines) because loading, writing and compacting the same files belong
together.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
import weakref
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, tzinfo
from itertools import compress
from operator import add, attrgetter
from pathlib import Path
from types import CodeType
from typing import Any, Protocol

import orjson

from mnemobot.base.atomic_file import append_jsonl, write_atomic
from mnemobot.base.clock import SYSTEM_CLOCK, Clock, from_iso, to_iso
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.index_file import IndexLoad
from mnemobot.memory.store.indexed_load import IndexedLoad
from mnemobot.memory.store.item_table import ItemTable, fingerprint_key
from mnemobot.memory.store.items import (
    SPEAKER_TAG,
    TURN_TAG,
    ItemType,
    Layer,
    MemoryItem,
    fingerprint,
    statement_fingerprint,
)
from mnemobot.memory.store.kept_refs import merged_seen, with_kept_refs
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.store.turn_timeline import TurnTimeline
from mnemobot.memory.text.terms import TEXT_END

PROMOTED_FROM_PREFIX = "promotedFrom:"
# Items tokenized per `terms_joined` call at load. It bounds the transient memory, and the
# time the GIL is held in one C-level pass (~4 ms here; 8192 held it ~18 ms, a lag for
# every other chat while a scope loads in a worker thread) at no cost in load time.
_INDEX_CHUNK = 2048
# A scope of fewer items keeps no index file and all its items in memory: it loads from
# its JSONL in under a second (50k items, 2 cores), and its packs are faster with items
# at hand (10k items, `bench memory`: pack p50 6.9 ms in memory, 12 ms read from disk).
INDEX_FILE_MIN_ITEMS = 50_000

# Where a promoted episodic item goes.
PROMOTION_TARGET: dict[ItemType, Layer] = {
    ItemType.CONSTRAINT: Layer.SEMANTIC,
    ItemType.PREFERENCE: Layer.SEMANTIC,
    ItemType.PROJECT_FACT: Layer.SEMANTIC,
    ItemType.DECISION: Layer.SEMANTIC,
    ItemType.TASK_STATE: Layer.SEMANTIC,
    ItemType.FAILURE: Layer.PROCEDURAL,
    ItemType.FIX: Layer.PROCEDURAL,
    ItemType.COMMAND_RESULT: Layer.PROCEDURAL,
    # Only by hand: a turn's confidence keeps it below automatic promotion.
    ItemType.TURN: Layer.SEMANTIC,
    ItemType.DIGEST: Layer.SEMANTIC,
}


class TermIndex(Protocol):
    """What the store needs of a search index (e.g. `memory.store.bm25.BM25Index`).

    An index may also have `add_many(pairs of (doc_id, terms))` or, given `terms_joined`,
    `add_joined(chunks, end)` (see `memory.store.bm25.BM25Index`); `load()` then builds it in one
    call instead of one `add` per item (at 100k items, under a second instead of seconds).
    """

    def add(self, doc_id: str, terms: list[str]) -> None: ...

    def remove(self, doc_id: str) -> object: ...


def _alive(store: weakref.ReferenceType[ScopeItemStore]) -> ScopeItemStore:
    found = store()
    assert found is not None, "a timeline outlived its store"
    return found


def new_item_id() -> str:
    return uuid.uuid4().hex


def is_indexed(item: MemoryItem) -> bool:
    """Whether the scope's word index holds the item: all but the days' digests, which
    would outmatch the turns they list (`memory.notes.digests` keeps its own index of them)."""
    return item.type is not ItemType.DIGEST


def indexed_text(item: MemoryItem) -> str:
    """The text an item is found by: its content and its tags (titles repeat the content).

    The tags every turn has ("turn", "speaker:NAME") are left out: the content already
    starts with the speaker's name, and a term in nearly every item matches everything.
    """
    return item.content + _tags_text(item.tags) if item.tags else item.content


def _tags_text(tags: Iterable[str]) -> str:
    """What `indexed_text` adds to the content for these tags ("" for none)."""
    own = [tag for tag in tags if tag != TURN_TAG and not tag.startswith(SPEAKER_TAG)]
    return "\n" + " ".join(own) if own else ""


def _indexed_text_identity() -> str:
    """What `indexed_text` does, as its code: an index file saved by other code is rebuilt."""

    def code_bytes(code: CodeType) -> bytes:
        # Nested code (a comprehension) by its own bytes: its repr holds an address.
        consts = b"".join(
            code_bytes(const) if isinstance(const, CodeType) else repr(const).encode()
            for const in code.co_consts
        )
        return code.co_code + consts + repr(code.co_names).encode()

    code = b"".join(code_bytes(function.__code__) for function in (indexed_text, _tags_text))
    return format(zlib.crc32(code + TURN_TAG.encode() + SPEAKER_TAG.encode()), "08x")


class _TagsTexts(dict[tuple[str, ...], str]):
    """Tag list -> `_tags_text` of it, worked out on first lookup."""

    def __missing__(self, tags: tuple[str, ...]) -> str:
        text = self[tags] = _tags_text(tags)
        return text


def _indexed_texts(items: Sequence[MemoryItem], known: _TagsTexts) -> list[str]:
    """`indexed_text` of each item, the tags' part looked up in `known` by tag list.

    Items share a few tag lists ("turn", "speaker:anna"), and every step here is a C-level
    map: at a 100k-item load, one `indexed_text` call per item cost ~60 ms, this ~10 ms.
    (`content + ""` is `content` itself, no copy.)
    """
    extras = map(known.__getitem__, map(tuple, map(_TAGS, items)))
    return list(map(add, map(_CONTENT, items), extras))


_TAGS = attrgetter("tags")
_TYPE = attrgetter("type")
_NOT_DIGEST = ItemType.DIGEST.__ne__
_CONTENT = attrgetter("content")
_ID = attrgetter("id")
_FINGERPRINT = attrgetter("fingerprint")


@dataclass(slots=True)
class StoreStats:
    items: int
    per_layer: dict[str, int]
    per_type: dict[str, int]
    skipped_lines: int
    files: int
    tombstones: int
    # Lines on disk (read at load plus appended since); far above items + tombstones
    # means compact_files() would shrink the files.
    lines: int = 0
    per_file: dict[str, int] = field(default_factory=dict)


def _union(first: Sequence[str], second: Sequence[str]) -> list[str]:
    seen = dict.fromkeys(first)
    seen.update(dict.fromkeys(second))
    return list(seen)


def _whole_seconds(item: MemoryItem) -> MemoryItem:
    """Times as stored on disk (ISO seconds), so a reload gives back equal items."""
    created, updated = float(item.created_at), float(item.updated_at)
    accessed = float(item.last_accessed_at) if item.last_accessed_at is not None else None
    if (
        created.is_integer()
        and updated.is_integer()
        and (accessed is None or accessed.is_integer())
    ):
        return item
    return replace(
        item,
        created_at=float(math.floor(created)),
        updated_at=float(math.floor(updated)),
        last_accessed_at=float(math.floor(accessed)) if accessed is not None else None,
    )


def merge_items(existing: MemoryItem, incoming: MemoryItem) -> MemoryItem:
    """Merge a duplicate (same fingerprint, same layer) into `existing`; keeps its id.

    The messages it names stay a bounded few (`memory.store.kept_refs`): a repeat appends
    the whole item again, so a line that grew with each repeat would grow the file with
    their square."""
    longer = incoming if len(incoming.content) > len(existing.content) else existing
    last_accessed = [t for t in (existing.last_accessed_at, incoming.last_accessed_at) if t]
    references = _union(existing.references, incoming.references)
    merged = replace(
        existing,
        content=longer.content,
        title=longer.title or existing.title or incoming.title,
        tags=_union(existing.tags, incoming.tags),
        references=references,
        confidence=max(existing.confidence, incoming.confidence),
        salience=max(existing.salience, incoming.salience),
        created_at=min(existing.created_at, incoming.created_at),
        # Event time, not wall time: replaying old conversations must not make them "new".
        updated_at=max(existing.updated_at, incoming.updated_at),
        ttl_days=existing.ttl_days if existing.ttl_days is not None else incoming.ttl_days,
        last_accessed_at=max(last_accessed) if last_accessed else None,
        fingerprint=existing.fingerprint,
    )
    return with_kept_refs(merged, merged_seen(existing, incoming, references))


class ScopeItemStore(IndexedLoad):
    """Items of ONE scope, loaded in memory, kept in sync with their files and a term index.

    Not safe for several processes writing the same scope; safe for threads of one process.
    Every mutating call loads the files first if `load()` was not called yet.
    """

    def __init__(
        self,
        paths: ScopePaths,
        *,
        index: TermIndex | None = None,
        terms: Callable[[str], list[str]] | None = None,
        terms_joined: Callable[[Iterable[str]], Iterable[str]] | None = None,
        id_factory: Callable[[], str] = new_item_id,
        clock: Clock = SYSTEM_CLOCK,
        tz: tzinfo = UTC,
        lock: threading.RLock | None = None,
        on_written: Callable[[list[MemoryItem]], None] | None = None,
        on_dropped: Callable[[list[str]], None] | None = None,
        terms_identity: str | None = None,
        index_file_min_items: int = INDEX_FILE_MIN_ITEMS,
    ) -> None:
        """`on_written` is told each item stored or changed (after it is on disk), and
        `on_dropped` each id forgotten or merged away: what keeps data derived from the
        items (their vectors) in step, whichever way they were written.

        `terms_identity` (with a `BM25Index`): what the `terms` function is
        (`memory.text.terms.terms_identity`); given, a scope of `index_file_min_items`
        items or more keeps its index in `items/index.bin` (`memory.store.index_file`)."""
        if index is not None and terms is None:
            raise ValueError("an index needs a `terms` function to turn item text into terms")
        self.paths = paths
        self.items = ItemTable(paths.scope)
        # The turns in time order, for the pack's "turns around a hit".
        # Through a weak reference: no cycle keeps a dropped store (and the index file it
        # maps, an open descriptor) alive until the collector runs.
        store = weakref.ref(self)
        self.timeline = TurnTimeline(
            lambda key: ScopeItemStore._turn_of(_alive(store), key),
            lambda key: ScopeItemStore._turn_id(_alive(store), key),
        )
        self._index = index
        self._terms = terms
        # The terms of many texts at once, for `load()` (see `memory.text.terms.terms_joined`).
        self._terms_joined = terms_joined
        self._id_factory = id_factory
        self._clock = clock
        # Episodic day files are named by this zone's calendar date of created_at.
        self._tz = tz
        # Given by an owner that serializes more than the store's own calls under it (the
        # memory service's per-scope lock also covers its reads of `items` and the index).
        self._lock = lock if lock is not None else threading.RLock()
        self._loaded = False
        self._home: dict[str, Path] = {}
        # layer -> fingerprint -> id (nested, not keyed by (layer, fingerprint): 100k
        # pairs were 6 MB and 100k more objects for the collector to walk at a load), for
        # the items in `items.new`; those of its base are looked up in its columns.
        self._by_fingerprint: dict[Layer, dict[str, str]] = {layer: {} for layer in Layer}
        # Ids of the semantic and procedural items of `items.new`, in insertion order.
        self._durable_new: dict[str, None] = {}
        # Durable ids (re)inserted since the last load, in order, and how many loads there
        # were: a reader that keeps an index over durable items (`memory.write.facts`) reads on
        # from where it stopped instead of going through all of them on every write.
        self.durable_log: list[str] = []
        self.loads = 0
        self._forgotten_ids: set[str] = set()
        # fingerprint -> when it was forgotten: the same text from before that time (an old
        # conversation replayed, extracted again) stays out; said anew afterwards, on
        # purpose, it is a new statement and is kept.
        self._forgotten_fingerprints: dict[str, float] = {}
        # The words of forgotten items, whatever kind held them (`statement_fingerprint`):
        # what the model restates of the conversation (a compaction's flush) never brings
        # them back, as a fact or under another speaker's label.
        self._forgotten_statements: set[str] = set()
        self._tombstones: dict[str, dict[str, Any]] = {}
        self._tombstone_home: dict[str, Path] = {}
        self._skipped = 0
        self._lines: Counter[Path] = Counter()
        self._fresh: dict[str, None] = {}
        self._on_written = on_written
        self._on_dropped = on_dropped
        self._terms_identity = (
            f"{terms_identity}/{_indexed_text_identity()}"
            if terms_identity is not None and isinstance(index, BM25Index)
            else None
        )
        self._index_file_min_items = index_file_min_items
        # How the last load found the index file (None: no index file is kept).
        self.index_load: IndexLoad | None = None
        # Where the line of each item read by this load is (file number, offset,
        # length), to save the index file; None once anything is written.
        self._lines_at: dict[str, tuple[int, int, int]] | None = None

    @property
    def scope(self) -> str:
        return self.paths.scope

    @property
    def lock(self) -> threading.RLock:
        """The lock every store call holds; hold it to read and write as one step."""
        return self._lock

    # ----------------------------------------------------------------- loading

    def load(self) -> StoreStats:
        """(Re)read every item file of the scope; replaces what is in memory.

        Four steps: forget what is in memory, read the files (the last line of each id,
        tombstones apart), admit what is not forgotten, then index it all. The collector
        is left alone here (a load may run in a worker thread while other chats go on);
        `memory.process_tuning.tune_process()`, called once at start-up, keeps full
        collections from walking a big scope again and again while it loads.
        """
        with self._lock:
            self._reset()
            keeper = self._open_index_file()
            if keeper is not None and keeper.found is not None:
                if self._load_indexed(keeper):
                    self._loaded = True
                    return self.stats()
                self._reset()  # stale: read the files whole
                keeper = self._open_index_file()
                assert keeper is not None
                keeper.found = None
            latest = self._read_item_files(keeper)
            episodes = self._admit(latest)
            del latest
            self._insert_episodes(episodes)
            del episodes
            loaded = list(self.items.values())
            self.timeline.rebuild(loaded)
            self._index_all(loaded)
            if keeper is not None:
                keeper.built = True
            if keeper is not None and len(loaded) >= self._index_file_min_items:
                del loaded
                self._adopt_index_file()
            self._loaded = True
            return self.stats()

    def _adopt_index_file(self) -> None:
        """Save the index file, then take the items from it (as every later load will):
        the items parsed to build it leave memory."""
        if not self.save_index_file():
            return
        self._reset()
        keeper = self._open_index_file()
        if keeper is None or keeper.found is None or not self._load_indexed(keeper):
            # Changed meanwhile (another writer): read whole, without saving.
            self._reset()
            self._open_index_file()
            self._lines_at = None
            latest = self._read_item_files(None)
            self._insert_episodes(self._admit(latest))
            loaded = list(self.items.values())
            self.timeline.rebuild(loaded)
            self._index_all(loaded)
            return
        keeper.built = keeper.saved = True

    def _reset(self) -> None:
        if isinstance(self._index, BM25Index):
            self._index.clear()
        else:
            for item_id in list(self.items):
                self._unindex(item_id)
        self.items.close()
        self.items = ItemTable(self.scope)
        self._durable_new = {}
        self._lines_at = {} if self._terms_identity is not None else None
        self.durable_log = []
        self.loads += 1
        self.timeline.rebuild(())
        self._home = {}
        self._by_fingerprint = {layer: {} for layer in Layer}
        self._forgotten_ids = set()
        self._forgotten_fingerprints = {}
        self._forgotten_statements = set()
        self._tombstones = {}
        self._tombstone_home = {}
        self._skipped = 0
        self._lines = Counter()
        self._fresh = {}

    def _read_item_files(self, keeper: IndexLoad | None) -> dict[str, MemoryItem | None]:
        """The last version of each id in the files, in write order (None: it does not
        parse); tombstones are remembered, each id's file goes into `_home`. Each file
        is checked against the index file (`keeper`) as it is read."""
        # Every line becomes an item as soon as it is read (None when it does not
        # parse): holding all raw records until the end doubled the peak RSS at 100k
        # items. Only the last line of an id counts. Its file goes straight into
        # `_home` (no (item, path) pair per line: 100k more objects for the collector).
        latest: dict[str, MemoryItem | None] = {}
        home = self._home
        lines_at = self._lines_at
        for path in self.paths.item_files():
            try:
                with open(path, "rb") as handle:
                    stat = os.fstat(handle.fileno())
                    data = handle.read()
            except FileNotFoundError:
                continue
            if keeper is not None:
                keeper.check(path, stat, data)
            # The file's number in the index file (the order files were recorded).
            number = len(keeper.states) - 1 if keeper is not None else 0
            lines = 0
            offset = 0
            for line in data.split(b"\n"):
                at = offset
                offset += len(line) + 1
                # As `atomic_file.iter_jsonl_lines`, inlined: this loop runs per item.
                if not line:
                    continue
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    if line.isspace():
                        continue
                    record = None
                lines += 1
                if type(record) is not dict:
                    self._skipped += 1
                    continue
                if record.get("tombstone") is True:
                    self._remember_tombstone(record, path)
                    continue
                item_id = record.get("id")
                if type(item_id) is not str or not item_id:
                    self._skipped += 1
                    continue
                try:
                    parsed: MemoryItem | None = MemoryItem.from_json_dict(record)
                except (KeyError, ValueError, TypeError, OverflowError):
                    parsed = None
                # Re-inserting moves the id to the end, so dict order stays "last written".
                latest.pop(item_id, None)
                latest[item_id] = parsed
                home[item_id] = path
                if lines_at is not None:
                    lines_at[item_id] = (number, at, len(line))
            del data
            self._lines[path] = lines
        return latest

    def _admit(self, latest: dict[str, MemoryItem | None]) -> list[MemoryItem]:
        """Insert the durable items of `latest` that are not forgotten; the episodes, to
        be inserted last (`_insert_episodes`)."""
        # Tombstones win regardless of file order: an id or fingerprint once forgotten
        # stays forgotten, whichever file (or day) the item and its tombstone are in.
        # Locals for the per-item loop (100k iterations at a big scope).
        home = self._home
        forgotten_ids = self._forgotten_ids
        forgotten_fingerprints = self._forgotten_fingerprints
        scope = self.scope
        # Values most items repeat, shared instead of one copy per item: the scope,
        # sources, tags ("turn", "speaker:anna" on every turn: 13 MB at 100k items),
        # confidences and saliences (5 MB). Tag lists stay one per item (callers may
        # build on them); only the strings in them are shared.
        shared: dict[Any, Any] = {}
        share = shared.setdefault
        episodic = Layer.EPISODIC
        items = self.items
        by_fingerprint = self._by_fingerprint
        durable = self._durable_new
        episodes: list[MemoryItem] = []
        skipped = 0
        for item_id, item in latest.items():
            if item_id in forgotten_ids:
                del home[item_id]
                continue
            if item is None:
                del home[item_id]
                skipped += 1
                continue
            if item.created_at <= forgotten_fingerprints.get(item.fingerprint, -math.inf):
                del home[item_id]
                continue
            if item.scope == scope:
                item.scope = scope
            item.source = share(item.source, item.source)
            if item.tags:
                tags = tuple(item.tags)
                item.tags[:] = share(tags, tags)
            # (Zeros not: -0.0 == 0.0, and the file must get back the sign it had.)
            if item.confidence:
                item.confidence = share(item.confidence, item.confidence)
            if item.salience:
                item.salience = share(item.salience, item.salience)
            if item.layer is episodic:
                episodes.append(item)
            else:
                # What `_insert` does, for ids known to be new (the dicts were just
                # emptied).
                items[item_id] = item
                by_fingerprint[item.layer][item.fingerprint] = item_id
                durable[item_id] = None
        self._skipped += skipped
        return episodes

    def _insert_episodes(self, episodes: list[MemoryItem]) -> None:
        """Episodes last, so the dict ends with the newest episodes as it does while the
        bot runs (durable items are written as episodes are promoted): the pack looks for
        recent context at that end only. Files load episodic days first, which put every
        durable item after the newest episode."""
        # In C-level maps: at 100k episodes a loop here took ~15 ms.
        episode_ids = list(map(_ID, episodes))
        self.items.update(zip(episode_ids, episodes, strict=True))
        self._by_fingerprint[Layer.EPISODIC].update(
            zip(map(_FINGERPRINT, episodes), episode_ids, strict=True)
        )

    def _index_all(self, items: list[MemoryItem]) -> None:
        """Index freshly loaded items with one bulk call when the index has one."""
        index = self._index
        terms = self._terms
        if index is None or terms is None:
            return
        # `is_indexed` in C-level maps: a Python call per item would cost ~80 ms at 1M.
        items = list(compress(items, map(_NOT_DIGEST, map(_TYPE, items))))
        add_joined = getattr(index, "add_joined", None)
        if add_joined is None or self._terms_joined is None:
            add_many = getattr(index, "add_many", None)
            pairs = ((item.id, terms(indexed_text(item))) for item in items)
            if add_many is not None:
                add_many(pairs)
            else:
                for doc_id, doc_terms in pairs:
                    index.add(doc_id, doc_terms)
            return
        terms_joined = self._terms_joined
        known = _TagsTexts()

        def chunks() -> Iterator[tuple[list[str], Iterable[str]]]:
            # In chunks, so only a chunk's texts and terms are alive at once.
            for start in range(0, len(items), _INDEX_CHUNK):
                chunk = items[start : start + _INDEX_CHUNK]
                yield [item.id for item in chunk], terms_joined(_indexed_texts(chunk, known))

        add_joined(chunks(), TEXT_END)

    def _remember_tombstone(self, record: dict[str, Any], path: Path) -> None:
        item_id = record.get("id")
        if not isinstance(item_id, str) or not item_id:
            self._skipped += 1
            return
        self._forgotten_ids.add(item_id)
        fp = record.get("fingerprint")
        if isinstance(fp, str) and fp:
            try:
                when = from_iso(str(record.get("forgottenAt")))
            except ValueError:
                when = math.inf
            self._forgotten_fingerprints[fp] = max(when, self._forgotten_fingerprints.get(fp, when))
        statement = record.get("statement")
        if isinstance(statement, str) and statement:
            self._forgotten_statements.add(statement)
        self._tombstones[item_id] = record
        self._tombstone_home[item_id] = path

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.load()

    # ------------------------------------------------------------ in-memory state

    def _is_forgotten(self, item: MemoryItem) -> bool:
        return item.id in self._forgotten_ids or item.created_at <= (
            self._forgotten_fingerprints.get(item.fingerprint, -math.inf)
        )

    def _insert(self, item: MemoryItem, *, index: bool = True) -> None:
        if item.id in self.items:
            self._drop(item.id)
        self.items[item.id] = item
        self.timeline.add(item)
        self._by_fingerprint[item.layer][item.fingerprint] = item.id
        if item.layer is not Layer.EPISODIC:
            self._durable_new[item.id] = None
            self.durable_log.append(item.id)
        if index and self._index is not None and self._terms is not None and is_indexed(item):
            self._index.add(item.id, self._terms(indexed_text(item)))

    def _drop(self, item_id: str) -> MemoryItem | None:
        current = self.items.get(item_id)
        if current is not None:
            self.timeline.discard(current)
        item = self.items.pop(item_id, None)
        self._durable_new.pop(item_id, None)
        if item is None:
            return None
        by_fingerprint = self._by_fingerprint[item.layer]
        if by_fingerprint.get(item.fingerprint) == item_id:
            del by_fingerprint[item.fingerprint]
        self._unindex(item_id)
        return item

    def _index_one(self, item: MemoryItem) -> None:
        if self._index is not None and self._terms is not None and is_indexed(item):
            self._index.add(item.id, self._terms(indexed_text(item)))

    def _unindex(self, item_id: str) -> None:
        if self._index is not None:
            self._index.remove(item_id)

    def _file_for(self, item: MemoryItem) -> Path:
        home = self._home.get(item.id)
        if home is not None:
            return home
        base = self.items.base
        position = base.ids.get(item.id) if base is not None else None
        if base is not None and position is not None:
            return base.files[int(base.file[position])]
        return self.paths.layer_file(item.layer, day_of(item.created_at, self._tz))

    def _write(self, lines_by_file: dict[Path, list[dict[str, Any]]]) -> None:
        # One append per file: each is a single write() of whole lines (crash-safe).
        self._lines_at = None  # the index file can no longer be saved for this load
        try:
            for path, records in lines_by_file.items():
                append_jsonl(path, records)
                self._lines[path] += len(records)
        except OSError:
            # Memory is ahead of the files now (disk full, permissions): the next call
            # reloads from disk, so what the store shows matches what survives.
            self._loaded = False
            raise

    def get(self, item_id: str) -> MemoryItem | None:
        return self.items.get(item_id)

    @property
    def durable_ids(self) -> list[str]:
        """Ids of the semantic and procedural items, in the store's order: what the fact
        rules look through, a few percent of a store that is mostly episodes."""
        return [*self.items.durable_base_ids(), *self._durable_new]

    def durable_items(self, tag: str | None = None) -> Iterator[MemoryItem]:
        """The items of `durable_ids` (with `tag`: those tagged so), those on disk read a
        file span at a time: the fact rules and the standing preferences go through them
        once after a load. A tag is looked for in the raw lines first, so a million-item
        scope parses only the few lines that hold it."""
        needle = orjson.dumps(tag) if tag is not None else None
        with self._lock:
            for item in self.items.read_durable(needle):
                if tag is None or tag in item.tags:
                    yield item
            for item_id in list(self._durable_new):
                written = self.items.get(item_id)
                if written is not None and (tag is None or tag in written.tags):
                    yield written

    def holder(self, like: MemoryItem, content: str) -> MemoryItem | None:
        """The stored item of `like`'s layer and type whose words are `content`, if any."""
        with self._lock:
            self._ensure_loaded()
            found = self._twin(like.layer, fingerprint(like.type, content))
            return self.items.get(found) if found is not None else None

    def _twin(self, layer: Layer, fp: str) -> str | None:
        """The id of the item of `layer` with fingerprint `fp`, if there is one."""
        found = self._by_fingerprint[layer].get(fp)
        if found is not None:
            return found
        base = self.items.base
        positions = self.items.base_with_fingerprint(fingerprint_key(layer, fp))
        return base.ids[positions[-1]] if base is not None and positions else None

    def _with_fingerprint(self, fp: str) -> list[MemoryItem]:
        """The items of any layer whose fingerprint is `fp`."""
        found = [item for item in self.items.new.values() if item.fingerprint == fp]
        for layer in Layer:
            for position in self.items.base_with_fingerprint(fingerprint_key(layer, fp)):
                item = self.items.at(position)
                if item is not None:
                    found.append(item)
        return found

    def _turn_of(self, key: str | int) -> MemoryItem | None:
        """A timeline key's item: an id, or the position of a base item."""
        if isinstance(key, str):
            return self.items.get(key)
        return self.items.at(key) if self.items.alive[key] else None

    def _turn_id(self, key: str | int) -> str:
        if isinstance(key, str):
            return key
        assert self.items.base is not None
        return self.items.base.ids[key]

    def __len__(self) -> int:
        return len(self.items)

    def is_forgotten(self, item: MemoryItem) -> bool:
        """True when `item` (by id or by fingerprint) was forgotten in this scope."""
        with self._lock:
            self._ensure_loaded()
            return self._is_forgotten(item)

    def forgot_statement(self, content: str) -> bool:
        """True when an item saying these words (`statement_of`: any kind, any speaker's
        label) was forgotten in this scope, at any time. Items forgotten before tombstones
        kept the words' hash are not known here."""
        statement = statement_fingerprint(content)
        with self._lock:
            self._ensure_loaded()
            return bool(statement) and statement in self._forgotten_statements

    # ------------------------------------------------------------------ writes

    def add(self, items: Iterable[MemoryItem]) -> list[MemoryItem]:
        """Store items; duplicates (same fingerprint, same layer) merge into the stored one.

        Returns the stored version of each accepted item (merged ones included, once
        each); items of a forgotten id or fingerprint are dropped silently.
        """
        with self._lock:
            self._ensure_loaded()
            batch = list(items)
            # Refuse a bad batch before touching anything, so memory and files stay equal.
            for incoming in batch:
                if incoming.scope and incoming.scope != self.scope:
                    raise ValueError(
                        f"item {incoming.id} belongs to scope {incoming.scope!r},"
                        f" not {self.scope!r}"
                    )
                existing = self.items.get(incoming.id)
                if existing is not None and existing.layer is not incoming.layer:
                    raise ValueError(f"item {incoming.id} exists in layer {existing.layer}")
            stored: dict[str, MemoryItem] = {}
            for incoming in batch:
                item = _whole_seconds(
                    incoming if incoming.scope else replace(incoming, scope=self.scope)
                )
                if self._is_forgotten(item):
                    continue
                twin_id = self._twin(item.layer, item.fingerprint)
                if twin_id is not None and twin_id != item.id:
                    result = merge_items(self.items[twin_id], item)
                else:
                    # New, or the same id written again: an update of that item (a fact
                    # collapsed with another names both's messages: a bounded few too).
                    result = with_kept_refs(item)
                self._insert(result)
                stored[result.id] = result
                if result.layer is Layer.EPISODIC:
                    self._fresh[result.id] = None
            self._persist(stored.values())
            return list(stored.values())

    def _persist(self, items: Iterable[MemoryItem]) -> None:
        written = list(items)
        lines_by_file: dict[Path, list[dict[str, Any]]] = defaultdict(list)
        for item in written:
            path = self._file_for(item)
            self._home[item.id] = path
            lines_by_file[path].append(item.to_json_dict())
        self._write(lines_by_file)
        if self._on_written is not None and written:
            self._on_written(written)

    def update(
        self,
        item_id: str,
        *,
        content: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        confidence: float | None = None,
        salience: float | None = None,
    ) -> MemoryItem | None:
        """Change an item in place (appends its new version); None when the id is unknown.

        New content gets a new fingerprint; content equal to a forgotten item is refused
        (ValueError), since it would vanish again on the next load.
        """
        with self._lock:
            self._ensure_loaded()
            current = self.items.get(item_id)
            if current is None:
                return None
            now = float(math.floor(self._clock()))
            changes: dict[str, Any] = {"updated_at": max(now, current.updated_at)}
            if content is not None:
                if not content.strip():
                    raise ValueError("item content may not be empty")
                new_fp = fingerprint(current.type, content)
                if new_fp in self._forgotten_fingerprints:
                    raise ValueError("that content was forgotten in this scope")
                twin = self._twin(current.layer, new_fp)
                if twin is not None and twin != item_id:
                    raise ValueError(f"item {twin} already holds that content")
                changes["content"] = content
                changes["fingerprint"] = new_fp
            if title is not None:
                changes["title"] = title
            if tags is not None:
                changes["tags"] = list(dict.fromkeys(tags))
            if confidence is not None:
                changes["confidence"] = min(1.0, max(0.0, confidence))
            if salience is not None:
                changes["salience"] = min(1.0, max(0.0, salience))
            updated = replace(current, **changes)
            self._insert(updated)
            self._persist([updated])
            return updated

    def forget(self, item_id: str) -> bool:
        """Forget an item for good: its id and its fingerprint, in every layer of the scope.

        The episodic original and its promoted copy share a fingerprint, so both go.
        """
        with self._lock:
            self._ensure_loaded()
            item = self.items.get(item_id)
            if item is None:
                return False
            now = to_iso(self._clock())
            victims = [item] + [
                other for other in self._with_fingerprint(item.fingerprint) if other.id != item_id
            ]
            lines_by_file: dict[Path, list[dict[str, Any]]] = defaultdict(list)
            for victim in victims:
                record = {
                    "id": victim.id,
                    "tombstone": True,
                    "fingerprint": victim.fingerprint,
                    "forgottenAt": now,
                }
                statement = statement_fingerprint(victim.content)
                if statement:
                    record["statement"] = statement
                path = self._file_for(victim)
                lines_by_file[path].append(record)
                self._tombstones[victim.id] = record
                self._tombstone_home[victim.id] = path
            self._write(lines_by_file)
            for victim in victims:
                self._forgotten_ids.add(victim.id)
                self._forgotten_fingerprints[victim.fingerprint] = from_iso(now)
                if statement := statement_fingerprint(victim.content):
                    self._forgotten_statements.add(statement)
                self._drop(victim.id)
                self._home.pop(victim.id, None)
                self._fresh.pop(victim.id, None)
            if self._on_dropped is not None:
                self._on_dropped([victim.id for victim in victims])
            return True

    def remove(self, item_id: str, *, merged_into: str) -> bool:
        """Drop an item merged into another: a tombstone of its id only.

        Unlike `forget`, its fingerprint stays allowed: the same words said again are a
        new mention of the fact, to be merged again, not something to keep out.
        """
        with self._lock:
            self._ensure_loaded()
            item = self.items.get(item_id)
            if item is None:
                return False
            record = {
                "id": item_id,
                "tombstone": True,
                "mergedInto": merged_into,
                "forgottenAt": to_iso(self._clock()),
            }
            path = self._file_for(item)
            self._write({path: [record]})
            self._tombstones[item_id] = record
            self._tombstone_home[item_id] = path
            self._forgotten_ids.add(item_id)
            self._drop(item_id)
            self._home.pop(item_id, None)
            self._fresh.pop(item_id, None)
            if self._on_dropped is not None:
                self._on_dropped([item_id])
            return True

    def promote(self, item_id: str) -> MemoryItem | None:
        """Copy an EPISODIC item into the SEMANTIC or PROCEDURAL layer (by its type).

        Returns the durable item (merged with an earlier promotion of the same text, if
        any), or None when the id is unknown or not episodic.
        """
        with self._lock:
            self._ensure_loaded()
            source = self.items.get(item_id)
            if source is None or source.layer is not Layer.EPISODIC:
                return None
            promoted = self._promote_many([source])
            return promoted[0] if promoted else None

    def _promote_many(self, sources: Sequence[MemoryItem]) -> list[MemoryItem]:
        promoted = [
            replace(
                source,
                id=self._id_factory(),
                layer=PROMOTION_TARGET[source.type],
                references=_union(source.references, [PROMOTED_FROM_PREFIX + source.id]),
                source="promotion",
            )
            for source in sources
        ]
        by_fp = {item.fingerprint: item for item in self.add(promoted)}
        return [by_fp[item.fingerprint] for item in promoted if item.fingerprint in by_fp]

    def auto_promote(
        self, min_confidence: float, items: Iterable[MemoryItem] | None = None
    ) -> list[MemoryItem]:
        """Promote the episodic items at or above `min_confidence`.

        Considers `items` (e.g. what `add` just returned) or, by default, every item
        added since the last `auto_promote` call. Returns the durable items.
        """
        with self._lock:
            self._ensure_loaded()
            if items is None:
                candidates = [self.items[i] for i in self._fresh if i in self.items]
                self._fresh = {}
            else:
                candidates = [self.items[i.id] for i in items if i.id in self.items]
            eligible = [
                item
                for item in candidates
                if item.layer is Layer.EPISODIC and item.confidence >= min_confidence
            ]
            if not eligible:
                return []
            return self._promote_many(eligible)

    # ------------------------------------------------------------- maintenance

    def stats(self) -> StoreStats:
        with self._lock:
            # Counted by enum member (`.value` is a slow descriptor), then named.
            layers, types = self.items.counts()
            per_layer = {layer.value: count for layer, count in layers.items()}
            per_type = {item_type.value: count for item_type, count in types.items()}
            root = self.paths.directory
            return StoreStats(
                items=len(self.items),
                per_layer={layer.value: per_layer.get(layer.value, 0) for layer in Layer},
                per_type=dict(sorted(per_type.items())),
                skipped_lines=self._skipped,
                files=len(self._lines),
                tombstones=len(self._tombstones),
                lines=sum(self._lines.values()),
                per_file={
                    str(path)[len(str(root)) + 1 :]: count
                    for path, count in sorted(self._lines.items())
                },
            )

    def compact_files(self) -> StoreStats:
        """Rewrite every item file (atomically) with only live last versions and tombstones.

        Corrupt lines are dropped for good. Meant for a CLI or a quiet moment, not per turn.
        An item written before its refs were bounded (`memory.store.kept_refs`) is
        rewritten with a bounded few: a message repeated thousands of times shrinks too.
        """
        with self._lock:
            self._ensure_loaded()
            unbounded = [
                kept for item in self.items.values() if (kept := with_kept_refs(item)) is not item
            ]
            for kept in unbounded:
                self._insert(kept)
            content: dict[Path, list[bytes]] = defaultdict(list)
            for item_id, path in self._tombstone_home.items():
                content[path].append(orjson.dumps(self._tombstones[item_id]))
            for item in sorted(self.items.values(), key=lambda i: (i.created_at, i.id)):
                content[self._file_for(item)].append(orjson.dumps(item.to_json_dict()))
            for path in set(self.paths.item_files()) | set(self._lines):
                lines = content.get(path, [])
                if lines:
                    write_atomic(path, b"\n".join(lines) + b"\n")
                    self._lines[path] = len(lines)
                elif path.exists():
                    path.unlink()
                    self._lines.pop(path, None)
            self._skipped = 0
            if self.items.base is not None:
                # Its items' lines moved: read the files anew at the next call.
                self._loaded = False
            return self.stats()


def day_of(ts: float, tz: tzinfo = UTC) -> date:
    """The calendar day of an epoch time in `tz` (the episodic file an item lands in)."""
    return datetime.fromtimestamp(ts, tz).date()
