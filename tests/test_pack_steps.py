"""The MemoryPack's steps one by one: candidates, scores, selection, rendering.

Each step is a function of its inputs; these properties hold for any store and query
hypothesis makes of a small vocabulary (so queries match), whatever the budgets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.build import build_pack
from mnemobot.memory.pack.candidates import InContext, find_candidates, in_context, layer_top_k
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import Ranking
from mnemobot.memory.pack.render import render_pack
from mnemobot.memory.pack.selection import (
    MIN_ITEM_TOKENS,
    Coverage,
    fill_past_top_k,
    score_candidates,
    select_items,
)
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.turn_timeline import TurnTimeline
from mnemobot.memory.text.terms import search_terms, terms

WORDS = [
    "berlin",
    "paris",
    "hiking",
    "tea",
    "coffee",
    "deploy",
    "server",
    "crash",
    "fix",
    "sister",
    "cat",
    "work",
    "home",
    "dog",
]
START = 1_700_000_000.0
TOP_K = st.integers(0, 8)
# Limits that leave budget unused, for the fill past them.
SMALL_TOP_K = st.integers(1, 2)
SCOPE = "telegram:1"

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=60).map(" ".join)


@st.composite
def items(draw: st.DrawFn) -> MemoryItem:
    layer = draw(
        st.sampled_from([Layer.EPISODIC, Layer.EPISODIC, Layer.SEMANTIC, Layer.PROCEDURAL])
    )
    is_turn = layer is Layer.EPISODIC and draw(st.booleans())
    text = draw(words) + draw(st.sampled_from(["", "?"]))
    at = START + draw(st.integers(0, 30 * 24)) * 3600.0
    return MemoryItem(
        id="",
        layer=layer,
        type=ItemType.TURN if is_turn else draw(st.sampled_from(list(ItemType)[:-1])),
        title=text[:80],
        content=f"User: {text}\nAssistant: ok" if is_turn else text,
        scope=SCOPE,
        created_at=at,
        updated_at=at,
        references=[f"tg:{draw(st.integers(0, 9))}"] if draw(st.booleans()) else [],
        confidence=draw(st.floats(0, 1)),
        salience=draw(st.floats(0, 1)),
        superseded_by="x" if draw(st.integers(0, 9)) == 0 else None,
    )


@st.composite
def scopes(
    draw: st.DrawFn, min_items: int = 0
) -> tuple[dict[str, MemoryItem], BM25Index, TurnTimeline]:
    made = draw(st.lists(items(), min_size=min_items, max_size=60))
    store: dict[str, MemoryItem] = {}
    index = BM25Index()
    for number, item in enumerate(sorted(made, key=lambda i: i.created_at)):
        item.id = f"i{number:03d}"
        store[item.id] = item
        index.add(item.id, terms(indexed_text(item)))
    timeline = TurnTimeline(store.get)
    timeline.rebuild(list(store.values()))
    return store, index, timeline


@st.composite
def queries(
    draw: st.DrawFn, top_k: st.SearchStrategy[int] = TOP_K, min_words: int = 0
) -> tuple[MemoryQuery, Ranking]:
    ranking = Ranking(
        candidate_pool=draw(st.integers(1, 40)),
        episode_window_gap_minutes=draw(st.sampled_from([0, 30])),
        turns_around_hits=draw(st.integers(0, 2)),
        working_top_k=draw(st.integers(0, 6)),
        episodic_top_k=draw(top_k),
        semantic_top_k=draw(top_k),
        procedural_top_k=draw(top_k),
    )
    soft = draw(st.integers(0, 800))
    config = MemoryConfig(
        soft_prompt_budget_tokens=soft,
        max_prompt_budget_tokens=soft + draw(st.integers(0, 800)),
    )
    text = draw(st.lists(st.sampled_from(WORDS), min_size=min_words, max_size=4).map(" ".join))
    query = MemoryQuery.for_config(text, SCOPE, START + 40 * 86_400.0, config, ranking)
    carried = draw(st.sets(st.integers(0, 59), max_size=5))
    if carried:
        query.carried = lambda item: int(item.id[1:]) in carried
    return query, ranking


@settings(max_examples=60, deadline=None)
@given(scopes(), queries())
def test_candidates_are_hits_or_recent_episodes_of_wanted_layers(scope, asked) -> None:
    store, index, timeline = scope
    query, ranking = asked
    query_terms = search_terms(query.text, index.document_frequency)
    found = find_candidates(store, index, query, query_terms, ranking)
    top_k = layer_top_k(query)
    assert all(top_k[item.layer] > 0 for item in found.items.values())
    matching = [doc_id for doc_id in found.items if doc_id not in found.unmatched_recent]
    assert all(doc_id in found.hits for doc_id in matching)
    assert len(matching) <= ranking.candidate_pool + query.working_top_k
    context = in_context(found, index, query, query_terms, ranking, timeline.around)
    # Nothing the request carries; recent context only when nothing matched, or lent to.
    assert not any(query.carried(i) for i in context.items.values()) if query.carried else True
    if any(doc_id in found.hits for doc_id in context.items):
        for doc_id in found.unmatched_recent:
            assert doc_id not in context.items or context.lent.get(doc_id, 0.0) > 0
    # Relevance is within 0..1, and what a turn borrows never exceeds what it lends from.
    best = max(context.relevance_of.values(), default=0.0)
    assert all(0.0 <= context.relevance(doc_id) <= 1.0 for doc_id in context.items)
    assert all(lent <= best for lent in context.lent.values())


@settings(max_examples=60, deadline=None)
@given(scopes(), queries())
def test_scores_rank_best_first_and_a_replaced_fact_never_outranks_its_twin(scope, asked) -> None:
    store, index, timeline = scope
    query, ranking = asked
    query_terms = search_terms(query.text, index.document_frequency)
    context = in_context(
        find_candidates(store, index, query, query_terms, ranking),
        index,
        query,
        query_terms,
        ranking,
        timeline.around,
    )
    scored = score_candidates(context, query, ranking)
    scores = [score for score, _, _ in scored.ranked]
    assert scores == sorted(scores, reverse=True)
    assert len(scored.ranked) == len(context.items)
    # A fact a newer statement replaced ranks below the same fact still current.
    for score, _, item in scored.ranked:
        if item.layer is not Layer.EPISODIC and item.superseded_by is not None:
            twin = replace(item, id=item.id + "-current", superseded_by=None)
            alone = InContext({twin.id: twin}, {twin.id: context.relevance(item.id)}, {}, {})
            [(twin_score, _, _)] = score_candidates(alone, query, ranking).ranked
            assert score < twin_score or twin_score <= 0


@settings(max_examples=80, deadline=None)
@given(scopes(), queries())
def test_selection_keeps_the_limits_and_the_budgets(scope, asked) -> None:
    store, index, timeline = scope
    query, ranking = asked
    query_terms = search_terms(query.text, index.document_frequency)
    context = in_context(
        find_candidates(store, index, query, query_terms, ranking),
        index,
        query,
        query_terms,
        ranking,
        timeline.around,
    )
    ranked = score_candidates(context, query, ranking).ranked
    selection = select_items(ranked, context.window_of, query, ranking, tz=UTC)
    top_k = layer_top_k(query)
    assert all(selection.slots[layer] <= top_k[layer] for layer in Layer)
    assert selection.total_tokens <= query.max_budget_tokens
    assert selection.total_tokens == sum(p.tokens for p in selection.chosen)
    running = 0
    for packed in selection.chosen:
        running += packed.tokens
        # Past the soft budget only what scores high enough.
        assert running <= query.soft_budget_tokens or packed.score >= ranking.overflow_min_score
        assert packed.tokens >= MIN_ITEM_TOKENS
    fingerprints = [p.item.fingerprint for p in selection.chosen]
    assert len(fingerprints) == len(set(fingerprints))


@settings(max_examples=60, deadline=None)
@given(scopes(min_items=20), queries(top_k=SMALL_TOP_K, min_words=1))
@pytest.mark.slow
def test_filling_past_top_k_stays_within_the_soft_budget(scope, asked) -> None:
    store, index, timeline = scope
    query, ranking = asked
    query_terms = search_terms(query.text, index.document_frequency)
    context = in_context(
        find_candidates(store, index, query, query_terms, ranking),
        index,
        query,
        query_terms,
        ranking,
        timeline.around,
    )
    ranked = score_candidates(context, query, ranking).ranked
    selection = select_items(ranked, context.window_of, query, ranking, tz=UTC)
    before = len(selection.chosen)
    tokens_before = selection.total_tokens
    fill_past_top_k(selection, ranked, query, ranking, tz=UTC)
    added = selection.chosen[before:]
    assert selection.filled_past_top_k == len(added)
    assert all(p.relevance >= ranking.fill_min_relevance and p.relevance > 0 for p in added)
    assert not added or selection.total_tokens <= max(query.soft_budget_tokens, tokens_before)
    fingerprints = [p.item.fingerprint for p in selection.chosen]
    assert len(fingerprints) == len(set(fingerprints))


@settings(max_examples=60, deadline=None)
@given(scopes(), queries())
def test_the_steps_make_the_pack_and_rendering_is_its_items(scope, asked) -> None:
    store, index, timeline = scope
    query, ranking = asked
    pack = build_pack(
        store,
        index,
        query,
        ranking,
        turns_around=timeline.around,
    )
    assert pack.rendered == render_pack(pack.items)
    assert pack.diagnostics.total_tokens == sum(p.tokens for p in pack.items)
    lines = [line for line in pack.rendered.splitlines() if line.startswith("- ")]
    assert len(lines) == len(pack.items)
    for packed in pack.items:
        assert packed.line in pack.rendered
    if pack.rendered:
        assert pack.rendered.startswith("# Memory\n")


class FixedMeaning:
    """A query's similarities to each item, given (what a vector file would compute)."""

    def __init__(self, similarity: dict[str, float]) -> None:
        self.similarity = similarity

    def nearest(self, count: int) -> list[tuple[str, float]]:
        return sorted(self.similarity.items(), key=lambda kv: -kv[1])[:count]

    def similarities(self, item_ids: Iterable[str]) -> dict[str, float]:
        return {i: self.similarity[i] for i in item_ids if i in self.similarity}


