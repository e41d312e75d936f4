"""Values said again: the person's next statement of the value a question asks about.

"I've scheduled a safety inspection for the apartment on March 23", a few days later
"I've got a safety inspection coming up on March 25": no word says the date changed, so
`memory.pack.figures` sees no update, and the first statement, saying more of the
question's words, ranks above the second, which a tight pack leaves out. The same when
the word of change stands far from the value ("my $200 emergency fund ... since I just
increased it") or is a noun ("a slight improvement to 135/82"). So, relative to the
question (`restated_figure`):

- the *anchor* is the person's sentence (not the assistant's part of a turn: its advice
  is full of values nobody has) with a value and the most query weight, at least
  `ANCHOR_SHARE` of the question's: what the question is about, of a kind (money,
  percent, time, date, or a number of the same unit);
- the *restatement* is the person's next sentence, said later, with a value of that kind
  but another value, holding at least `RESTATED_SHARE` of the anchor's weight;
- the pack takes it first, after the updates `memory.pack.figures` found. Nothing is
  marked earlier: without a word of change, the two may be two things of the same kind
  ("the inspection on March 23", "the mold inspection on June 25").

A pure function of the candidates and the query's term weights.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mnemobot.memory.pack.figures import SENTENCE, values_in
from mnemobot.memory.pack.states import spoken_part
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.text.terms import languages, terms_in

# A restatement must hold this share of the anchor's query weight: it names its subject
# more briefly ("my $200 emergency fund for costume repairs" after "I set aside $150 as an
# emergency fund for unexpected rehearsal or costume costs": 0.38 of its weight). BEAM
# dev-1M (`--budget 1800`, the packs on one import): recall 0.6081 -> 0.6174 at 0.25 and
# 0.35, stale-only 6 -> 4; at 0.5 stale-only 5. Fresh imports at 0.35: 500K 0.6221 ->
# 0.6318, dev-1M 0.6081 -> 0.6202; LoCoMo dev 0.816 as before.
RESTATED_SHARE = 0.35
# The anchor must hold this share of the question's weight: what the question is about,
# not a sentence sharing one common word with it (with no floor, "watered the garden on
# day 18" was put before "the garden tomatoes got blight" for "tomato blight in the
# garden", and "solar note 5" before "solar panel invoice" for "solar panel"). Fresh
# imports (docs/measured.md): none 500K 0.6318 / dev-1M 0.6202, stale-only 4 / 4; 0.5
# 0.6278 / 0.6124, 4 / 6; 0.2 0.6361 / 0.6194, 3 / 6.
ANCHOR_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class SaidValue:
    """A sentence the person said with values: their kinds and values, and its weight."""

    item: MemoryItem
    values: frozenset[tuple[str, str]]
    weight: float
    sentence: str = ""


def said_values(item: MemoryItem, weights: Mapping[str, float]) -> list[SaidValue]:
    """The item's sentences the person said holding a value and a query term."""
    spoken = spoken_part(item)
    if not weights or not any(ch.isdigit() for ch in spoken):
        return []
    text_languages = languages(spoken)
    found = []
    for sentence in SENTENCE.findall(spoken):
        values = values_in(sentence, text_languages)
        if not values:
            continue
        said = set(terms_in(sentence, text_languages))
        weight = sum(w for term, w in weights.items() if term in said)
        if weight > 0:
            found.append(SaidValue(item, frozenset(values), weight, sentence))
    return found


def value_anchor(found: Sequence[SaidValue], weights: Mapping[str, float]) -> SaidValue | None:
    """The person's sentence with a value that matches the question best, if it holds
    `ANCHOR_SHARE` of the question's weight: what the question is about."""
    if not found:
        return None
    anchor = max(found, key=lambda s: (s.weight, -s.item.created_at, s.item.id))
    return anchor if anchor.weight >= ANCHOR_SHARE * sum(weights.values()) else None


def restated_figure(
    candidates: Iterable[MemoryItem], weights: Mapping[str, float]
) -> MemoryItem | None:
    """The person's next statement of another value of the kind the question asks about,
    after the one that matches it best (see the module docstring); None if there is none."""
    return restated_among(said_in(candidates, weights), weights)


def said_in(candidates: Iterable[MemoryItem], weights: Mapping[str, float]) -> list[SaidValue]:
    """Every candidate's sentences the person said with a value and a query term."""
    return [said for item in candidates for said in said_values(item, weights)]


def restated_among(found: Sequence[SaidValue], weights: Mapping[str, float]) -> MemoryItem | None:
    """`restated_figure` of the sentences `said_in` found."""
    anchor = value_anchor(found, weights)
    if anchor is None:
        return None
    later = sorted(
        (s for s in found if s.item.created_at > anchor.item.created_at),
        key=lambda s: (s.item.created_at, s.item.id),
    )
    for said in later:
        if said.weight < RESTATED_SHARE * anchor.weight:
            continue
        kinds = {kind for kind, _ in anchor.values}
        if any(kind in kinds and (kind, value) not in anchor.values for kind, value in said.values):
            return said.item
    return None
