"""Keeping durable facts current: newer statements replace older ones, repeats collapse.

Called by the write path (`memory.write.write_path`): `apply_fact_updates` after a turn's
items are stored and promoted (cheap: it works only when the turn states a slot, see
`memory.write.fact_slots`, or promoted a fact), `settle_facts` after facts are written as
they are (the memory tool, the compaction flush), and `supersede` for the replacements
consolidation finds, which no rule can see.

- Update: a newer statement of a single-valued slot ("I moved to Berlin") replaces the
  older one ("I live in Paris") by the same speaker. The old item is not deleted: it gets
  `valid_to` and `superseded_by`, and so do the episodes it came from, so a pack shows
  it only as "earlier (until DATE)", below the current value. What else the old item
  said ("My name is Oleg and I live in Paris") stays current as a fact of its own.
- Duplicates: a durable fact whose stemmed terms overlap an existing one's by
  `DUPLICATE_TERM_OVERLAP` (or that sets a slot to the value it already
  has) is the same fact said again: the two collapse into one item with the newest
  wording, the earliest date and the sum of their `mentions`.
- Slot statements extraction has no rule for (German, Russian, or phrasings it misses)
  become durable facts here, so they can be replaced like the others.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace

from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX, ScopeItemStore, new_item_id
from mnemobot.memory.store.items import (
    STANDING_TAG,
    ItemType,
    Layer,
    MemoryItem,
    speaker_of,
    speaker_tag,
)
from mnemobot.memory.text.terms import DUPLICATE_TERM_OVERLAP, terms
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning
from mnemobot.memory.write.fact_items import new_fact, rest_of_fact
from mnemobot.memory.write.fact_slot_index import same_slot, slots_of, states_left
from mnemobot.memory.write.fact_slots import (
    SlotStatement,
    says_only_slots,
    slot_statements,
    value_terms,
    without_slot,
)
from mnemobot.memory.write.restatements import SimilarFinder, says_the_same
from mnemobot.memory.write.sole_speaker import OwnWords, one_speaker, own_words

# How many of the best matches are looked at for a duplicate or a source turn. A
# duplicate shares most terms, so it is among the very first hits when there is one.
_SIMILAR_HITS = 8
_SLOT_TAG = "slot"
# "Ada: " before a group member's words.
_LABEL = re.compile(r"^[^\s:][^:\n]{0,39}:\s+")
# Fewest terms of what else a replaced fact said for it to stay a fact ("My name is
# Oleg": 2); "Hi!" beside the home is no fact.
_MIN_REST_TERMS = 2


@dataclass(slots=True)
class FactUpdates:
    created: list[MemoryItem] = field(default_factory=list)
    superseded: list[MemoryItem] = field(default_factory=list)
    # (id removed, id it was merged into)
    merged: list[tuple[str, str]] = field(default_factory=list)


def term_overlap(first: str, second: str) -> float:
    """Jaccard overlap of the stemmed term sets of two texts (0..1)."""
    a, b = set(terms(first)), set(terms(second))
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _is_durable(item: MemoryItem) -> bool:
    return item.layer is not Layer.EPISODIC


def apply_fact_updates(
    store: ScopeItemStore,
    recorded: Iterable[MemoryItem],
    *,
    user_text: str,
    speaker: str | None,
    at: float,
    similar: SimilarFinder,
    extraction: ExtractionTuning = DEFAULT_EXTRACTION,
    id_factory: Callable[[], str] = new_item_id,
    sole_speaker: bool = False,
) -> FactUpdates:
    """Supersede, merge and create durable facts after one turn was recorded.

    `recorded`: the items the turn stored and promoted. A slot the user's words state
    that no recorded fact states becomes a fact of its own. `sole_speaker`: the speaker
    is the scope's one person, whose facts under other names are theirs too
    (`memory.write.sole_speaker`). Holds the store's lock.
    """
    updates = FactUpdates()
    with store.lock:
        recorded = [store.items[i.id] for i in recorded if i.id in store.items]
        turn = next((i for i in recorded if i.type is ItemType.TURN), None)
        tag = speaker_tag(speaker) if speaker else None
        own = own_words(store, similar) if sole_speaker and tag else None
        new_facts = [i for i in recorded if _is_durable(i)]
        # A fact that sets several slots ("I live in Lisbon and I work as a translator")
        # gets one fact per slot, so a move replaces the home and leaves the job.
        split = {i.id for i in new_facts if len(slots_of(i)) > 1}
        for statement in slot_statements(user_text) if user_text.strip() else ():
            if statement.left is not None and not states_left(store, statement, tag, own):
                continue  # "moved from X to Y" where X is not the value known
            fact = next(
                (i for i in new_facts if [s.slot for s in slots_of(i)] == [statement.slot]), None
            )
            if fact is None:
                fact = _slot_fact(store, statement, turn, speaker, at, extraction, id_factory)
                if fact is None:
                    continue
                updates.created.append(fact)
                new_facts.append(fact)
            _replace_by_slot(
                store,
                fact,
                statement,
                tag,
                at,
                similar,
                updates,
                split,
                id_factory=id_factory,
                own=own,
            )
        _collapse_restatements(store, new_facts, similar, updates, own)
    return updates


def settle_facts(
    store: ScopeItemStore,
    facts: Iterable[MemoryItem],
    *,
    at: float,
    similar: SimilarFinder,
    sole_speaker: bool = False,
) -> FactUpdates:
    """The same rules for durable facts written as they are (the memory tool, the
    compaction flush, a promotion by hand): a slot a fact states replaces the earlier
    value by the same speaker (any name of the scope's one person when `sole_speaker`),
    and a restatement collapses into one item. Holds the store's lock."""
    updates = FactUpdates()
    own = own_words(store, similar) if sole_speaker else None
    with store.lock:
        new_facts = [store.items[i.id] for i in facts if i.id in store.items and _is_durable(i)]
        for fact in new_facts:
            tag = speaker_of(fact)
            for statement in slots_of(fact):
                _replace_by_slot(
                    store, fact, statement, tag, at, similar, updates, own=own if tag else None
                )
        _collapse_restatements(store, new_facts, similar, updates, own)
    return updates


def _replace_by_slot(
    store: ScopeItemStore,
    fact: MemoryItem,
    statement: SlotStatement,
    tag: str | None,
    at: float,
    similar: SimilarFinder,
    updates: FactUpdates,
    split: Collection[str] = (),
    *,
    id_factory: Callable[[], str] = new_item_id,
    own: OwnWords | None = None,
) -> None:
    """`fact` states `statement`: earlier facts of the same slot and speaker (`tag`, or
    any name `own` holds for) are the same fact again (same value: they collapse into it)
    or replaced by it.

    `split`: facts of this very turn that set several slots, each now a fact of its own.
    One that says nothing else merges into them (said once, not again); one that says
    more is kept whole, as a fact of one slot with more said around it is."""
    tagged = _with_keywords(store, fact, statement)
    if tagged is None:
        # Found live (a compaction's flush, once in four): the store dropped it as
        # forgotten, and a forgotten fact replaces nothing.
        return
    fact = tagged
    left = frozenset(terms(statement.left)) if statement.left else None
    for old in same_slot(store, fact, statement, tag, own):
        old_statement = next(s for s in slots_of(old) if s.slot == statement.slot)
        if left is not None and not value_terms(old_statement) & left:
            continue  # it names what it replaces, and that is another value
        if value_terms(old_statement) == value_terms(statement):
            if old.id in split and not says_only_slots(old.content):
                continue
            fact = _collapse(store, old, fact, said_again=old.id not in split)
            updates.merged.append((old.id, fact.id))
        else:
            _keep_the_rest(store, old, statement, at, similar, updates, id_factory)
            updates.superseded += supersede(store, [old.id], fact.id, at, similar)


def _keep_the_rest(
    store: ScopeItemStore,
    old: MemoryItem,
    statement: SlotStatement,
    at: float,
    similar: SimilarFinder,
    updates: FactUpdates,
    id_factory: Callable[[], str],
) -> None:
    """`old` is replaced for its `statement.slot`: what else it says stays current, as a
    fact of its own. "Hi! My name is Oleg and I live in Berlin" is the only place the name
    was said; the move to Hamburg ends the home in it, not the name."""
    label = _LABEL.match(old.content) if speaker_of(old) else None
    said = old.content[label.end() :] if label else old.content
    rest = without_slot(said, statement.slot)
    if rest is None or len(terms(rest)) < _MIN_REST_TERMS:
        return  # all it said was the slot ("I live in Berlin"), or a greeting beside it
    content = label.group(0) + rest if label else rest
    dropped = () if slot_statements(rest) else (_SLOT_TAG, *statement.keywords)
    kept = store.add(
        [rest_of_fact(old, content, at=at, dropped_tags=dropped, id_factory=id_factory)]
    )
    if kept:
        updates.created += kept
        _collapse_restatements(store, kept, similar, updates)


def _collapse_restatements(
    store: ScopeItemStore,
    new_facts: list[MemoryItem],
    similar: SimilarFinder,
    updates: FactUpdates,
    own: OwnWords | None = None,
) -> None:
    """Each new fact absorbs the earlier facts that say the same in other words, by the
    same speaker (under any name `own` holds for)."""
    merged = {old for old, _ in updates.merged}
    for fact in new_facts:
        current = store.items.get(fact.id)
        if current is None:
            continue
        for twin_id in similar(current.content, _SIMILAR_HITS):
            twin = store.items.get(twin_id)
            if (
                twin is None
                or twin.id == current.id
                or twin.id in merged
                or twin.layer is not current.layer
                or twin.is_superseded
                or (twin.created_at > current.created_at and not _same_words(twin, current))
                or not one_speaker(twin, current, own)
                or term_overlap(twin.content, current.content) < DUPLICATE_TERM_OVERLAP
            ):
                continue
            current = _collapse(store, twin, current)
            merged.add(twin.id)
            updates.merged.append((twin.id, current.id))


def _same_words(later: MemoryItem, fact: MemoryItem) -> bool:
    """A fact stated later in the very words of `fact` is the same statement, whichever
    was written first: a compaction's flush dates what it keeps when it runs, a message
    imported or replayed after it is dated when it was said. A standing item is left to
    its own rules (`memory.write.standing`)."""
    return STANDING_TAG not in later.tags and says_the_same(later, fact)


def _slot_fact(
    store: ScopeItemStore,
    statement: SlotStatement,
    turn: MemoryItem | None,
    speaker: str | None,
    at: float,
    extraction: ExtractionTuning,
    id_factory: Callable[[], str],
) -> MemoryItem | None:
    """A durable fact for a slot statement extraction did not make one of."""
    content = f"{speaker}: {statement.sentence}" if speaker else statement.sentence
    preference = statement.slot.startswith(("favourite", "diet"))
    references = list(turn.references) if turn is not None else []
    if turn is not None:
        references.append(PROMOTED_FROM_PREFIX + turn.id)
    item = new_fact(
        content,
        item_type=ItemType.PREFERENCE if preference else ItemType.PROJECT_FACT,
        scope=store.scope,
        at=at,
        source="slot",
        extraction=extraction,
        speaker=speaker,
        tags=["preference" if preference else "fact", _SLOT_TAG],
        references=references,
        id_factory=id_factory,
    )
    stored = store.add([item])
    return stored[0] if stored else None


def _with_keywords(
    store: ScopeItemStore, fact: MemoryItem, statement: SlotStatement
) -> MemoryItem | None:
    """The fact, tagged with the words a question about its slot uses ("home", "city");
    None when the store drops it (forgotten meanwhile)."""
    wanted = [_SLOT_TAG, *statement.keywords]
    if all(tag in fact.tags for tag in wanted):
        return fact
    tagged = replace(fact, tags=list(dict.fromkeys([*fact.tags, *wanted])))
    stored = store.add([tagged])
    return stored[0] if stored else None


def _collapse(
    store: ScopeItemStore, old: MemoryItem, new: MemoryItem, *, said_again: bool = True
) -> MemoryItem:
    """One item of two statements of a fact: the newest wording, the earliest date.
    `said_again` False: both come of one message, so it counts as said once."""
    survivor = replace(
        new,
        created_at=min(old.created_at, new.created_at),
        updated_at=max(old.updated_at, new.updated_at),
        mentions=old.mentions + new.mentions if said_again else max(old.mentions, new.mentions),
        references=list(dict.fromkeys([*new.references, *old.references])),
        tags=list(dict.fromkeys([*new.tags, *old.tags])),
        confidence=max(old.confidence, new.confidence),
        salience=max(old.salience, new.salience),
    )
    stored = store.add([survivor])[0]
    store.remove(old.id, merged_into=stored.id)
    return stored


def supersede(
    store: ScopeItemStore,
    old_ids: Iterable[str],
    new_id: str | None,
    at: float,
    similar: SimilarFinder,
) -> list[MemoryItem]:
    """Mark `old_ids` as no longer true from `at` on, replaced by `new_id` (if any).

    The hook consolidation calls with the facts it found outdated. The episodes a
    superseded fact was promoted from, and the turns they were said in, are marked too,
    so no copy of the old value reads as current; the turn that says the new value is
    not, though said in the same second as the old one. Returns the items marked.
    """
    marked: list[MemoryItem] = []
    at = float(math.floor(at))  # as stored on disk (ISO seconds)
    with store.lock:
        new = store.items.get(new_id) if new_id else None
        for old_id in old_ids:
            old = store.items.get(old_id)
            if old is None or old.is_superseded or old_id == new_id:
                continue
            for item in [old, *_sources(store, old, similar)]:
                if item.is_superseded or (new is not None and _said_in(new, item)):
                    continue
                marked += store.add([replace(item, valid_to=at, superseded_by=new_id)])
    return marked


def reinstate(store: ScopeItemStore, fact_id: str, similar: SimilarFinder) -> list[MemoryItem]:
    """`supersede` undone for one fact: it holds again, with the episodes and turns that
    were marked with it (those marked by the same newer item). Returns the items revived."""
    with store.lock:
        fact = store.items.get(fact_id)
        if fact is None or not fact.is_superseded:
            return []
        by = fact.superseded_by
        again = [
            replace(item, valid_to=None, superseded_by=None)
            for item in [fact, *_sources(store, fact, similar)]
            if item.is_superseded and item.superseded_by == by
        ]
        return store.add(again)


def _said_in(fact: MemoryItem, item: MemoryItem) -> bool:
    """Whether `item` is where `fact` was said: the episode it was promoted from, or a
    turn of the same message."""
    if PROMOTED_FROM_PREFIX + item.id in fact.references:
        return True
    messages = {ref for ref in fact.references if not ref.startswith(PROMOTED_FROM_PREFIX)}
    return item.type is ItemType.TURN and not messages.isdisjoint(item.references)


def _sources(store: ScopeItemStore, fact: MemoryItem, similar: SimilarFinder) -> list[MemoryItem]:
    """The episodes `fact` came from, and the turns those were said in."""
    episodes = [
        store.items[ref[len(PROMOTED_FROM_PREFIX) :]]
        for ref in fact.references
        if ref.startswith(PROMOTED_FROM_PREFIX) and ref[len(PROMOTED_FROM_PREFIX) :] in store.items
    ]
    said_at = {episode.created_at for episode in episodes} or {fact.created_at}
    turns = []
    for hit in similar(fact.content, _SIMILAR_HITS):
        item = store.items.get(hit)
        if (
            item is not None
            and item.type is ItemType.TURN
            and item.created_at in said_at
            and item not in episodes
        ):
            turns.append(item)
    return episodes + turns
