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
"""

from __future__ import annotations

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
