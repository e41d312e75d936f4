"""A BM25+ index over memory items: a columnar base segment plus a small dynamic one.

Why our own index instead of rank-bm25: rank-bm25 0.2.2 keeps no inverted
index, so every query scans every document (get_scores took 146 ms at 100k short
documents) and every add means a full rebuild (0.95 s at 100k). A bot adds an item on
every turn and queries on every turn.

Why BM25+ and not Okapi BM25: `BM25Okapi` floors idf so that on a 2-document corpus every
score is 0, and a new chat has exactly such a tiny corpus. BM25+ (Lv & Zhai 2011) uses
idf = ln((N + 1) / df), which is positive for every term in the corpus, plus a lower bound
`delta` per matching term, so scores stay positive and ordered on any corpus size.

The scores are `rank_bm25.BM25Plus(corpus, k1=1.5, b=0.75, delta=1).get_scores` (equal
within float rounding, 1e-9 relative) for every document that contains a query term:

    score(D, Q) = sum over q in Q (repeats counted) of
                  idf(q) * (delta + tf * (k1 + 1) / (k1 * (1 - b + b * |D| / avgdl) + tf))
    with tf the frequency of q in D and avgdl the mean document length.

BM25+ gives `idf(q) * delta` for a query term even to a document that lacks it, so every
document gets the same constant `base_score(Q) = delta * sum of idf(q)` over the query
terms present in the corpus. That constant is included in `scores()` (so the numbers equal
rank-bm25's), it is exactly the score of any document not in `scores()`' result, and it
does not change the ranking; `memory.pack.build` subtracts it before normalizing relevance.
`scores`, `top` and `score_documents` compute a document's score with the same float
operations in the same order, so the three agree bit for bit.

Why numpy (a dependency of the bot since this index): a
speaker's name is on about half of a group chat's items, so a common query term hits
~50,000 documents at 100k items, and the former pure-Python index (sets of ids per
(tf, length) group, a term dict per document) built a 50k-entry dict for such a query.
Measured with `mnemobot bench memory --items 100000` (2 cores), before -> after: pack
p95 68 -> 10 ms, index build at load 2.4 -> ~0.3 s (and tokenizing 5.3 -> ~0.5 s with
the bulk `memory.text.terms.terms_joined`), peak RSS of the whole process 480 -> ~280 MB
(the per-document dicts and small sets were most of it); numpy's import costs ~0.13 s.
Layout:

- the base segment is immutable and columnar, built in bulk (`add_many`, or `add_joined`
  at a scope load): per term a CSR slice of document positions and term frequencies
  (int32), per document its length and a CSR slice of its term ids (to remove it and to
  score single documents), and a deleted mask. A query scores each term's whole posting
  slice with a few vectorized operations into a dense float64 array, and `np.partition`
  finds the k-th best score;
- documents added later go to a small dynamic segment of dicts (an add touches only the
  document's own terms, ~10 us); `remove` marks a base document deleted or drops a dynamic
  one; re-adding an id replaces it. Past `_merge_threshold()` dynamic documents (512 to
  2048) or a quarter of the base deleted, both are merged into a new base (vectorized,
  ~0.1 s at 100k items, once per hundreds of turns: amortized, not per add);
- N, avgdl and df are kept over the live documents of both segments, so the scores are
  those of BM25+ over the current corpus whatever the segments hold.

Kept on disk: a big scope saves the base segment beside its items (`to_arrays`,
`memory.store.index_file`) and maps it at the next load (`load_arrays`; the ids then stay
a numpy column, `memory.store.id_column`). Why arrays of our own rather than SQLite
(`python -m mnemobot_tooling.bench.index_backends`: the same terms of the same items,
`bench memory`'s questions, the best 256; 2 shared cores, load average about 3), query
p50 / p95:

| | 100k items | 1M items | open | file at 1M |
|---|---|---|---|---|
| these arrays, mapped | 3.4 / 6.5 ms | 31 / 67 ms | 9 / 76 ms | 435 MB |
| SQLite FTS5, our terms as tokens | 124 / 403 ms | 1030 / 2353 ms | 1 ms | 217 MB |
| SQLite table of our terms, BM25+ in SQL | 59 / 194 ms | 615 / 2016 ms | 17 / 91 ms | 658 MB |

FTS5 ranks by its own `bm25()` (Okapi BM25 with another idf: not these scores); the
terms table gives these very scores but sums a common term's half a million postings in
SQL. The file is bigger than FTS5's, but a load reads only the pages queries touch.

Not safe for concurrent use from several threads (neither was the former index): the
memory service calls it from one thread.

The module is longer than most (about 680 lines): both segments, their merge, the
scoring that must equal rank-bm25's over them and their arrays on disk are one data
structure.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice

import numpy as np
import numpy.typing as npt

from mnemobot.memory.store.id_column import IdColumn

# The dynamic segment is merged into the base past this many documents, or past
# 1/_MERGE_SHARE of the base: small enough that a query's pure-Python loop over it stays
# well under a millisecond, large enough that merges (O(base)) stay rare.
_MERGE_MIN = 512
_MERGE_MAX = 2048
_MERGE_SHARE = 64

_EMPTY_INT = np.zeros(0, dtype=np.int32)

# Ties `top` keeps past k: at least MIN_TIES, at most TIES_FACTOR times k (see `max_ties`).
TIES_FACTOR = 8
MIN_TIES = 1_024


def max_ties(k: int) -> int:
    """Most documents `BM25Index.top` returns for `k`, ties included. Found live: 300,000
    imported messages alike ("message number N about things") all tied, and the pack
    read every one for a value that changed: 29 s for one question. The bound leaves
    every tie of a real chat (the pools' k are 24 to a few hundred)."""
    return max(TIES_FACTOR * k, k + MIN_TIES)


# Documents in doc-major form, to build into the base: (ids, distinct terms per document,
# term ids, term frequencies, lengths), the term entries of each document contiguous.
_DocParts = tuple[
    list[str],
    npt.NDArray[np.int64],
    npt.NDArray[np.int32],
    npt.NDArray[np.int32],
    npt.NDArray[np.int64],
]
# Documents turned into arrays at a time by `add_many` (bounds its transient memory).
_BUILD_CHUNK = 16_384
# Ends a document's terms in `add_many`'s joined chunks; no term contains a control character.
_END = "\x01"


@dataclass(slots=True)
class BM25Arrays:
    """A `BM25Index` with everything in its base segment: the arrays `load_arrays` takes.

    `ids[i]` is document i; `vocabulary[t]` is term t, `df[t]` its document frequency; per
    document its CSR slice `doc_ptr[i]:doc_ptr[i + 1]` of `doc_terms` and `doc_tfs`, its
    length `lengths[i]`; per term its slice `term_ptr[t]:term_ptr[t + 1]` of `term_docs`
    and `term_tfs`; `total_len` is the sum of the lengths.
    """

    ids: list[str] | IdColumn
    vocabulary: list[str]
    df: npt.NDArray[np.int64]
    doc_ptr: npt.NDArray[np.int64]
    doc_terms: npt.NDArray[np.int32]
    doc_tfs: npt.NDArray[np.int32]
    term_ptr: npt.NDArray[np.int64]
    term_docs: npt.NDArray[np.int32]
    term_tfs: npt.NDArray[np.int32]
    lengths: npt.NDArray[np.float64]
    total_len: int


class _TermIds(dict[str, int]):
    """A copy of a vocabulary that numbers each unseen term on lookup; `end` gives -1.

    `end` is a key (found in C, not through `__missing__` once per document), right after
    the vocabulary's terms: the new terms follow it, numbered from `len(vocabulary)`.
    """

    def __init__(self, vocabulary: dict[str, int], end: str) -> None:
        super().__init__(vocabulary)
        self[end] = -1

    def __missing__(self, term: str) -> int:
        term_id = self[term] = len(self) - 1
        return term_id


class BM25Index:
    """BM25+ index; document ids are the memory item ids."""

    __slots__ = (
        "_base_alive",
        "_base_deleted",
        "_base_doc_ptr",
        "_base_doc_terms",
        "_base_doc_tfs",
        "_base_ids",
        "_base_len",
        "_base_pos",
        "_base_term_docs",
        "_base_term_ptr",
        "_base_term_tfs",
        "_df",
        "_dyn_len",
        "_dyn_postings",
        "_dyn_terms",
        "_total_len",
        "_vocab",
        "b",
        "delta",
        "k1",
    )
    # Each base document's length, as floats: the scoring divides by it.
    _base_len: npt.NDArray[np.float64]

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, delta: float = 1.0) -> None:
        self.k1 = k1
        self.b = b
        self.delta = delta
        # term -> term id, and per term id its document frequency over live documents.
        self._vocab: dict[str, int] = {}
        self._df: list[int] = []
        self._total_len = 0
        # Dynamic segment: doc_id -> {term id: tf}, doc_id -> length, term id -> {doc_id: tf}.
        self._dyn_terms: dict[str, dict[int, int]] = {}
        self._dyn_len: dict[str, int] = {}
        self._dyn_postings: dict[int, dict[str, int]] = {}
        self._set_base([], {}, np.zeros(1, dtype=np.int64), _EMPTY_INT, _EMPTY_INT)

    # ------------------------------------------------------------------ size

    def __len__(self) -> int:
        return len(self._base_ids) - self._base_deleted + len(self._dyn_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._dyn_len or (
            isinstance(doc_id, str) and self._base_position(doc_id) is not None
        )

    def doc_ids(self) -> list[str]:
        live = np.flatnonzero(self._base_alive)
        if isinstance(self._base_ids, IdColumn):
            return [*self._base_ids.take(live), *self._dyn_len]
        return [*map(self._base_ids.__getitem__, live.tolist()), *self._dyn_len]

    # --------------------------------------------------------------- changes

    def add(self, doc_id: str, terms: list[str]) -> None:
        """Index `doc_id` with its terms (see `memory.text.terms.terms`); re-adding replaces it."""
        self.remove(doc_id)
        frequencies = self._term_frequencies(terms)
        self._dyn_terms[doc_id] = frequencies
        self._dyn_len[doc_id] = len(terms)
        self._total_len += len(terms)
        df = self._df
        postings = self._dyn_postings
        for term_id, tf in frequencies.items():
            df[term_id] += 1
            found = postings.get(term_id)
            if found is None:
                postings[term_id] = {doc_id: tf}
            else:
                found[doc_id] = tf
        if len(self._dyn_len) >= self._merge_threshold():
            self._merge()

    def add_many(self, pairs: Iterable[tuple[str, list[str]]]) -> None:
        """Index many documents at once: one vectorized build, no per-add work.

        Same result as `add` for each pair in order (a repeated id keeps its last terms).
        Terms are never "\x01" (no term holds a control character; see `text_terms`).
        """

        def chunks() -> Iterator[tuple[list[str], Iterable[str]]]:
            iterator = iter(pairs)
            while chunk := list(islice(iterator, _BUILD_CHUNK)):
                joined: list[str] = []
                for _doc_id, terms in chunk:
                    joined += terms
                    joined.append(_END)
                yield [doc_id for doc_id, _terms in chunk], joined

        self.add_joined(chunks(), _END)

    def add_joined(self, chunks: Iterable[tuple[list[str], Iterable[str]]], end: str) -> None:
        """`add_many` for documents given in chunks of (ids, their terms joined).

        A chunk's terms are those of each of its documents in turn, each document's
        followed by `end` (as `memory.text.terms.terms_joined` gives them); `end` is no
        term. This is how a scope load builds the index: no list per document at all.
        """
        # Unseen terms get their ids during the one map over the terms (see _TermIds).
        lookup = _TermIds(self._vocab, end)
        parts: list[_DocParts] = []
        for ids, joined in chunks:
            if len(self):
                for doc_id in ids:
                    self.remove(doc_id)
            codes = np.fromiter(map(lookup.__getitem__, joined), dtype=np.int64)
            ends = codes < 0
            end_at = np.flatnonzero(ends)
            if len(end_at) != len(ids):
                raise ValueError(f"{len(ids)} ids but {len(end_at)} documents of terms")
            lengths = np.diff(end_at, prepend=-1) - 1
            # Document of each term: the number of ends before it.
            docs: npt.NDArray[np.intp] = np.cumsum(ends) - ends
            keep = ~ends
            n_terms = len(lookup) - 1
            # One (document, term) pair per distinct term of a document, with its count.
            keys, tfs = np.unique(docs[keep] * n_terms + codes[keep], return_counts=True)
            del codes, ends, docs, keep
            pair_docs = keys // n_terms
            parts.append(
                (
                    list(ids),
                    np.bincount(pair_docs, minlength=len(ids)),
                    (keys - pair_docs * n_terms).astype(np.int32),
                    tfs.astype(np.int32),
                    lengths,
                )
            )
        new_terms = list(islice(lookup, len(self._vocab) + 1, None))
        self._vocab.update(zip(new_terms, range(len(self._vocab), len(lookup) - 1), strict=True))
        self._df.extend([0] * len(new_terms))
        if parts:
            self._merge(parts)

    def remove(self, doc_id: str) -> bool:
        """Forget `doc_id`; returns whether it was indexed."""
        df = self._df
        frequencies = self._dyn_terms.pop(doc_id, None)
        if frequencies is not None:
            self._total_len -= self._dyn_len.pop(doc_id)
            postings = self._dyn_postings
            for term_id in frequencies:
                df[term_id] -= 1
                found = postings[term_id]
                del found[doc_id]
                if not found:
                    del postings[term_id]
            return True
        position = self._base_position(doc_id)
        if position is None:
            return False
        self._base_alive[position] = False
        self._base_deleted += 1
        self._total_len -= int(self._base_len[position])
        start, end = self._base_doc_ptr[position], self._base_doc_ptr[position + 1]
        for term_id in self._base_doc_terms[start:end].tolist():
            df[term_id] -= 1
        if self._base_deleted * 4 > len(self._base_ids) and self._base_deleted >= _MERGE_MIN:
            self._merge()
        return True

    def clear(self) -> None:
        """Forget every document (what `remove` of each would do, at once)."""
        self.__init__(k1=self.k1, b=self.b, delta=self.delta)  # type: ignore[misc]

    # ----------------------------------------------------------- persistence

    def to_arrays(self) -> BM25Arrays:
        """The whole index as arrays (the dynamic segment and deletions merged into the
        base first), for `memory.store.index_file` to write beside the items."""
        if self._dyn_len or self._base_deleted:
            self._merge()
        return BM25Arrays(
            ids=self._base_ids,
            vocabulary=list(self._vocab),
            df=np.asarray(self._df, dtype=np.int64),
            doc_ptr=self._base_doc_ptr,
            doc_terms=self._base_doc_terms,
            doc_tfs=self._base_doc_tfs,
            term_ptr=self._base_term_ptr,
            term_docs=self._base_term_docs,
            term_tfs=self._base_term_tfs,
            lengths=self._base_len,
            total_len=self._total_len,
        )

    def load_arrays(self, arrays: BM25Arrays) -> None:
        """Become the index `arrays` hold (what `to_arrays` gave, possibly read back from
        disk, memory-mapped: they are only read, never written in place)."""
        ids = arrays.ids
        positions = (
            ids if isinstance(ids, IdColumn) else dict(zip(ids, range(len(ids)), strict=True))
        )
        self._vocab = dict(zip(arrays.vocabulary, range(len(arrays.vocabulary)), strict=True))
        self._df = arrays.df.tolist()
        self._total_len = arrays.total_len
        self._dyn_terms = {}
        self._dyn_len = {}
        self._dyn_postings = {}
        self._set_base(
            ids,
            positions,
            arrays.doc_ptr,
            arrays.doc_terms,
            arrays.doc_tfs,
        )
        self._base_len = arrays.lengths
        self._base_term_ptr = arrays.term_ptr
        self._base_term_docs = arrays.term_docs
        self._base_term_tfs = arrays.term_tfs

    # ------------------------------------------------------------ statistics

    def document_frequency(self, term: str) -> int:
        term_id = self._vocab.get(term)
        return 0 if term_id is None else self._df[term_id]

    def idf(self, term: str) -> float:
        """BM25+ idf, ln((N + 1) / df); 0 for a term no document has (as rank-bm25)."""
        df = self.document_frequency(term)
        return math.log((len(self) + 1) / df) if df else 0.0

    def base_score(self, query_terms: list[str]) -> float:
        """The score BM25+ gives every document, even one with none of the query terms."""
        return self.delta * sum(self.idf(term) for term in query_terms)

    # --------------------------------------------------------------- queries

    def scores(self, query_terms: list[str]) -> dict[str, float]:
        """BM25+ score of every document containing at least one query term.

        Equal to `rank_bm25.BM25Plus(corpus).get_scores(query_terms)` at those documents;
        every other document scores `base_score(query_terms)`. The returned dict is new.
        """
        query = self._query(query_terms)
        if query is None:
            return {}
        base = query[1]
        positions, sums = self._base_hits(query)
        found = dict(
            zip(
                map(self._base_ids.__getitem__, positions.tolist()),
                (base + sums).tolist(),
                strict=True,
            )
        )
        found.update(self._dynamic_hits(query))
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
        query = self._query(query_terms)
        if query is None:
            return {}
        positions, sums = self._base_hits(query)
        totals = query[1] + sums
        if len(totals) > k:
            # The base's k-th best; the overall k-th best (with dynamic documents) is >= it,
            # so every document that can make the cut is among these.
            cut = np.partition(totals, len(totals) - k)[len(totals) - k]
            keep = totals >= cut
            if np.count_nonzero(keep) > max_ties(k):
                # Ties at the cut past the bound: every better one stays, and of the tied
                # the newest written (the highest positions).
                better = np.flatnonzero(totals > cut)
                tied = np.flatnonzero(totals == cut)
                room = max(max_ties(k) - len(better), k - len(better), 0)
                newest_tied = (
                    tied[np.argsort(positions[tied], kind="stable")[-room:]] if room else tied[:0]
                )
                keep = np.zeros(len(totals), dtype=bool)
                keep[better] = True
                keep[newest_tied] = True
            positions, totals = positions[keep], totals[keep]
        found = dict(
            zip(
                map(self._base_ids.__getitem__, positions.tolist()),
                totals.tolist(),
                strict=True,
            )
        )
        found.update(self._dynamic_hits(query))
        if len(found) <= k:
            return found
        cut_value = heapq.nlargest(k, found.values())[-1]
        return {doc_id: score for doc_id, score in found.items() if score >= cut_value}

    def score_documents(self, query_terms: list[str], doc_ids: list[str]) -> dict[str, float]:
        """`scores(query_terms)` at just `doc_ids` (those containing a query term)."""
        query = self._query(query_terms)
        if query is None:
            return {}
        weights, base, length_a, length_b = query
        found: dict[str, float] = {}
        for doc_id in doc_ids:
            frequencies = self._dyn_terms.get(doc_id)
            if frequencies is not None:
                length = self._dyn_len[doc_id]
            else:
                position = self._base_position(doc_id)
                if position is None:
                    continue
                start, end = self._base_doc_ptr[position], self._base_doc_ptr[position + 1]
                frequencies = dict(
                    zip(
                        self._base_doc_terms[start:end].tolist(),
                        self._base_doc_tfs[start:end].tolist(),
                        strict=True,
                    )
                )
                length = int(self._base_len[position])
            total = 0.0
            for term_id, weight in weights:
                tf = frequencies.get(term_id)
                if tf:
                    total += weight * tf / (length_a + length_b * length + tf)
            if total:
                found[doc_id] = base + total
        return found

    def score_terms(self, query_terms: list[str], doc_terms: list[str]) -> float:
        """What `scores(query_terms)` would give a document of `doc_terms` (a part of one:
        the index's counts stay as they are), 0.0 without a query term in it."""
        query = self._query(query_terms)
        if query is None or not doc_terms:
            return 0.0
        weights, base, length_a, length_b = query
        vocab = self._vocab
        frequencies = Counter(term_id for term_id in map(vocab.get, doc_terms))
        length = len(doc_terms)
        total = 0.0
        for term_id, weight in weights:
            tf = frequencies.get(term_id)
            if tf:
                total += weight * tf / (length_a + length_b * length + tf)
        return base + total if total else 0.0

    # -------------------------------------------------------------- internals

    def _query(
        self, query_terms: list[str]
    ) -> tuple[list[tuple[int, float]], float, float, float] | None:
        """([(term id, weight)] rarest first, base score, length_a, length_b), or None.

        A term's contribution to a document is `weight * tf / (length_a + length_b * dl + tf)`;
        a document's score is base + (the sum of its terms' contributions, in this order).
        """
        vocab = self._vocab
        df = self._df
        query_counts = Counter(
            term_id
            for term_id in map(vocab.get, query_terms)
            if term_id is not None and df[term_id] > 0
        )
        if not query_counts:
            return None
        n_docs = len(self)
        k1 = self.k1
        ordered = sorted(query_counts, key=df.__getitem__)
        idfs = [math.log((n_docs + 1) / df[term_id]) for term_id in ordered]
        base = self.delta * sum(
            query_counts[term_id] * idf for term_id, idf in zip(ordered, idfs, strict=True)
        )
        weights = [
            (term_id, query_counts[term_id] * idf * (k1 + 1.0))
            for term_id, idf in zip(ordered, idfs, strict=True)
        ]
        avgdl = self._total_len / n_docs
        return weights, base, k1 * (1.0 - self.b), k1 * self.b / avgdl

    def _base_hits(
        self, query: tuple[list[tuple[int, float]], float, float, float]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(positions, summed contributions) of the live base documents a query term hits."""
        weights, _base, length_a, length_b = query
        term_ptr = self._base_term_ptr
        n_terms = len(term_ptr) - 1
        sums: npt.NDArray[np.float64] | None = None
        for term_id, weight in weights:
            if term_id >= n_terms:
                continue
            start, end = term_ptr[term_id], term_ptr[term_id + 1]
            if start == end:
                continue
            docs = self._base_term_docs[start:end]
            tfs = self._base_term_tfs[start:end]
            # The same operations, in the same order, as score_documents' scalar ones.
            value = weight * tfs
            value /= length_a + length_b * self._base_len[docs] + tfs
            if sums is None:
                sums = np.zeros(len(self._base_ids), dtype=np.float64)
            sums[docs] += value
        if sums is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if self._base_deleted:
            sums[~self._base_alive] = 0.0
        # Every contribution is > 0 (idf > 0, tf > 0), so a hit is a nonzero sum.
        positions = np.flatnonzero(sums)
        return positions, sums[positions]

    def _dynamic_hits(
        self, query: tuple[list[tuple[int, float]], float, float, float]
    ) -> dict[str, float]:
        weights, base, length_a, length_b = query
        postings = self._dyn_postings
        doc_len = self._dyn_len
        sums: dict[str, float] = {}
        for term_id, weight in weights:
            found = postings.get(term_id)
            if not found:
                continue
            for doc_id, tf in found.items():
                value = weight * tf / (length_a + length_b * doc_len[doc_id] + tf)
                sums[doc_id] = sums.get(doc_id, 0.0) + value
        return {doc_id: base + total for doc_id, total in sums.items()}

    def _term_frequencies(self, terms: list[str]) -> dict[int, int]:
        vocab = self._vocab
        frequencies: dict[int, int] = {}
        for term, tf in Counter(terms).items():
            term_id = vocab.get(term)
            if term_id is None:
                term_id = vocab[term] = len(vocab)
                self._df.append(0)
            frequencies[term_id] = tf
        return frequencies

    def _base_position(self, doc_id: str) -> int | None:
        """Where `doc_id` is in the base, if it is there and not removed."""
        position = self._base_pos.get(doc_id)
        if position is None or not self._base_alive[position]:
            return None
        return position

    def _merge_threshold(self) -> int:
        return max(_MERGE_MIN, min(_MERGE_MAX, len(self._base_ids) // _MERGE_SHARE))

    def _merge(self, extra: list[_DocParts] | None = None) -> None:
        """Rebuild the base from its live documents, the dynamic ones and `extra`.

        `extra` are documents not indexed yet; their df and lengths are counted here.
        """
        parts: list[_DocParts] = []
        # Live base documents, straight from the doc-major arrays.
        alive = self._base_alive
        if len(alive):
            live = np.flatnonzero(alive)
            counts = np.diff(self._base_doc_ptr)
            entry_alive = np.repeat(alive, counts)
            parts.append(
                (
                    self._base_ids.take(live)
                    if isinstance(self._base_ids, IdColumn)
                    else [self._base_ids[i] for i in live.tolist()],
                    counts[live],
                    self._base_doc_terms[entry_alive],
                    self._base_doc_tfs[entry_alive],
                    self._base_len[live].astype(np.int64),
                )
            )
        # The dynamic documents (few): their term dicts as arrays.
        if self._dyn_terms:
            frequencies = list(self._dyn_terms.values())
            sizes = np.fromiter(map(len, frequencies), dtype=np.int64, count=len(frequencies))
            size = int(sizes.sum())
            parts.append(
                (
                    list(self._dyn_terms),
                    sizes,
                    np.fromiter(chain.from_iterable(frequencies), dtype=np.int32, count=size),
                    np.fromiter(
                        chain.from_iterable(f.values() for f in frequencies),
                        dtype=np.int32,
                        count=size,
                    ),
                    np.fromiter(self._dyn_len.values(), dtype=np.int64, count=len(sizes)),
                )
            )
            self._dyn_terms = {}
            self._dyn_len = {}
            self._dyn_postings = {}
        if extra:
            df = self._df
            for _ids, _sizes, term_ids, _tfs, lengths in extra:
                counted = np.bincount(term_ids, minlength=len(df))
                for term_id in np.flatnonzero(counted).tolist():
                    df[term_id] += int(counted[term_id])
                self._total_len += int(lengths.sum())
            parts.extend(extra)
            extra.clear()

        ids: list[str] = list(chain.from_iterable(part[0] for part in parts))
        sizes = np.concatenate([part[1] for part in parts]) if parts else np.zeros(0, np.int64)
        doc_ptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(sizes, out=doc_ptr[1:])
        doc_terms = np.concatenate([part[2] for part in parts]) if parts else _EMPTY_INT
        doc_tfs = np.concatenate([part[3] for part in parts]) if parts else _EMPTY_INT
        lengths = np.concatenate([part[4] for part in parts]) if parts else np.zeros(0, np.int64)
        del parts
        # A repeated id (add_many given it twice) keeps its last document.
        positions = dict(zip(ids, range(len(ids)), strict=True))
        self._set_base(ids, positions, doc_ptr, doc_terms, doc_tfs)
        self._base_len = lengths.astype(np.float64)
        if len(positions) < len(ids):
            for position, doc_id in enumerate(ids):
                if positions[doc_id] != position:
                    self._base_alive[position] = False
                    self._base_deleted += 1
                    start, end = doc_ptr[position], doc_ptr[position + 1]
                    for term_id in doc_terms[start:end].tolist():
                        self._df[term_id] -= 1
                    self._total_len -= int(lengths[position])
        self._build_term_major(sizes)

    def _set_base(
        self,
        ids: list[str] | IdColumn,
        positions: dict[str, int] | IdColumn,
        doc_ptr: npt.NDArray[np.int64],
        doc_terms: npt.NDArray[np.int32],
        doc_tfs: npt.NDArray[np.int32],
    ) -> None:
        self._base_ids = ids
        self._base_pos = positions
        self._base_alive = np.ones(len(ids), dtype=bool)
        self._base_deleted = 0
        self._base_doc_ptr = doc_ptr
        self._base_doc_terms = doc_terms
        self._base_doc_tfs = doc_tfs
        self._base_len = np.zeros(len(ids), dtype=np.float64)
        self._base_term_ptr = np.zeros(1, dtype=np.int64)
        self._base_term_docs = _EMPTY_INT
        self._base_term_tfs = _EMPTY_INT

    def _build_term_major(self, sizes: npt.NDArray[np.int64]) -> None:
        """The term-major copy of the doc-major arrays: each term's documents in order."""
        terms = self._base_doc_terms
        n_terms = len(self._vocab)
        # A stable sort keeps each term's documents in position order; on 16-bit keys
        # numpy's stable sort is a radix sort, O(n) (a vocabulary rarely passes 65,536).
        keys = terms.astype(np.uint16) if n_terms <= 1 << 16 else terms
        order = np.argsort(keys, kind="stable")
        del keys
        doc_of = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
        self._base_term_docs = doc_of[order]
        del doc_of
        self._base_term_tfs = self._base_doc_tfs[order]
        del order
        term_ptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=n_terms), out=term_ptr[1:])
        self._base_term_ptr = term_ptr
