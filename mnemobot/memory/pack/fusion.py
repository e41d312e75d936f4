"""How meaning (embedding similarity) joins the word match (BM25) in an item's relevance.

Pure functions of the scores of one query's candidates. An embedding model's cosine
similarities are compressed (a small multilingual model gives 0.88 to the right passage
and 0.79 to an unrelated one), so they are never read against an absolute threshold:
each query's similarities are scaled between the lowest and the highest among its
candidates (min-max), as BM25 is scaled to its best hit, and the two are mixed by
`Ranking.dense_weight`. Reciprocal rank fusion, the other common rule, measured
worse on the LoCoMo development conversations (docs/embeddings.md), and so did dense
similarity used only to add candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol


class DenseSearch(Protocol):
    """The query's vector against one scope's item vectors (`vector_file.ScopeVectors`)."""

    def nearest(self, count: int) -> list[tuple[str, float]]:
        """The `count` most similar items, (id, cosine) best first."""
        ...

    def similarities(self, item_ids: Iterable[str]) -> dict[str, float]:
        """Cosine of each item that has a vector; items without one are left out."""
        ...


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Each score scaled to 0..1 between the lowest (0) and the highest (1); all 1 when
    they are equal (nothing to tell them apart, and each is as good as the best)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    if span <= 0:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / span for key, value in scores.items()}


def fused_relevance(
    words: Mapping[str, float], meaning: Mapping[str, float], dense_weight: float
) -> dict[str, float]:
    """Relevance 0..1 of every item in `words` (BM25 relevance, 0..1) or `meaning`
    (similarity scaled 0..1): `dense_weight` of the meaning plus the rest of the words.

    An item without a vector (not embedded yet) keeps its word relevance whole: it is not
    ranked down for what it lacks while maintenance fills the vectors in.
    """
    weight = min(1.0, max(0.0, dense_weight))
    fused = {
        key: (1.0 - weight) * words.get(key, 0.0) + weight * similarity
        for key, similarity in meaning.items()
    }
    for key, relevance in words.items():
        if key not in meaning:
            fused[key] = relevance
    return fused


def reciprocal_rank(rankings: Sequence[Sequence[str]], k: float) -> dict[str, float]:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over the rankings an item is in
    (rank 1 = best), scaled so the best item gets 1."""
    summed: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            summed[key] = summed.get(key, 0.0) + 1.0 / (k + rank)
    best = max(summed.values(), default=0.0)
    return {key: value / best for key, value in summed.items()} if best > 0 else summed
