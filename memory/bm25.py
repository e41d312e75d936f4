"""An incremental BM25+ inverted index over memory items.

Why our own index instead of rank-bm25 (DESIGN §7): rank-bm25 0.2.2 keeps no inverted
index, so every query scans every document (get_scores took 146 ms at 100k short
documents) and every add means a full rebuild (0.95 s at 100k). A bot adds an item on
every turn and queries on every turn. Here an add or remove touches only the document's
own terms, and a query walks only the posting lists of its terms.

Why BM25+ and not Okapi BM25: `BM25Okapi` floors idf so that on a 2-document corpus every
score is 0, and a new chat has exactly such a tiny corpus. BM25+ (Lv & Zhai 2011) uses
idf = ln((N + 1) / df), which is positive for every term in the corpus, plus a lower bound
`delta` per matching term, so scores stay positive and ordered on any corpus size.

The scores are exactly `rank_bm25.BM25Plus(corpus, k1=1.5, b=0.75, delta=1).get_scores`
for every document that contains at least one query term:

    score(D, Q) = sum over q in Q (repeats counted) of
                  idf(q) * (delta + tf * (k1 + 1) / (k1 * (1 - b + b * |D| / avgdl) + tf))
    with tf the frequency of q in D and avgdl the mean document length.

BM25+ gives `idf(q) * delta` for a query term even to a document that lacks it, so every
document gets the same constant `base_score(Q) = delta * sum of idf(q)` over the query
terms present in the corpus. That constant is included in `scores()` (so the numbers equal
rank-bm25's), it is exactly the score of any document not in `scores()`' result, and it
does not change the ranking; `memory.pack` subtracts it before normalizing relevance.

`top(query_terms, k)` returns only the best `k` of `scores()` (same floats), without
scoring every document a common term matches: a speaker's name is on about half of a
group chat's items, and `scores()` then builds a dict of 50,000 entries in pure Python.
It is MaxScore-style pruning on the (tf, length) groups: terms are taken rarest first (the
order `scores()` adds them in, so sums are bit-identical), a term's groups best value
first, and documents a term would bring in are skipped once even that group's value plus
the best value of every later term cannot reach the k-th best score found so far.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter


class BM25Index:
    """Incremental inverted index; document ids are the memory item ids."""

    __slots__ = ("_df", "_doc_len", "_doc_terms", "_postings", "_total_len", "b", "delta", "k1")

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, delta: float = 1.0) -> None:
        self.k1 = k1
        self.b = b
        self.delta = delta
        # term -> {(tf, document length): ids of the documents with that tf and length}.
        # A term's contribution depends only on (tf, length), and short documents share a
        # few dozen such pairs, so a query computes each contribution once per group and
        # spreads it over the group with set and dict operations that run in C.
        self._postings: dict[str, dict[tuple[int, int], set[str]]] = {}
        self._df: dict[str, int] = {}
        # doc_id -> {term: tf}; kept so remove() touches only the document's own terms.
        self._doc_terms: dict[str, dict[str, int]] = {}
        self._doc_len: dict[str, int] = {}
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    def add(self, doc_id: str, terms: list[str]) -> None:
        """Index `doc_id` with its terms (see `memory.text_terms.terms`); re-adding replaces it."""
        if doc_id in self._doc_len:
            self.remove(doc_id)
        frequencies = dict(Counter(terms))
        length = len(terms)
        postings = self._postings
        df = self._df
        for term, tf in frequencies.items():
            groups = postings.get(term)
            if groups is None:
                postings[term] = {(tf, length): {doc_id}}
                df[term] = 1
                continue
            group = groups.get((tf, length))
            if group is None:
                groups[(tf, length)] = {doc_id}
            else:
                group.add(doc_id)
            df[term] += 1
        self._doc_terms[doc_id] = frequencies
        self._doc_len[doc_id] = length
        self._total_len += length

    def remove(self, doc_id: str) -> bool:
        """Forget `doc_id`; returns whether it was indexed."""
        frequencies = self._doc_terms.pop(doc_id, None)
        if frequencies is None:
            return False
        length = self._doc_len.pop(doc_id)
        postings = self._postings
        df = self._df
        for term, tf in frequencies.items():
            groups = postings[term]
            group = groups[(tf, length)]
            group.discard(doc_id)
            if not group:
                del groups[(tf, length)]
            if df[term] == 1:
                del postings[term]
                del df[term]
            else:
                df[term] -= 1
        self._total_len -= length
        return True

    def doc_ids(self) -> list[str]:
        return list(self._doc_len)

    def document_frequency(self, term: str) -> int:
        return self._df.get(term, 0)

    def idf(self, term: str) -> float:
        """BM25+ idf, ln((N + 1) / df); 0 for a term no document has (as rank-bm25)."""
        df = self._df.get(term, 0)
        return math.log((len(self._doc_len) + 1) / df) if df else 0.0

    def base_score(self, query_terms: list[str]) -> float:
        """The score BM25+ gives every document, even one with none of the query terms."""
        return self.delta * sum(self.idf(term) for term in query_terms)

    def _query_weights(
        self, query_terms: list[str]
    ) -> tuple[list[tuple[str, float]], float, float, float]:
        """([(term, weight)] rarest first, base score, length_a, length_b), as `scores()`.

        A term's contribution to a document is `weight * tf / (length_a + length_b * dl + tf)`.
        """
        n_docs = len(self._doc_len)
        df = self._df
        query_counts = Counter(term for term in query_terms if term in df)
        if not query_counts:
            return [], 0.0, 0.0, 0.0
        k1 = self.k1
        ordered = sorted(query_counts, key=df.__getitem__)
        idfs = [math.log((n_docs + 1) / df[term]) for term in ordered]
        base = self.delta * sum(
            query_counts[term] * idf for term, idf in zip(ordered, idfs, strict=True)
        )
        weights = [
            (term, query_counts[term] * idf * (k1 + 1.0))
            for term, idf in zip(ordered, idfs, strict=True)
        ]
        avgdl = self._total_len / n_docs
        return weights, base, k1 * (1.0 - self.b), k1 * self.b / avgdl

    def score_documents(self, query_terms: list[str], doc_ids: list[str]) -> dict[str, float]:
        """`scores(query_terms)` at just `doc_ids` (those containing a query term)."""
        weights, base, length_a, length_b = self._query_weights(query_terms)
        found: dict[str, float] = {}
        for doc_id in doc_ids:
            frequencies = self._doc_terms.get(doc_id)
            if frequencies is None:
                continue
            length = self._doc_len[doc_id]
            score = base
            matched = False
            for term, weight in weights:
                tf = frequencies.get(term)
                if tf:
                    score += weight * tf / (length_a + length_b * length + tf)
                    matched = True
            if matched:
                found[doc_id] = score
        return found

    def top(self, query_terms: list[str], k: int) -> dict[str, float]:
        """The `k` best documents of `scores(query_terms)`, with the very same scores.

        Ties: every document scoring exactly the k-th best score is returned too, so the
        result can hold more than `k` entries and the caller picks among equal scores by
        its own rule (the pack prefers recent items). Fewer than `k` when fewer documents
        contain a query term; {} when none does or `k` < 1.
        """
        if k < 1:
            return {}
        weights, base, length_a, length_b = self._query_weights(query_terms)
        if not weights:
            return {}
        postings = self._postings
        # Each term's groups with their contribution, best first.
        term_groups: list[list[tuple[float, set[str]]]] = []
        for term, weight in weights:
            groups = [
                (weight * tf / (length_a + length_b * length + tf), group)
                for (tf, length), group in postings[term].items()
            ]
            groups.sort(key=_first, reverse=True)
            term_groups.append(groups)
        # later_best[i]: the most the terms after term i can still add to any document.
        later_best = [0.0] * len(weights)
        for i in range(len(weights) - 2, -1, -1):
            later_best[i] = later_best[i + 1] + term_groups[i + 1][0][0]

        doc_terms = self._doc_terms
        doc_len = self._doc_len
        acc: dict[str, float] = {}
        # A lower bound of the k-th best final score (partial sums only grow).
        threshold = -math.inf
        for i, (term, weight) in enumerate(weights):
            groups = term_groups[i]
            if i and len(acc) >= k:
                threshold = max(threshold, heapq.nlargest(k, acc.values())[-1])
            # A margin, so float rounding in the bound never prunes a document that ties.
            margin = 1e-9 * max(1.0, abs(threshold))
            reach = base + later_best[i]
            if acc and self._df[term] > 4 * len(acc):
                # A common term after rarer ones: look it up in the few documents held.
                for doc_id in list(acc):
                    tf = doc_terms[doc_id].get(term)
                    if tf:
                        acc[doc_id] += weight * tf / (length_a + length_b * doc_len[doc_id] + tf)
                held_before = None
            else:
                held_before = len(acc)
            added = 0
            for value, group in groups:
                if reach + value < threshold - margin:
                    if held_before is None:
                        break
                    # Too weak to bring documents in; still add to those already held.
                    seen = group - group.difference(acc) if held_before else ()
                    for doc_id in seen:
                        acc[doc_id] += value
                    continue
                fresh = group.difference(acc) if acc else group
                if held_before:
                    seen = group - fresh if len(fresh) < len(group) else ()
                    for doc_id in seen:
                        acc[doc_id] += value
                if fresh:
                    acc.update(dict.fromkeys(fresh, base + value))
                    if i == 0:
                        # The first term's partial scores are exactly base + value, and
                        # groups come best first: the k-th held is the k-th best so far.
                        added += len(fresh)
                        if added >= k:
                            threshold = max(threshold, base + value)
                            margin = 1e-9 * max(1.0, abs(threshold))
        if len(acc) <= k:
            return acc
        cut = heapq.nlargest(k, acc.values())[-1]
        return {doc_id: score for doc_id, score in acc.items() if score >= cut}

    def scores(self, query_terms: list[str]) -> dict[str, float]:
        """BM25+ score of every document containing at least one query term.

        Equal to `rank_bm25.BM25Plus(corpus).get_scores(query_terms)` at those documents;
        every other document scores `base_score(query_terms)`. The returned dict is new.
        """
        n_docs = len(self._doc_len)
        df = self._df
        query_counts = Counter(term for term in query_terms if term in df)
        if not query_counts:
            return {}
        k1 = self.k1
        avgdl = self._total_len / n_docs
        # k1 * (1 - b + b * dl / avgdl) = length_a + length_b * dl
        length_a = k1 * (1.0 - self.b)
        length_b = k1 * self.b / avgdl
        # Rarest term first: its documents seed the accumulator, later terms mostly add.
        ordered = sorted(query_counts, key=df.__getitem__)
        idfs = [math.log((n_docs + 1) / df[term]) for term in ordered]
        base = self.delta * sum(
            query_counts[term] * idf for term, idf in zip(ordered, idfs, strict=True)
        )
        acc: dict[str, float] = {}
        for term, idf in zip(ordered, idfs, strict=True):
            weight = query_counts[term] * idf * (k1 + 1.0)
            for (tf, length), group in self._postings[term].items():
                value = weight * tf / (length_a + length_b * length + tf)
                seen = group & acc.keys() if acc else ()
                if seen:
                    for doc_id in seen:
                        acc[doc_id] += value
                    acc.update(dict.fromkeys(group - seen, base + value))
                else:
                    acc.update(dict.fromkeys(group, base + value))
        return acc


def _first(pair: tuple[float, set[str]]) -> float:
    return pair[0]
