"""Whether memory already keeps a statement, whatever kind of item keeps it.

The same words reach memory by several ways: a person's standing preference (a PREFERENCE
of theirs, "Ada: Always include version numbers when I ask about libraries."), what a
compaction's flush reads back out of the messages it drops (a fact of no one, typed by the
model's bullet: "Always include version numbers when I ask about libraries."), a fact the
model saved with the memory tool. The store merges a repeat only when kind and wording
match (its fingerprint), and the fact rules (`memory.write.facts`) collapse restatements
of one speaker in one layer; a flush's fact, of no speaker and of its own kind, fell
between the two, and the preference was kept twice (found live, after a `/compact`).

`says_the_same` is the one test: the same words (`statement_of`: without a speaker's
label, case, spacing or closing punctuation), and not two different people behind them.
The same words of two members of a group are two people's statements, each kept.
"""

from __future__ import annotations

from collections.abc import Callable

from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import (
    STANDING_TAG,
    Layer,
    MemoryItem,
    speaker_of,
    speaker_tag,
    split_label,
    statement_of,
)

# ids of the items best matching a text, best first (the scope's BM25 index); the fact
# rules and standing preferences use it too.
SimilarFinder = Callable[[str, int], list[str]]
# How many of the best word matches are looked at. The same words score highest: every
# item holding them and little else (the durable item, the episode it came from, at most a
# flushed copy) ranks above the longer turns that said them; 8 leaves room for those and
# for a few kept items sharing every word and more.
_SIMILAR_HITS = 8


def said_by(item: MemoryItem) -> str | None:
    """Who stated `item` (a speaker tag): its tag, else the label its words start with
    ("Boris: ..." in a flushed bullet); None when nothing names anyone."""
    tag = speaker_of(item)
    if tag is not None:
        return tag
    label = split_label(item.content)[0]
    return speaker_tag(label) if label else None


def says_the_same(first: MemoryItem, second: MemoryItem) -> bool:
    """Whether two items state the same words, by the same person or by one naming no one."""
    statement = statement_of(first.content)
    if not statement or statement != statement_of(second.content):
        return False
    one, other = said_by(first), said_by(second)
    return one is None or other is None or one == other


def durable_restatements(
    store: ScopeItemStore, item: MemoryItem, similar: SimilarFinder
) -> list[MemoryItem]:
    """The durable items other than `item` that say what it says (`says_the_same`),
    current or replaced earlier, best word matches first. Holds the store's lock."""
    found = []
    with store.lock:
        for hit in similar(item.content, _SIMILAR_HITS):
            kept = store.items.get(hit)
            if (
                kept is not None
                and kept.id != item.id
                and kept.layer is not Layer.EPISODIC
                and says_the_same(kept, item)
            ):
                found.append(kept)
    return found


def kept_already(store: ScopeItemStore, item: MemoryItem, similar: SimilarFinder) -> bool:
    """Whether memory keeps `item`'s words already, or kept them and forgot them: a durable
    item says the same (any kind; a replaced one too, so an old value is not made current
    again), or an item of those words was forgotten at the user's request."""
    return store.forgot_statement(item.content) or bool(durable_restatements(store, item, similar))


def facts_beside_standing(
    store: ScopeItemStore, standing: MemoryItem, similar: SimilarFinder
) -> list[MemoryItem]:
    """The current durable items, not standing ones, that say what the standing item
    `standing` says, stated no later: the same preference kept as a fact too."""
    return [
        kept
        for kept in durable_restatements(store, standing, similar)
        if STANDING_TAG not in kept.tags
        and not kept.is_superseded
        and kept.created_at <= standing.created_at
    ]
