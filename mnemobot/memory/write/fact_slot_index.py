"""Durable facts by the slot they set and who said it (`memory.write.facts` looks up the
earlier values a statement replaces here: `same_slot`, `states_left`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from weakref import WeakKeyDictionary

from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, speaker_of
from mnemobot.memory.text.terms import terms
from mnemobot.memory.write.fact_slot_words import SLOT_TRIGGERS
from mnemobot.memory.write.fact_slots import SlotStatement, slot_statements, value_terms


def slots_of(item: MemoryItem) -> tuple[SlotStatement, ...]:
    """The slots a stored item's text sets (a turn sets none: its facts do)."""
    return slot_statements(item.content) if item.type is not ItemType.TURN else ()


class _SlotIndex:
    """Durable item ids by the slot their text sets and who said it, kept up to date.

    A write looks up the one slot it states instead of going through every durable item
    that might set one (thousands in a long chat: 40 ms a write at 100k items). The
    first write after a scope loads parses every durable item holding one of the slot
    families' words (about half a second at 100k items, in the memory worker thread);
    later writes parse only what the store logged as inserted since (`durable_log`).
    """

    def __init__(self) -> None:
        self._start(loads=-1)

    def _start(self, loads: int) -> None:
        self.loads = loads
        self.read_to = 0
        # (slot, speaker tag) -> ids (an ordered set): each group member has their values.
        self.by_slot: dict[tuple[str, str | None], dict[str, None]] = {}
        # The text each indexed item was parsed from, to notice one rewritten in place.
        self.parsed_from: dict[str, str] = {}

    def ids(self, store: ScopeItemStore, slot: str, tag: str | None) -> dict[str, None]:
        if store.loads != self.loads:
            self._start(store.loads)
            # All at once, read in bulk (a big scope's items are on disk, see `ItemTable`).
            fresh: Iterable[MemoryItem | None] = store.durable_items()
        else:
            fresh = map(store.items.get, store.durable_log[self.read_to :])
        self.read_to = len(store.durable_log)
        for item in fresh:
            if item is None or self.parsed_from.get(item.id) == item.content:
                continue
            item_id = item.id
            self.parsed_from[item_id] = item.content
            if _ANY_TRIGGER.search(item.content.lower()) is None:
                continue
            speaker = speaker_of(item)
            for statement in slots_of(item):
                self.by_slot.setdefault((statement.slot, speaker), {})[item_id] = None
        return self.by_slot.setdefault((slot, tag), {})

    def still_sets(self, item: MemoryItem, slot: str) -> bool:
        if self.parsed_from.get(item.id) == item.content:
            return True
        return any(s.slot == slot for s in slots_of(item))


# Any word of any slot family (`SLOT_TRIGGERS`), in one C-level scan.
_ANY_TRIGGER = re.compile(
    "|".join(map(re.escape, sorted({w for words in SLOT_TRIGGERS.values() for w in words})))
)
# Most earlier facts one statement replaces (see `same_slot`).
_MAX_REPLACED_PER_STATEMENT = 8
_SLOT_INDEXES: WeakKeyDictionary[ScopeItemStore, _SlotIndex] = WeakKeyDictionary()


def slot_facts(
    store: ScopeItemStore,
    slot: str,
    tag: str | None,
    also: Callable[[MemoryItem], bool] | None = None,
) -> list[MemoryItem]:
    """Current durable facts of the speaker `tag` that set `slot`; with `also`, those of
    other speakers it holds for too (the same person under another name)."""
    index = _SLOT_INDEXES.get(store)
    if index is None:
        index = _SLOT_INDEXES[store] = _SlotIndex()
    by_speaker = [(tag, index.ids(store, slot, tag))]
    if also is not None:
        by_speaker += [
            (speaker, ids)
            for (stated, speaker), ids in index.by_slot.items()
            if stated == slot and speaker != tag and speaker is not None
        ]
    found = []
    for speaker, ids in by_speaker:
        for item_id in list(ids):
            item = store.items.get(item_id)
            if item is None or item.is_superseded or item.layer is Layer.EPISODIC:
                # Gone or replaced for good (a reload starts the index anew): skip it from now on.
                ids.pop(item_id, None)
                continue
            if (
                speaker_of(item) == speaker
                and index.still_sets(item, slot)
                and (speaker == tag or (also is not None and also(item)))
            ):
                found.append(item)
    return found


def states_left(
    store: ScopeItemStore,
    statement: SlotStatement,
    tag: str | None,
    own: Callable[[MemoryItem], bool] | None,
) -> bool:
    """Whether a current fact of the speaker sets the slot to the value `statement` says
    it replaces ("moved from Berlin": Berlin is the known home)."""
    left = frozenset(terms(statement.left or ""))
    return any(
        s.slot == statement.slot and value_terms(s) & left
        for item in slot_facts(store, statement.slot, tag, own)
        for s in slots_of(item)
    )


def same_slot(
    store: ScopeItemStore,
    fact: MemoryItem,
    statement: SlotStatement,
    tag: str | None,
    own: Callable[[MemoryItem], bool] | None = None,
) -> list[MemoryItem]:
    """Current durable facts of the same speaker that set the same slot, stated earlier."""
    found = [
        item
        for item in slot_facts(store, statement.slot, tag, own)
        if item.id != fact.id and item.created_at <= fact.created_at
    ]
    # Newest first, and a bounded number: a store written before these rules may hold
    # the same slot stated many times; marking them all at once would stall this write.
    found.sort(key=lambda item: item.created_at, reverse=True)
    return found[:_MAX_REPLACED_PER_STATEMENT]