def test_a_recent_turn_found_by_meaning_stays_when_words_match_elsewhere() -> None:
    # Told a minute ago, in other words than the question's: among the newest turns, no
    # word in common, but meaning found it, so it is a match, not filler.
    texts = {
        "car": "User: I drive an old green Skoda to work\nAssistant: ok",
        "teal": "User: My favourite colour is teal\nAssistant: ok",
        "cat": "User: Our cat sleeps all day\nAssistant: ok",
    }
    store: dict[str, MemoryItem] = {}
    index = BM25Index()
    for number, (key, text) in enumerate(texts.items()):
        at = START + number
        store[key] = MemoryItem(
            id=key,
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title=text[:80],
            content=text,
            scope=SCOPE,
            created_at=at,
            updated_at=at,
        )
        index.add(key, terms(indexed_text(store[key])))
    # No borrowing between neighbours: only matches stay.
    ranking = Ranking(
        turns_around_hits=0,
        dense_candidates=1,
        neighbour_relevance_share=0,
        answer_relevance_share=0,
    )
    query = MemoryQuery.for_config("What colour is my car?", SCOPE, START + 60, MemoryConfig())
    meaning = FixedMeaning({"car": 0.82, "teal": 0.80, "cat": 0.70})
    query_terms = search_terms(query.text, index.document_frequency)
    found = find_candidates(store, index, query, query_terms, ranking, meaning)
    assert "car" in found.unmatched_recent and "car" in found.dense_hits
    context = in_context(found, index, query, query_terms, ranking, None, meaning)
    # "teal" matched "colour"; the unmatched recent "cat" goes, "car" stays.
    assert set(context.items) == {"car", "teal"}


