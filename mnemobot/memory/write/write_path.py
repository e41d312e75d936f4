"""The write path: how anything durable gets into a scope's items, by one set of rules.

Every durable write reaches a store through a function here, called by `MemoryRecord`
under the scope's lock and off the event loop: a turn (an imported message is a turn
too), the facts a compaction flush keeps, a fact the memory tool adds, rewrites or
promotes, and the facts consolidation finds outdated (`facts.supersede`). Each applies
the same rules:

- confidence and salience: extraction's rules for what a turn says (`ExtractionTuning`),
  the weight of the source for a fact the bot states itself (`memory.write.fact_items`);
- promotion: an extracted item at least `PROMOTION_MIN_CONFIDENCE` sure becomes durable;
- repeats: the store merges an exact repeat (same fingerprint) into the stored item;
- facts kept current (`memory.write.facts`): a newer statement of a slot ("I moved to
  Berlin") replaces the older one by the same speaker, and a fact said again in other
  words collapses into one item;
- a flush restating what memory keeps (`memory.write.restatements`): a fact of the same
  words as a kept item of any kind (a standing preference, a replaced value) or a
  forgotten one adds nothing;
- standing preferences (`memory.write.standing`): how a user asked to be answered, kept as a
  durable item of theirs that every request of the chat carries, a newer one replacing
  the older one about the same thing (a turn of the user's own words only: never a
  forwarded message).

Nothing here touches files other than the store's: `MemoryRecord` writes the daily note
and MEMORY.md beside these calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemobot.memory.store.item_store import ScopeItemStore, new_item_id
from mnemobot.memory.store.items import (
    FORWARDED_TAG,
    DocumentText,
    ForwardedText,
    ItemType,
    MemoryItem,
    TurnMemoryEvent,
    normalize_content,
)
from mnemobot.memory.write.documents import document_items
from mnemobot.memory.write.extraction import extract_items
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning
from mnemobot.memory.write.fact_items import (
    MAX_ITEM_CHARS,
    earlier_copy,
    new_fact,
    retagged,
    rewritten_fact,
)
from mnemobot.memory.write.facts import (
    FactUpdates,
    SimilarFinder,
    apply_fact_updates,
    reinstate,
    settle_facts,
    supersede,
)
from mnemobot.memory.write.restatements import kept_already, says_the_same
from mnemobot.memory.write.standing import record_standing, without_requests_for_others

# A flushed fact starting with this is a how-to (a procedural item), as the flush's
# instructions ask the model to mark them.
PROCEDURE_MARK = "[procedure]"

# An extracted item at least this sure is promoted to a durable (semantic or procedural)
# item and shows in every later prompt it matches. The design's value (the bot it
# follows promoted at 0.75); extraction's confidences (`ExtractionTuning`) are set around
# it: explicit statements above, guesses and hedged words below.
PROMOTION_MIN_CONFIDENCE = 0.75


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    stored: list[MemoryItem]
    promoted: list[MemoryItem]


@dataclass(frozen=True, slots=True)
class FactWrite:
    """What a write of facts did: the items stored (an item of a text forgotten earlier
    at the user's request is left out) and the facts they replaced or merged."""

    stored: list[MemoryItem]
    updates: FactUpdates = field(default_factory=FactUpdates)


def write_turn(
    store: ScopeItemStore,
    event: TurnMemoryEvent,
    *,
    similar: SimilarFinder,
    extraction: ExtractionTuning = DEFAULT_EXTRACTION,
) -> RecordedTurn:
    """The items of one answered turn: extracted, stored, promoted, facts kept current."""
    items = extract_items(event, code_aware=True, id_factory=new_item_id, tuning=extraction)
    stored = without_requests_for_others(store, store.add(items), speaker=event.speaker)
    promoted: list[MemoryItem] = []
    if stored:
        promoted = store.auto_promote(PROMOTION_MIN_CONFIDENCE, stored)
    if stored:
        apply_fact_updates(
            store,
            [*stored, *promoted],
            user_text=event.user_text,
            speaker=event.speaker,
            sole_speaker=event.sole_speaker,
            at=event.at,
            similar=similar,
            extraction=extraction,
        )
        if FORWARDED_TAG not in event.tags:
            record_standing(
                store,
                stored,
                user_text=event.user_text,
                speaker=event.speaker,
                sole_speaker=event.sole_speaker,
                at=event.at,
                similar=similar,
                extraction=extraction,
            )
    return RecordedTurn(stored, promoted)


def write_forwarded(
    store: ScopeItemStore,
    event: TurnMemoryEvent,
    forwarded: ForwardedText,
    *,
    similar: SimilarFinder,
    extraction: ExtractionTuning = DEFAULT_EXTRACTION,
) -> RecordedTurn:
    """A forwarded message, by the same rules as a turn but as its author's words at its
    date: "I live in Paris." from Alice is a fact about Alice (her slots, her speaker tag),
    and leaves the user's own facts as they are."""
    said = TurnMemoryEvent(
        scope=event.scope,
        chat_key=event.chat_key,
        user_text=forwarded.text,
        assistant_text="",
        at=forwarded.said_at if forwarded.said_at is not None else event.at,
        message_refs=[forwarded.ref] if forwarded.ref else list(event.message_refs),
        speaker=forwarded.author,
        tags=[FORWARDED_TAG],
    )
    return write_turn(store, said, similar=similar, extraction=extraction)


def write_document(
    store: ScopeItemStore,
    document: DocumentText,
    *,
    scope: str,
    at: float,
    speaker: str | None = None,
    extraction: ExtractionTuning = DEFAULT_EXTRACTION,
) -> list[MemoryItem]:
    """A document's chunks (`memory.write.documents`): stored as they are, never read as facts."""
    items = document_items(
        document,
        scope=scope,
        at=at,
        id_factory=new_item_id,
        speaker=speaker,
        extraction=extraction,
    )
    return store.add(items)


def write_facts(
    store: ScopeItemStore,
    facts: list[MemoryItem],
    *,
    at: float,
    similar: SimilarFinder,
    sole_speaker: bool = False,
) -> FactWrite:
    """Durable facts as they are (made by `fact_items.new_fact`), facts kept current;
    `sole_speaker`: theirs is the scope's one person (`TurnMemoryEvent.sole_speaker`)."""
    stored = store.add(facts)
    if not stored:
        return FactWrite([])
    updates = settle_facts(store, stored, at=at, similar=similar, sole_speaker=sole_speaker)
    # As they are now: a fact that absorbed a restatement holds its mentions and date.
    return FactWrite([store.items.get(item.id, item) for item in stored], updates)


def rewrite_fact(
    store: ScopeItemStore,
    item_id: str,
    *,
    content: str,
    tags: list[str] | None,
    at: float,
    similar: SimilarFinder,
    rewriter: str | None = None,
    references: Sequence[str] = (),
) -> FactWrite:
    """An item's new wording (and tags), by the memory tool at `rewriter`'s request, from
    the messages `references` names; nothing stored when the id is unknown. ValueError
    when the text was forgotten or another item already holds it.

    New words are the assistant's, dated now (`fact_items.rewritten_fact`), and the old
    value stays under an id of its own, marked earlier as a newer statement marks it
    (with the episodes and turns it was said in): the model must not read the rewrite as
    what the person said, nor lose what was true before. Only new tags (the same words)
    change the item in place."""
    with store.lock:
        current = store.items.get(item_id)
        if current is None:
            return FactWrite([])
        if current.type is ItemType.TURN:
            raise ValueError("a turn is the record of what was said; add a fact instead")
        if normalize_content(content) == normalize_content(current.content):
            updated = store.update(
                item_id, tags=retagged(current, tags) if tags is not None else None
            )
            return FactWrite([updated] if updated is not None else [])
        back = store.holder(current, content)
        if back is not None and back.superseded_by == item_id:
            # Back to a value this one replaced ("Paris" again after "Berlin"): that value,
            # with who said it and where, holds again; the one it replaced is earlier.
            reinstate(store, back.id, similar)
            if tags is not None:
                store.update(back.id, tags=retagged(back, tags))
            updates = FactUpdates(superseded=supersede(store, [item_id], back.id, at, similar))
            return FactWrite([store.items.get(back.id, back)], updates)
        # Refuses a forgotten text, or one another item holds, before anything changes.
        store.update(item_id, content=content)
        [rewritten] = store.add(
            [
                rewritten_fact(
                    current,
                    content,
                    at=at,
                    tags=tags,
                    rewriter=rewriter,
                    references=references,
                )
            ]
        )
        [earlier] = store.add([earlier_copy(current)])
        updates = FactUpdates(superseded=supersede(store, [earlier.id], rewritten.id, at, similar))
        settled = settle_facts(store, [rewritten], at=at, similar=similar)
        updates.superseded += settled.superseded
        updates.merged += settled.merged
        return FactWrite([store.items.get(item_id, rewritten)], updates)


def promote_item(
    store: ScopeItemStore,
    item_id: str,
    *,
    at: float,
    similar: SimilarFinder,
) -> MemoryItem | None:
    """An episode made durable by hand (as promotion does with confident ones); None when
    the id is unknown or not an episode."""
    promoted = store.promote(item_id)
    if promoted is None:
        return None
    settle_facts(store, [promoted], at=at, similar=similar)
    return store.get(promoted.id) or promoted


def flushed_facts(
    bullets: list[str], *, scope: str, at: float, session_key: str
) -> list[MemoryItem]:
    """The facts of a compaction flush's bullets: procedural when marked, else semantic;
    each cut to `MAX_ITEM_CHARS`."""
    facts = []
    for bullet in bullets:
        procedural = bullet.lower().startswith(PROCEDURE_MARK)
        text = bullet[len(PROCEDURE_MARK) :].strip() if procedural else bullet.strip()
        if not text:
            continue
        facts.append(
            new_fact(
                text[:MAX_ITEM_CHARS],
                item_type=ItemType.FIX if procedural else ItemType.PROJECT_FACT,
                scope=scope,
                at=at,
                source="compaction",
                tags=["flush"],
                references=[f"session:{session_key}"],
            )
        )
    return facts


def new_flushed(
    store: ScopeItemStore, facts: list[MemoryItem], *, similar: SimilarFinder
) -> list[MemoryItem]:
    """The flush's facts (`flushed_facts`) whose words memory does not keep yet, each once.

    A flush reads back the messages a compaction drops, whose words were recorded when
    they were said: a bullet saying what a durable item says (of any kind: a person's
    standing preference, a value replaced since) or what was forgotten adds nothing, and
    the kept item stays as it is. Holds the store's lock."""
    fresh: list[MemoryItem] = []
    with store.lock:
        for fact in facts:
            if kept_already(store, fact, similar) or any(says_the_same(fact, f) for f in fresh):
                continue
            fresh.append(fact)
    return fresh
