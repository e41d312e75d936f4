"""A value's later statements: the person's newer words on the value a question asks
about, found by the words of their first statement of it.

"I need enough budget for my photography gear, I've allocated $300 monthly", an hour
later "I'm worried about my photography budget, it's been adjusted to $350 monthly": a
question in the first one's words ("how much do I allocate monthly for my gear and
software?") puts every long answer about gear and software above the update, which says
two of its words. In months of chat the update is not among the best hits at all, so
`memory.pack.figures` and `memory.pack.restated`, which read the best candidates, never
see it, and the pack holds the old value alone.

So, when the best candidates hold the person's statement of a value the question is
about (`restated.value_anchor`, holding `THREAD_ANCHOR_SHARE` of its weight), memory is
searched again with that sentence's own words (`later_statements`): the same person's
later items that say it again (`THREAD_SHARE` of its words) with a value of the same kind
join what `memory.pack.figures` reads, and the newest of them that says the value
changed ("adjusted to $350") is its current value (`value_thread`). Only those found to
be updates reach the pack, first, the older value marked earlier as for any update.
Another member's words, the model's notes, documents and forwards never join: they are
not the person's word on their value.

Pure: the index and the items are only read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mnemobot.memory.pack.figures import SENTENCE, updated_values, values_in
from mnemobot.memory.pack.restated import SaidValue, said_in, value_anchor
from mnemobot.memory.pack.states import spoken_part
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.items import MemoryItem, how_stated, speaker_of
from mnemobot.memory.text.terms import languages, search_terms, terms, terms_in

# Hits of the anchor sentence's words looked at: its own words bring its later statements
# near the top; more only adds statements of other things with a value of the same kind.
# Not tuned (on BEAM's development 1M stand-ins the updates a question missed were among
# the first 10).
THREAD_HITS = 24
# The anchor holds this share of the question's term weight (idf): the question is about
# its value. At `restated.ANCHOR_SHARE` (0.2) a sentence sharing one word with a yes/no
# question ("how my increased study time to 5 hours helped my conic sections quiz" for
# "have I worked on ellipse problems before?") brought its later restatements first.
THREAD_ANCHOR_SHARE = 0.5
# A later statement holds this share of the anchor sentence's term weight, less its
# values and years (what a newer statement changes), in one sentence with a value of its
# kind: it says the same thing ("I'm worried about my photography budget, it's been
# adjusted to $350 monthly starting March 2024" after "... enough budget for my
# photography gear, I've allocated $300 monthly starting March 2024": 0.39), where
# another sentence sharing a word and a date with it is about something else.
# BEAM development, the packs of one import each (`mnemobot eval beam --reuse-import`,
# 1800 tokens): without the thread 500K 0.6349 / 1M stand-ins 0.6184 (knowledge update
# 0.7717 / 0.7575, stale-only 3 / 5); at 0.3 0.6344 / 0.6208 (0.7717 / 0.7799, 3 / 4);
# at 0.4 0.6344 / 0.6178, the update above left out. LoCoMo development: 0.8163 either way.
THREAD_SHARE = 0.3
# Texts memory holds that are nobody's own word on their value: the model's notes (a
# compaction's flush), a tool's output, what the assistant said, a document's text.
_NOT_SAID_BY_A_PERSON = frozenset({"compaction", "tool", "assistant", "document"})
# (`memory.write`'s tag of a message the person passed on: its author's words.)
_FORWARDED_TAG = "forwarded"


@dataclass(frozen=True, slots=True)
class ValueThread:
    """The later statements found, the newest of them that says the value changed
    (`current`), and the first statement it makes earlier (`anchor_id`)."""

    items: list[MemoryItem] = field(default_factory=list)
    current: MemoryItem | None = None
    anchor_id: str | None = None
    # Later statements the request carries (the conversation holds them): read, never
    # added; the newest of them may be `current`, marking the first statement earlier.
    carried: list[MemoryItem] = field(default_factory=list)


def value_thread(
    figure_items: Sequence[MemoryItem],
    items: Mapping[str, MemoryItem],
    index: BM25Index,
    weights: Mapping[str, float],
    carried: Callable[[MemoryItem], bool] | None = None,
    said: Sequence[SaidValue] | None = None,
) -> ValueThread:
    """The person's later statements of the value whose statement among `figure_items`
    (the best candidates) holds `THREAD_ANCHOR_SHARE` of the question's term `weights`;
    those the request carries (`carried`) apart. Its current value: the newest that gives
    another value of the kind with a word of change next to it ("adjusted to $350"),
    though it says too few of the question's words for `memory.pack.figures` ("how much
    do I allocate for photography?" after "my photography budget was adjusted ...")."""
    if said is None:
        said = said_in(figure_items, weights)
    anchor = value_anchor(said, weights)
    if anchor is None or anchor.weight < THREAD_ANCHOR_SHARE * sum(weights.values()):
        return ValueThread()
    read = {item.id for item in figure_items}
    found = later_statements(anchor, index, items, figure_items)
    in_request = [item for item in found if carried is not None and carried(item)]
    carried_ids = {item.id for item in in_request}
    kinds = {kind for kind, _ in anchor.values}
    current = max(
        (item for item in found if _changes(spoken_part(item), kinds, anchor.values)),
        key=lambda item: (item.created_at, item.id),
        default=None,
    )
    return ValueThread(
        [item for item in found if item.id not in read and item.id not in carried_ids],
        current,
        anchor.item.id if current is not None else None,
        in_request,
    )


