"""One person under every name: the facts of a scope whose chat has a single person.

A fact names its speaker by the name they went by when they said it ("speaker:olga").
In a group that keeps members apart; in a private chat (its own memory) there is one
person, and a Telegram user who renamed herself from Olga to Lucía kept two current
homes: "I moved to Seville", said as Lucía, replaced nothing Olga had said (found live).
A turn of such a chat (`TurnMemoryEvent.sole_speaker`) compares its facts with those of
every name in the scope, stored under old names too; except a forwarded message's words,
which stay their author's (`passed_on`).
"""

from __future__ import annotations

from collections.abc import Callable

from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX, ScopeItemStore
from mnemobot.memory.store.items import FORWARDED_TAG, ItemType, MemoryItem, speaker_of
from mnemobot.memory.write.restatements import SimilarFinder

# Whether an item of another speaker tag holds the sole speaker's own words.
OwnWords = Callable[[MemoryItem], bool]
# Best word matches looked through for the turn a fact was said in: the turn holds the
# fact's words and little else, so it is among the first (as `facts` finds sources).
_TURN_HITS = 8


def own_words(store: ScopeItemStore, similar: SimilarFinder) -> OwnWords:
    """Whether an item is the scope's one person's words under some name: it names a
    speaker, and is no forwarded message's (those name their author). Holds the lock."""
    seen: dict[str, bool] = {}

    def own(item: MemoryItem) -> bool:
        if speaker_of(item) is None:
            return False
        if item.id not in seen:
            seen[item.id] = not passed_on(store, item, similar)
        return seen[item.id]

    return own


def passed_on(store: ScopeItemStore, item: MemoryItem, similar: SimilarFinder) -> bool:
    """Whether `item` holds a forwarded message's words: it is the forward's turn, or a
    fact of its author said in one (a forward's facts carry only the author's speaker
    tag; its turn, of the same message and speaker, is tagged forwarded)."""
    if FORWARDED_TAG in item.tags:
        return True
    speaker = speaker_of(item)
    refs = {ref for ref in item.references if not ref.startswith(PROMOTED_FROM_PREFIX)}
    with store.lock:
        for hit in similar(item.content, _TURN_HITS):
            turn = store.items.get(hit)
            if (
                turn is not None
                and turn.type is ItemType.TURN
                and FORWARDED_TAG in turn.tags
                and speaker_of(turn) == speaker
                and (not refs or not refs.isdisjoint(turn.references))
            ):
                return True
    return False


def one_speaker(first: MemoryItem, second: MemoryItem, own: OwnWords | None) -> bool:
    """Whether one person said both: the same speaker tag (none for none), or, in a
    scope of one person (`own` given), both that person's words under any names."""
    one, other = speaker_of(first), speaker_of(second)
    if one == other:
        return True
    return own is not None and own(first) and own(second)
