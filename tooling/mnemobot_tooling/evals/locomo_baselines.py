"""Baselines the LoCoMo eval sets beside the MemoryPack, on the same budget and pricing.

Every baseline returns the `dia_id`s it would put in the prompt. A turn costs what the
pack pays for the same turn: `estimate_item_tokens` of the line the pack renders for it
("- 2023-05-08: Speaker: text"), so a baseline wins only by choosing better, never by
paying less per line.

- newest first: the latest turns, while they fit.
- plain BM25: `rank_bm25.BM25Okapi` over single turns with lowercase word tokens, in rank
  order while they fit. A weak reference: no stemming, no stopwords.
- BM25+ windows: the strong one. BM25+ (`memory.store.bm25.BM25Index`, the pack's own index)
  over the project's own terms (`memory.text.terms.terms`), and each hit, best first,
  comes with the turn right before and right after it in the conversation. This is what
  the pack must beat for its extra machinery (scores, windows, facts) to be worth it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

from rank_bm25 import BM25Okapi

from mnemobot.base.tokens import estimate_item_tokens
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.text.terms import terms

_WORD = re.compile(r"\w+")


class Turn(Protocol):
    """One dialogue turn as the baselines see it."""

    @property
    def dia_id(self) -> str: ...

    @property
    def line(self) -> str: ...

    @property
    def at(self) -> datetime: ...


def pack_line_tokens(turn: Turn) -> int:
    """What the pack pays for this turn: its rendered line, date first."""
    return estimate_item_tokens(f"- {turn.at.strftime('%Y-%m-%d')}: {turn.line}")


def take_within_budget(turns: Iterable[Turn], budget: int) -> set[str]:
    """dia_ids of `turns`, in the given order, while their running cost fits `budget`.

    A turn already taken is not paid for twice.
    """
    taken: set[str] = set()
    used = 0
    for turn in turns:
        if turn.dia_id in taken:
            continue
        cost = pack_line_tokens(turn)
        if used + cost > budget:
            break
        used += cost
        taken.add(turn.dia_id)
    return taken


def newest_first(turns: Sequence[Turn], budget: int) -> set[str]:
    return take_within_budget(reversed(turns), budget)


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Bm25Baseline:
    """Plain Okapi BM25 over single turns of one conversation."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
        self.model = BM25Okapi([_tokens(turn.line) for turn in self.turns])

    def retrieve(self, question: str, budget: int) -> set[str]:
        scores = self.model.get_scores(_tokens(question))
        order = sorted(range(len(self.turns)), key=lambda i: -scores[i])
        return take_within_budget((self.turns[i] for i in order), budget)


class Bm25WindowBaseline:
    """BM25+ over the project's terms; each hit comes with the turns around it."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
        self.index = BM25Index()
        self.index.add_many((str(i), terms(turn.line)) for i, turn in enumerate(self.turns))

    def retrieve(self, question: str, budget: int) -> set[str]:
        hits = self.index.scores(terms(question))
        order = sorted(hits, key=lambda doc: (-hits[doc], int(doc)))
        return take_within_budget(self._with_neighbours(int(doc) for doc in order), budget)

    def _with_neighbours(self, positions: Iterable[int]) -> Iterable[Turn]:
        last = len(self.turns) - 1
        for position in positions:
            yield self.turns[position]
            if position > 0:
                yield self.turns[position - 1]
            if position < last:
                yield self.turns[position + 1]
