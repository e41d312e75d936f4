"""Standing preferences: how a person asked to be answered, kept and carried every turn.

"Always include version numbers when I ask about libraries", "never use emojis", "from
now on answer in French", "I prefer step-by-step explanations": said once, they matter
for every later answer to that person, whatever its words. A pack finds an item only by
what the question shares with it, so these were mostly missing when they applied.

What counts as one is read from a user's own words by `memory.write.standing_statements`
(never from a forwarded message, a tool's output or the bot's replies); this module keeps
them. A standing item is a durable PREFERENCE of its speaker, dated, tagged `standing`,
naming the message it was said in, and the one item of its words: a fact of the same words
by the same person (or no one) is merged into it (`memory.write.restatements`). A newer
one by the same speaker about the same thing (the same "when I ask about ..." and the same
verb, or mostly the same words, and not about another aspect of the answer: "briefly"
after "in Spanish" keeps both) replaces it (`facts.supersede`), so the old one is kept
as earlier and no longer carried. One that changes only some of the aspects an older
one asks about ("in English instead" after "briefly and in Spanish") leaves it carried,
marked with what changed (`answer_aspects.CHANGED_ASPECT`): the rest still holds.

Every request of the chat carries the ones in force (`current_standing`) as a block of
their own (`memory.write.standing_block`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import cache
from weakref import WeakKeyDictionary

from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX, ScopeItemStore, new_item_id
from mnemobot.memory.store.items import (
    SPEAKER_TAG,
    STANDING_TAG,
    ItemType,
    Layer,
    MemoryItem,
    speaker_of,
    speaker_tag,
)
from mnemobot.memory.text.languages import language
from mnemobot.memory.write.answer_aspects import CHANGED_ASPECT, aspects_left, changed_aspects
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning
from mnemobot.memory.write.fact_items import new_fact
from mnemobot.memory.write.facts import supersede
from mnemobot.memory.write.restatements import SimilarFinder, facts_beside_standing
from mnemobot.memory.write.served_others import serves_others
from mnemobot.memory.write.standing_statements import replaces, restates, standing_statements

# A request may name another member in lower case ("answer anna in french"): those who
# spoke in this many turns of the chat before it count. A bound on the turns read when
# such a word is seen, not a knob: a group's members mostly speak within a day's turns.
MEMBER_TURNS = 500
_FIRST_LETTERS = re.compile(r"[^\W\d_]+")

# ----------------------------------------------------------------- keeping them


def record_standing(
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
) -> list[MemoryItem]:
    """The standing items of one recorded turn of the user (`recorded`: its stored items),
    each replacing the speaker's earlier ones about the same thing. `sole_speaker`: the
    speaker is the scope's one person, and its standing items under other names are
    theirs too (a renamed user's; none is a forward's). Holds the store's lock."""
    recorded = list(recorded)
    turn = next((i for i in recorded if i.type is ItemType.TURN), None)
    prefix = f"{speaker}: " if speaker else ""
    requests = [
        item.content.removeprefix(prefix)
        for item in recorded
        if item.type is ItemType.PREFERENCE and "request" in item.tags and item.source == "user"
    ]
    statements = standing_statements(
        user_text, requests, members=cache(lambda: _members_before(store, turn, speaker))
    )
    if not statements:
        return []
    references = list(turn.references) if turn is not None else []
    made: list[MemoryItem] = []
    with store.lock:
        for statement in statements:
            fact = new_fact(
                prefix + statement.text,
                item_type=ItemType.PREFERENCE,
                scope=store.scope,
                at=at,
                source="standing",
                extraction=extraction,
                speaker=speaker,
                tags=[STANDING_TAG, statement.kind],
                references=references,
                id_factory=id_factory,
            )
            stored = store.add([fact])
            if not stored:
                continue  # forgotten earlier at the user's request
            item = stored[0]
            made.append(item)
            older = [
                old
                for old in current_standing(store)
                if old.id != item.id
                and old.created_at <= item.created_at
                and _one_speaker(old, item, sole_speaker)
                and replaces(item.content, old.content)
            ]
            # Said again in other words: the messages it was said in before still say it,
            # and a question about it may name the first one. Also when it was changed in
            # between ("evening sessions on Fridays", then "evening activities", then
            # "evening sessions" again): an earlier one it says again, replaced or not.
            earlier_refs = [
                ref
                for old in _standing_said_before(store, item, sole_speaker)
                if restates(item.content, old.content)
                for ref in old.references
                if not ref.startswith(PROMOTED_FROM_PREFIX)
            ]
            if earlier_refs and not set(earlier_refs) <= set(item.references):
                references = list(dict.fromkeys([*item.references, *earlier_refs]))
                item = store.add([replace(item, references=references)])[0]
                made[-1] = item
            # The same words kept as a fact too (the memory tool's in this turn, a flush's
            # of an earlier message): one item, the standing one.
            beside = facts_beside_standing(store, item, similar)
            if beside:
                references = [ref for fact in beside for ref in fact.references]
                merged = list(dict.fromkeys([*item.references, *references]))
                item = store.add([replace(item, references=merged)])[0]
                made[-1] = item
                for fact in beside:
                    store.remove(fact.id, merged_into=item.id)
            replaced = [old for old in older if not _changed_in_part(store, old, item)]
            if replaced:
                supersede(store, [old.id for old in replaced], item.id, at, similar)
    return made


