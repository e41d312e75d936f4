"""Pure scoring functions for memory retrieval; weights live in `memory.pack.ranking.Ranking`.

The combined score of an item for a query is

    decay * (relevance_weight * relevance + recency_weight * recency
             + salience_weight * salience + confidence_weight * confidence + boost)

- relevance: the item's BM25+ score scaled into 0..1 within the query's candidates (see
  `normalized_relevance`); 0 for a candidate that no query term matched (recent context).
- recency: 1 for an item updated now, halving every `recency_half_life_days`.
- decay: only for durable (semantic, procedural) items. The design this follows deleted
  them after 30 days; here age only pulls the multiplier from 1 toward a floor (0.5 by
  default), smoothly, so an old fact ranks below a fresh one of equal relevance but is
  never lost: when it is the only relevant item, it is still found.
- boost: a small per-type bonus (constraints and preferences first) plus a tag bonus.

With the default weights relevance carries 0.75 of a ~1.0 maximum and everything else
together at most 0.30, so for a question the best BM25 match beats any item half as
relevant; between close matches recency, salience and confidence decide.
"""

from __future__ import annotations

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking, TypeBoosts
from mnemobot.memory.store.items import ItemType


def age_days(now: float, then: float) -> float:
    """Days from `then` to `now` (epoch seconds); 0 for a time in the future."""
    return max(0.0, (now - then) / SECONDS_PER_DAY)


def recency_score(age_days: float, half_life_days: float) -> float:
    """1 for age 0, halving every `half_life_days`; in (0, 1] (0 only past float range)."""
    if half_life_days <= 0:
        raise ValueError("half_life_days must be positive")
    return 0.5 ** (max(0.0, age_days) / half_life_days)


def decay_factor(
    age_days: float,
    decay_days: float,
    enabled: bool,
    floor: float = DEFAULT_RANKING.decay_floor,
) -> float:
    """Multiplier for an aging durable item: 1 when new, sliding smoothly toward `floor`.

    The gap to the floor halves every `decay_days`, so the factor is continuous, never
    increases with age and never drops below `floor` (> 0): decay ranks an old fact lower
    but never removes it.
    """
    if not enabled or age_days <= 0:
        return 1.0
    if decay_days <= 0:
        raise ValueError("decay_days must be positive")
    return floor + (1.0 - floor) * 0.5 ** (age_days / decay_days)


def type_boost(item_type: ItemType, boosts: TypeBoosts = DEFAULT_RANKING.type_boost) -> float:
    """The bonus for an item type (e.g. CONSTRAINT -> `boosts.constraint`)."""
    return float(getattr(boosts, item_type.value.lower()))


def normalized_relevance(score: float, base: float, best: float) -> float:
    """Scale a BM25+ score into 0..1 within one query's candidates.

    BM25+ gives every document the same constant `base` (delta * idf of the query terms,
    see `memory.store.bm25`), so only the part above it says how well an item matches:
    relevance = (score - base) / (best - base), where `best` is the top score among the
    query's candidates. The best match gets 1; every matching item gets more than 0; an
    item no query term matched gets 0. Scaling by the best rather than min-max keeps a
    weak-but-real match above an unmatched recent item.
    """
    span = best - base
    if span <= 0:
        return 0.0
    return min(1.0, max(0.0, (score - base) / span))


def combined_score(
    relevance: float,
    recency: float,
    salience: float,
    confidence: float,
    boost: float,
    *,
    decay: float = 1.0,
    ranking: Ranking = DEFAULT_RANKING,
) -> float:
    """The item's rank score; inputs other than `boost` are clamped to 0..1."""
    return _unit(decay) * (
        ranking.relevance_weight * _unit(relevance)
        + ranking.recency_weight * _unit(recency)
        + ranking.salience_weight * _unit(salience)
        + ranking.confidence_weight * _unit(confidence)
        + boost
    )


def _unit(value: float) -> float:
    # Comparisons, not min/max: this runs for every candidate of every pack.
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value
