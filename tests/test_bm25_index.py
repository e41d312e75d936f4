"""The incremental BM25+ index scores exactly like rank-bm25's BM25Plus, after any edits."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Plus

from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import ScopeItemStore, indexed_text
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.text.terms import terms, terms_joined

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
def replay(
    operations: list[tuple[str, str, list[str]]],
    index: BM25Index,
    corpus: dict[str, list[str]],
    *,
    check_membership: bool = False,
) -> None:
    """Apply adds/removes to the index and to a plain dict corpus, in step."""
    for kind, doc_id, doc in operations:
        if kind == "add":
            index.add(doc_id, doc)
            corpus.pop(doc_id, None)
            corpus[doc_id] = doc
        else:
            assert index.remove(doc_id) == (doc_id in corpus)
            corpus.pop(doc_id, None)
        if check_membership:
            assert (doc_id in index) == (doc_id in corpus)


@given(st.lists(OPERATION, max_size=40), st.lists(WORDS, min_size=1, max_size=6))
def test_scores_equal_rank_bm25_plus_after_adds_removes_and_replacements(
    operations: list[tuple[str, str, list[str]]], query: list[str]
) -> None:
    index = BM25Index()
    corpus: dict[str, list[str]] = {}
    replay(operations, index, corpus, check_membership=True)
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


# ------------------------------------------- bulk builds, merges and the base segment


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(IDS, DOC), max_size=14),
    st.lists(OPERATION, max_size=30),
    st.lists(WORDS, min_size=1, max_size=6),
)
def test_a_bulk_built_index_scores_as_rank_bm25_plus_after_edits(
    bulk: list[tuple[str, list[str]]],
    operations: list[tuple[str, str, list[str]]],
    query: list[str],
) -> None:
    index = BM25Index()
    index.add_many(bulk)
    corpus: dict[str, list[str]] = {}
    for doc_id, doc in bulk:
        corpus.pop(doc_id, None)
        corpus[doc_id] = doc
    replay(operations, index, corpus)
    assert_matches_rank_bm25(index, corpus, query)
    for term in ["alpha", "beta", "absent"]:
        assert index.document_frequency(term) == sum(term in doc for doc in corpus.values())


def test_many_adds_removes_and_replacements_keep_scores_equal_to_rank_bm25() -> None:
    # Enough documents to merge the dynamic segment into the base several times and to
    # compact a base with many deleted documents, after a bulk load.
    rng = random.Random(11)
    vocabulary = [f"w{i}" for i in range(40)] + ["name"] * 20

    def doc() -> list[str]:
        return rng.choices(vocabulary, k=rng.randint(0, 12))

    index = BM25Index()
    corpus = {f"load{i}": doc() for i in range(1500)}
    index.add_many(corpus.items())
    for step in range(3000):
        doc_id = f"d{rng.randrange(2500)}" if step % 3 else f"load{rng.randrange(1500)}"
        if rng.random() < 0.3:
            assert index.remove(doc_id) == (doc_id in corpus)
            corpus.pop(doc_id, None)
        else:
            terms_of_doc = doc()
            index.add(doc_id, terms_of_doc)
            corpus.pop(doc_id, None)
            corpus[doc_id] = terms_of_doc
    for doc_id in list(corpus)[: len(corpus) * 2 // 3]:
        assert index.remove(doc_id)
        del corpus[doc_id]
    for query in (["name"], ["w1", "name", "w7"], ["w3", "w3", "absent"], ["w39"]):
        assert_matches_rank_bm25(index, corpus, query)
        everything = index.scores(query)
        best = index.top(query, 10)
        cut = sorted(everything.values(), reverse=True)[9]
        assert best == {doc_id: s for doc_id, s in everything.items() if s >= cut}


def test_add_joined_equals_add_many_and_rejects_a_count_mismatch() -> None:
    docs = {"a": ["x", "y", "x"], "b": [], "c": ["y", "z"]}
    joined = [term for terms_of_doc in docs.values() for term in [*terms_of_doc, "\x01"]]
    by_chunks = BM25Index()
    by_chunks.add_joined([(["a", "b"], joined[:5]), (["c"], joined[5:])], "\x01")
    by_pairs = BM25Index()
    by_pairs.add_many(docs.items())
    assert len(by_chunks) == 3
    for query in (["x"], ["y", "z"], ["x", "z", "q"]):
        assert by_chunks.scores(query) == by_pairs.scores(query)
    with pytest.raises(ValueError, match="2 ids but 1 documents"):
        BM25Index().add_joined([(["a", "b"], ["x", "\x01"])], "\x01")


def test_a_scope_load_indexes_like_adding_each_item(tmp_path: Path) -> None:
    paths = ScopePaths(tmp_path, "telegram:1")
    writer = ScopeItemStore(paths, index=BM25Index(), terms=terms)
    texts = [
        "Caroline went to the LGBTQ support group",
        "Melanie paints sunrises; Caroline's café is on Rue d'Été",
        "pip install failed with ModuleNotFoundError",
        "我喜欢猫 and Привет мир",
        "Caroline and Melanie planned a trip to Kyoto",
    ]
    stored = writer.add(
        [
            MemoryItem(
                id=f"i{n}",
                layer=Layer.EPISODIC,
                type=ItemType.TASK_STATE,
                title=text,
                content=text,
                scope="telegram:1",
                created_at=1_700_000_000.0 + n,
                updated_at=1_700_000_000.0 + n,
                tags=["speaker:caroline"] if n % 2 else [],
            )
            for n, text in enumerate(texts)
        ]
    )
    writer.update(stored[2].id, content="pip install worked after a cache clear")
    writer.forget(stored[3].id)

    loaded_index = BM25Index()
    ScopeItemStore(paths, index=loaded_index, terms=terms, terms_joined=terms_joined).load()
    plain = ScopeItemStore(paths)
    plain.load()
    one_by_one = BM25Index()
    for item in plain.items.values():
        one_by_one.add(item.id, terms(indexed_text(item)))
    assert len(loaded_index) == len(one_by_one) == 4
    for question in ("Where did Caroline go?", "pip install", "猫", "café kyoto trip"):
        assert loaded_index.scores(terms(question)) == one_by_one.scores(terms(question))