def without_requests_for_others(
    store: ScopeItemStore, recorded: Iterable[MemoryItem], *, speaker: str | None
) -> list[MemoryItem]:
    """The stored items of one turn (`recorded`), less the requests extraction read that
    serve another member or everyone ("From now on, answer Boris only in German", said by
    Clara): no preference of the speaker's, they are dropped into the turn that keeps the
    words as what was said, before promotion could make them a durable preference the
    page lists and a pack shows as `Preference: ...`. Holds the store's lock."""
    recorded = list(recorded)
    turn = next((i for i in recorded if i.type is ItemType.TURN), None)
    if turn is None:
        return recorded
    prefix = f"{speaker}: " if speaker else ""
    members = cache(lambda: _members_before(store, turn, speaker))
    kept: list[MemoryItem] = []
    with store.lock:
        for item in recorded:
            if (
                item.type is ItemType.PREFERENCE
                and "request" in item.tags
                and serves_others(item.content.removeprefix(prefix), members)
            ):
                store.remove(item.id, merged_into=turn.id)
            else:
                kept.append(item)
    return kept


def _members_before(
    store: ScopeItemStore, turn: MemoryItem | None, speaker: str | None
) -> frozenset[str]:
    """The first names and usernames, in lower case, of the others who spoke in the
    chat's last `MEMBER_TURNS` turns around `turn`: whom "answer anna in french" may name."""
    if turn is None:
        return frozenset()
    # And after it: turns of one second (a Telegram message's time) are in the order of
    # their ids, so a member who spoke just before may sort after.
    with store.lock:
        before, after = store.timeline.around(turn, steps=MEMBER_TURNS)
    own = speaker_tag(speaker) if speaker else None
    turns = [*before, *after]
    tags = {tag for item in turns if (tag := speaker_of(item)) is not None and tag != own}
    names = [tag.removeprefix(SPEAKER_TAG).lstrip("@") for tag in tags]
    # A Telegram member is named by their username when they have one ("@anna_k"): its
    # first run of letters is the name said ("anna"), as a full name's first word is; but
    # not a word every request has ("@the_boss" made "answer the way a pirate would"
    # serve someone: review).
    firsts = [
        first.group()
        for name in names
        if (first := _FIRST_LETTERS.match(name))
        and first.group() != name
        and first.group() not in _common_words()
    ]
    return frozenset([*names, *firsts])


@cache
def _common_words() -> frozenset[str]:
    """Words no one is named by: the stopwords of the languages requests are read in."""
    names = ("english", "german", "spanish", "russian")
    return frozenset().union(*(language(name).stopwords for name in names))


def _changed_in_part(store: ScopeItemStore, old: MemoryItem, newer: MemoryItem) -> bool:
    """Whether `newer` changes only some aspects of `old`, which then stays in force with
    those marked as changed ("briefly and in Spanish", then "in English instead": the
    person still wants brevity). Replacing it whole dropped "briefly" from every request."""
    changed = [
        tag.removeprefix(CHANGED_ASPECT) for tag in old.tags if tag.startswith(CHANGED_ASPECT)
    ]
    if not aspects_left(old.content, newer.content, changed):
        return False
    marks = [
        CHANGED_ASPECT + aspect for aspect in sorted(changed_aspects(old.content, newer.content))
    ]
    store.add([replace(old, tags=list(dict.fromkeys([*old.tags, *marks])))])
    return True