def _changes(spoken: str, kinds: set[str], values: frozenset[tuple[str, str]]) -> bool:
    """Whether a sentence of `spoken` gives another value of one of `kinds` with a word
    of change next to it."""
    text_languages = languages(spoken)
    return any(
        kind in kinds and (kind, value) not in values
        for sentence in SENTENCE.findall(spoken)
        for kind, value in updated_values(sentence, text_languages)
    )


def later_statements(
    anchor: SaidValue,
    index: BM25Index,
    items: Mapping[str, MemoryItem],
    also: Sequence[MemoryItem] = (),
) -> list[MemoryItem]:
    """The same person's items said after `anchor` that share its sentence's words and
    give a value of one of its kinds: the best hits of its words, then those of `also`
    (the candidates already read) that do."""
    if not anchor.sentence:
        return []
    anchor_terms = search_terms(anchor.sentence, index.document_frequency)
    hits = index.top(anchor_terms, THREAD_HITS)
    # Its values and years are what a later statement changes, not what it is about; in
    # the reading `said_again` reads a sentence in (the other readings' terms, "presupuesto"
    # read as English, are words no later sentence read as its own language holds).
    weight = {t: index.idf(t) for t in terms(anchor.sentence) if not any(ch.isdigit() for ch in t)}
    kinds = {kind for kind, _ in anchor.values}
    read = {item.id for item in also}
    looked_at = [
        item
        for doc_id in sorted(hits, key=lambda doc: (-hits[doc], doc))
        if doc_id not in read and (item := items.get(doc_id)) is not None
    ]
    return [
        item
        for item in [*looked_at, *also]
        if item.created_at > anchor.item.created_at
        and said_by_the_same_person(anchor.item, item)
        and said_again(spoken_part(item), kinds, weight) >= THREAD_SHARE
    ]


def said_by_the_same_person(anchor: MemoryItem, item: MemoryItem) -> bool:
    """Whether `item` is the anchor's speaker's own words: the same speaker tag (none for
    none), and no text memory holds of someone else (a note, a document, a forward)."""
    return (
        speaker_of(item) == speaker_of(anchor)
        and how_stated(item.source) == "said"
        and item.source not in _NOT_SAID_BY_A_PERSON
        and _FORWARDED_TAG not in item.tags
    )


def said_again(spoken: str, kinds: set[str], weight: Mapping[str, float]) -> float:
    """The most of the anchor sentence's term weight (`weight`) one sentence of `spoken`
    with a value of one of `kinds` holds, 0..1."""
    total = sum(weight.values())
    if not total or not any(ch.isdigit() for ch in spoken):
        return 0.0
    text_languages = languages(spoken)
    best = 0.0
    for sentence in SENTENCE.findall(spoken):
        if not any(kind in kinds for kind, _ in values_in(sentence, text_languages)):
            continue
        said = set(terms_in(sentence, text_languages))
        best = max(best, sum(w for term, w in weight.items() if term in said) / total)
    return best
