"""What the conversation turns around a query's matching turns add to the MemoryPack.

Two ways a turn that shares no word with the query still gets relevance from one that
does: it lies right before or after a matching candidate (`turn_context`, which also
forms the optional conversation windows), or the store's timeline finds it around a
matching turn (`turns_around_hits`). A reply that follows a question (a turn ending in
"?") borrows `answer_relevance_share`, any other neighbour `neighbour_relevance_share`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from mnemobot.memory.pack.ranking import Ranking
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, said_order
from mnemobot.memory.store.turn_timeline import is_turn

# Up to `steps` turns before and after a turn in its conversation, nearest first.
TurnsAround = Callable[[MemoryItem, int], tuple[list[MemoryItem], list[MemoryItem]]]


@dataclass(slots=True)
class TurnNeighbourhood:
    """What conversation turns among a query's candidates say about each other."""

    # Window number of each turn: turns at most the window gap apart share one.
    window_of: dict[str, int] = field(default_factory=dict)
    # Relevance a turn borrows from a matching turn right before or after it.
    lent: dict[str, float] = field(default_factory=dict)


def turn_context(
    candidates: Iterable[MemoryItem], relevance_of: Mapping[str, float], ranking: Ranking
) -> TurnNeighbourhood:
    """Windows and borrowed relevance of the conversation turns among `candidates`.

    Turns are episodic TURN items. Sorted by time, they form one window while
    each is at most `episode_window_gap_minutes` after the previous one. A turn borrows
    `neighbour_relevance_share` of the relevance of the matching turn right before or
    after it (at most `neighbour_gap_seconds` apart): the reply to a matching question
    ("For walking or running?" after "I got new shoes") often holds the answer without
    sharing a word with the query. Only candidates are looked at, so the cost follows
    the query's hits, not the store's size.
    """
    window_gap = ranking.episode_window_gap_minutes * 60.0
    share = ranking.neighbour_relevance_share
    answer_share = ranking.answer_relevance_share
    neighbour_gap = ranking.neighbour_gap_seconds
    context = TurnNeighbourhood()
    if window_gap <= 0 and (share <= 0 or neighbour_gap <= 0):
        return context
    turns = sorted(
        (
            item
            for item in candidates
            if item.layer is Layer.EPISODIC and item.type is ItemType.TURN
        ),
        key=said_order,
    )
    if window_gap > 0:
        number = -1
        previous = float("-inf")
        for item in turns:
            if item.created_at - previous > window_gap:
                number += 1
            context.window_of[item.id] = number
            previous = item.created_at
    if share > 0 and neighbour_gap > 0:
        own = [relevance_of.get(item.id, 0.0) for item in turns]
        last = len(turns) - 1
        for position, item in enumerate(turns):
            borrowed = 0.0
            if position > 0 and item.created_at - turns[position - 1].created_at <= neighbour_gap:
                before = turns[position - 1]
                borrowed = own[position - 1] * (
                    answer_share if before.content.rstrip().endswith("?") else share
                )
            if position < last and turns[position + 1].created_at - item.created_at <= (
                neighbour_gap
            ):
                borrowed = max(borrowed, share * own[position + 1])
            if borrowed > 0:
                context.lent[item.id] = borrowed
    return context


def turns_around_hits(
    candidates: Mapping[str, MemoryItem],
    relevance_of: Mapping[str, float],
    turns_around: TurnsAround,
    ranking: Ranking,
) -> dict[str, tuple[MemoryItem, float]]:
    """Turns around the matching turns that are not candidates yet, with what they borrow.

    Each step away from the matching turn shares `neighbour_relevance_share` once more,
    and a step longer than `turns_around_max_gap_minutes` ends the walk that way. Only
    the `turns_around_max_hits` best matching turns are walked from: every turn brought
    in is scored, and the best hits with their turns already fill the largest budget.
    """
    steps = ranking.turns_around_hits
    share = ranking.neighbour_relevance_share
    answer_share = ranking.answer_relevance_share
    max_gap = ranking.turns_around_max_gap_minutes * 60.0
    found: dict[str, tuple[MemoryItem, float]] = {}
    matching = [
        (relevance, doc_id)
        for doc_id, relevance in relevance_of.items()
        if relevance > 0 and is_turn(candidates[doc_id])
    ]
    for relevance, doc_id in heapq.nlargest(ranking.turns_around_max_hits, matching):
        hit = candidates[doc_id]
        for side, neighbours in enumerate(turns_around(hit, steps)):
            current = hit
            borrowed = relevance
            for neighbour in neighbours:
                if abs(neighbour.created_at - current.created_at) > max_gap:
                    break
                asks = side == 1 and current.content.rstrip().endswith("?")
                borrowed *= answer_share if asks else share
                if neighbour.id not in candidates:
                    known = found.get(neighbour.id)
                    if known is None or known[1] < borrowed:
                        found[neighbour.id] = (neighbour, borrowed)
                current = neighbour
    return found