def restore_changed_aspects(store: ScopeItemStore, forgotten: Iterable[MemoryItem]) -> None:
    """After `forgotten` were forgotten: an aspect a standing request is marked changed in
    holds again when a forgotten request of its speaker changed it and none in force
    still does. Forgetting "in English instead" leaves "briefly and in Spanish" whole, as
    forgetting a request that replaced another whole brings that one back."""
    gone = [item for item in forgotten if STANDING_TAG in item.tags]
    if not gone:
        return
    with store.lock:
        current = _index(store).current(store)
        restored = []
        for item in current:
            marked = {t[len(CHANGED_ASPECT) :] for t in item.tags if t.startswith(CHANGED_ASPECT)}
            holds_again = (marked & _changed_by(item, gone)) - _changed_by(item, current)
            if holds_again:
                unmarked = {CHANGED_ASPECT + aspect for aspect in holds_again}
                tags = [tag for tag in item.tags if tag not in unmarked]
                restored.append(replace(item, tags=tags))
        if restored:
            store.add(restored)


def _changed_by(item: MemoryItem, others: Iterable[MemoryItem]) -> set[str]:
    """The aspects of `item` that later requests of its speaker among `others` name."""
    speaker = speaker_of(item)
    return {
        aspect
        for other in others
        if other.id != item.id
        and speaker_of(other) == speaker
        and other.created_at >= item.created_at
        for aspect in changed_aspects(item.content, other.content)
    }


def _standing_said_before(
    store: ScopeItemStore, item: MemoryItem, sole_speaker: bool
) -> list[MemoryItem]:
    """The speaker's standing items older than `item`, replaced ones too."""
    return [
        old
        for old in _index(store).every(store)
        if old.id != item.id
        and old.created_at <= item.created_at
        and _one_speaker(old, item, sole_speaker)
    ]


def _one_speaker(old: MemoryItem, item: MemoryItem, sole_speaker: bool) -> bool:
    """Whether one person asked for both: the same speaker tag, or any two names of the
    scope's one person (standing items are only ever of a user's own words)."""
    one, other = speaker_of(old), speaker_of(item)
    return one == other or (sole_speaker and one is not None and other is not None)


class _StandingIndex:
    """The scope's standing item ids, kept up to date from the store's log of durable
    writes (as `facts` keeps its slot index), so a request finds them without a scan."""

    def __init__(self) -> None:
        self.loads = -1
        self.read_to = 0
        self.ids: dict[str, None] = {}

    def current(self, store: ScopeItemStore) -> list[MemoryItem]:
        return [item for item in self.every(store) if not item.is_superseded]

    def every(self, store: ScopeItemStore) -> list[MemoryItem]:
        """The standing items kept, replaced ones too."""
        if store.loads != self.loads:
            self.loads, self.read_to, self.ids = store.loads, 0, {}
            # Only lines holding the tag are read (a big scope's items are on disk: going
            # through every durable item took 1.5 s of the first pack at 1M items).
            fresh: Iterable[MemoryItem | None] = store.durable_items(STANDING_TAG)
        else:
            fresh = map(store.items.get, store.durable_log[self.read_to :])
        self.read_to = len(store.durable_log)
        for item in fresh:
            if item is not None and STANDING_TAG in item.tags:
                self.ids[item.id] = None
        found = []
        for item_id in list(self.ids):
            item = store.items.get(item_id)
            if item is None or item.layer is Layer.EPISODIC:
                del self.ids[item_id]
                continue
            found.append(item)
        return found


_INDEXES: WeakKeyDictionary[ScopeItemStore, _StandingIndex] = WeakKeyDictionary()


def current_standing(store: ScopeItemStore) -> list[MemoryItem]:
    """The scope's standing items still in force (not replaced, not forgotten)."""
    with store.lock:
        return _index(store).current(store)


def _index(store: ScopeItemStore) -> _StandingIndex:
    index = _INDEXES.get(store)
    if index is None:
        index = _INDEXES[store] = _StandingIndex()
    return index
