"""The incremental BM25+ index scores exactly like rank-bm25's BM25Plus, after any edits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Plus

from memory.bm25 import BM25Index
from memory.text_terms import terms

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"])
DOC = st.lists(WORDS, max_size=7)
IDS = st.sampled_from([f"d{i}" for i in range(12)])
OPERATION = st.one_of(
    st.tuples(st.just("add"), IDS, DOC),
    st.tuples(st.just("remove"), IDS, st.just([])),
)


def assert_matches_rank_bm25(index: BM25Index, corpus: dict[str, list[str]], query: list[str]):
    ids = list(corpus)
    assert len(index) == len(ids)
    if not ids or not any(corpus.values()):
        # rank-bm25 divides by zero here; we answer "no hits".
        assert index.scores(query) == {}
        return
    reference = BM25Plus([corpus[i] for i in ids]).get_scores(query)
    ours = index.scores(query)
    base = index.base_score(query)
    for position, doc_id in enumerate(ids):
        expected = float(reference[position])
        if any(term in corpus[doc_id] for term in query):
            assert ours[doc_id] == pytest.approx(expected, rel=1e-9, abs=1e-12)
            assert ours[doc_id] > 0
        else:
            assert doc_id not in ours
            # The constant BM25+ gives every document is what a non-hit scores.
            assert base == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.lists(OPERATION, max_size=40), st.lists(WORDS, min_size=1, max_size=6))
def test_scores_equal_rank_bm25_plus_after_adds_removes_and_replacements(
    operations: list[tuple[str, str, list[str]]], query: list[str]
) -> None:
    index = BM25Index()
    corpus: dict[str, list[str]] = {}
    for kind, doc_id, doc in operations:
        if kind == "add":
            index.add(doc_id, doc)
            corpus.pop(doc_id, None)
            corpus[doc_id] = doc
        else:
            assert index.remove(doc_id) == (doc_id in corpus)
            corpus.pop(doc_id, None)
        assert (doc_id in index) == (doc_id in corpus)
    assert_matches_rank_bm25(index, corpus, query)


@settings(max_examples=200, deadline=None)
@given(st.lists(DOC, min_size=1, max_size=2), st.lists(WORDS, min_size=1, max_size=6))
def test_one_and_two_document_corpora_match_and_stay_positive(
    docs: list[list[str]], query: list[str]
) -> None:
    index = BM25Index()
    corpus = {f"d{i}": doc for i, doc in enumerate(docs)}
    for doc_id, doc in corpus.items():
        index.add(doc_id, doc)
    assert_matches_rank_bm25(index, corpus, query)


def test_removing_everything_leaves_an_empty_index() -> None:
    index = BM25Index()
    index.add("a", ["x", "y", "x"])
    index.add("b", ["y"])
    index.remove("a")
    index.remove("b")
    assert len(index) == 0
    assert index.scores(["x", "y"]) == {}
    assert index.document_frequency("x") == 0
    assert not index.remove("a")


def test_two_item_chat_ranks_the_relevant_item_first() -> None:
    # On two documents BM25Okapi's idf floor scores everything 0; BM25+ must not.
    index = BM25Index()
    index.add("pets", terms("My dog is called Rex and he loves running on the beach"))
    index.add("work", terms("I work as a nurse at the city hospital"))
    scores = index.scores(terms("What is the name of my dog?"))
    assert set(scores) == {"pets"}
    assert scores["pets"] > index.base_score(terms("What is the name of my dog?")) > 0
    both = index.scores(terms("does the dog run at the hospital"))
    assert both["pets"] > both["work"] > 0
    assert not math.isclose(both["pets"], both["work"])