def test_each_packed_item_says_why_it_was_chosen() -> None:
    # What the web page's Ask shows: a turn matching the words, the turns either side of
    # it, one written on the day the question names, one only meaning found; and with
    # nothing matching, the newest turns.
    texts = {
        "before": "User: I booked the tickets today\nAssistant: Great, where to?",
        "match": "User: We fly to Berlin on Friday\nAssistant: Have a good trip",
        "after": "User: Any tips for the museum?\nAssistant: Go early",
        "dated": "User: The plumber came and fixed the sink\nAssistant: Good",
        "similar": "User: The capital of Germany has great bakeries\nAssistant: True",
    }
    times = {"before": 0, "match": 60, "after": 120, "dated": -5 * 86_400, "similar": -9 * 86_400}
    store: dict[str, MemoryItem] = {}
    index = BM25Index()
    for key, text in sorted(texts.items(), key=lambda kv: times[kv[0]]):
        at = START + times[key]
        store[key] = MemoryItem(
            id=key,
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title=text[:80],
            content=text,
            scope=SCOPE,
            created_at=at,
            updated_at=at,
        )
        index.add(key, terms(indexed_text(store[key])))
    timeline = TurnTimeline(store.get)
    timeline.rebuild(list(store.values()))
    config = MemoryConfig()
    ranking = Ranking(dense_candidates=1)

    def reasons_for(text: str, **extra: object) -> dict[str, tuple[str, ...]]:
        query = MemoryQuery.for_config(text, SCOPE, START + 3600, config, ranking)
        for name, value in extra.items():
            setattr(query, name, value)
        pack = build_pack(
            store,
            index,
            query,
            ranking,
            turns_around=timeline.around,
            dense=FixedMeaning({"similar": 0.9, "match": 0.5, "dated": 0.1}),
        )
        assert pack.to_json_dict()["items"][0]["reasons"] == list(pack.items[0].reasons)
        return {packed.item.id: packed.reasons for packed in pack.items}

    day = START - 5 * 86_400 - 30
    chosen = reasons_for("Berlin trip", date_ranges=((day, day + 86_400),))
    assert chosen["match"][0] == "words"
    assert "neighbour" in chosen["before"] and "neighbour" in chosen["after"]
    assert chosen["dated"] == ("date",)
    assert chosen["similar"] == ("meaning",)
    nothing = reasons_for("zebra")
    assert nothing and all("recent" in why for why in nothing.values())


def test_a_short_turn_chosen_first_never_hides_the_fact_it_stated() -> None:
    # "I moved to Kazan." as a recent episode, chosen before its fact: the fact (the current
    # home, found by a question in other words) must still show; the other way round the
    # turn gives way to the fact, which says the same.
    said_at = START + 60
    turn = MemoryItem(
        id="turn",
        layer=Layer.EPISODIC,
        type=ItemType.TURN,
        title="I moved to Kazan.",
        content="Test: I moved to Kazan.\nAssistant: Congratulations!",
        scope=SCOPE,
        created_at=said_at,
        updated_at=said_at,
        references=["tg:7"],
    )
    fact = replace(
        turn,
        id="fact",
        layer=Layer.SEMANTIC,
        type=ItemType.PROJECT_FACT,
        content="Test: I moved to Kazan.",
        references=["tg:7", "promotedFrom:x"],
        fingerprint="f",
    )
    after_turn = Coverage()
    after_turn.add(turn)
    assert not after_turn.covers(fact)
    after_fact = Coverage()
    after_fact.add(fact)
    assert after_fact.covers(turn)
