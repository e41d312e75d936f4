"""Conversation windows in the MemoryPack: turns of one conversation share a topK slot,
and a reply borrows relevance from the matching turn next to it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from mnemobot.memory.pack.build import MemoryPack, build_pack
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import Ranking
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.text.terms import terms

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC).timestamp()
HOUR = 3_600.0


def turn(item_id: str, content: str, at: float) -> MemoryItem:
    return MemoryItem(
        id=item_id,
        layer=Layer.EPISODIC,
        type=ItemType.TURN,
        title="",
        content=content,
        scope="telegram:1",
        created_at=at,
        updated_at=at,
        tags=["turn"],
        references=[f"msg:{item_id}"],
    )


def pack_for(
    items: list[MemoryItem], text: str, ranking: Ranking | None = None, **fields: object
) -> MemoryPack:
    index = BM25Index()
    for item in items:
        index.add(item.id, terms(item.content))
    query = MemoryQuery(text=text, scope="telegram:1", now=NOW, working_top_k=0, **fields)  # type: ignore[arg-type]
    return build_pack(
        {item.id: item for item in items},
        index,
        query,
        ranking or Ranking(),
    )


# Windows on, and no filling past topK: these tests watch what the topK slots hold.
WINDOWS = Ranking(episode_window_gap_minutes=30, fill_budget_past_top_k=False)


def chosen(pack: MemoryPack) -> set[str]:
    return {packed.item.id for packed in pack.items}


def test_turns_of_one_conversation_share_a_slot_and_other_conversations_get_their_own() -> None:
    morning = NOW - 30 * HOUR
    evening = NOW - 20 * HOUR
    items = [
        turn("m1", "Alice: the boiler is making a noise", morning),
        turn("m2", "Bob: which boiler, the old one?", morning + 40),
        turn("m3", "Alice: yes, the boiler in the basement", morning + 80),
        turn("e1", "Bob: the boiler man comes on Tuesday", evening),
    ]
    pack = pack_for(items, "boiler", WINDOWS, episodic_top_k=2)
    # Three turns of the morning use one slot, so the evening turn still gets in.
    assert chosen(pack) == {"m1", "m2", "m3", "e1"}
    assert pack.diagnostics.episodic_slots == 2
    assert pack.diagnostics.chosen_per_layer["EPISODIC"] == 4
    # Each turn still pays its own tokens.
    assert pack.diagnostics.total_tokens == sum(p.tokens for p in pack.items)
    # Rendered oldest first, so the conversation reads in order.
    lines = pack.rendered.splitlines()
    assert [i for i, line in enumerate(lines) if "boiler" in line] == [3, 4, 5, 6]
    assert "basement" in lines[5]

    # Without windows every turn takes its own slot.
    no_windows = replace(WINDOWS, episode_window_gap_minutes=0, neighbour_relevance_share=0)
    assert len(pack_for(items, "boiler", no_windows, episodic_top_k=2).items) == 2


def test_a_window_holds_at_most_its_max_turns_per_slot() -> None:
    start = NOW - 10 * HOUR
    items = [turn(f"t{i}", f"Alice: garden note {i}", start + 30 * i) for i in range(6)]
    ranking = replace(WINDOWS, episode_window_max_turns=2)
    pack = pack_for(items, "garden", ranking, episodic_top_k=2)
    assert len(pack.items) == 4
    assert pack.diagnostics.episodic_slots == 2


def test_the_reply_next_to_a_matching_question_ranks_above_other_weak_matches() -> None:
    start = NOW - 50 * HOUR
    question = turn("q", "Caroline: what did you think of the concert, Melanie?", start)
    answer = turn("a", "Melanie: loved it, the drummer was incredible", start + 30)
    # Newer turns that match the query exactly as weakly as the answer does.
    newer = [
        turn(f"u{i}", f"Melanie: thinking about dinner plans {i}", NOW - (i + 1) * 3 * HOUR)
        for i in range(3)
    ]
    items = [question, answer, *newer]
    lone_turns = Ranking(fill_budget_past_top_k=False)
    pack = pack_for(items, "did Melanie like the concert", lone_turns, episodic_top_k=2)
    # The answer shares only the name with the query but borrows from its question.
    assert chosen(pack) == {"q", "a"}
    by_id = {p.item.id: p for p in pack.items}
    assert 0 < by_id["a"].relevance < by_id["q"].relevance
    no_lending = Ranking(
        neighbour_relevance_share=0, answer_relevance_share=0, fill_budget_past_top_k=False
    )
    plain = pack_for(items, "did Melanie like the concert", no_lending, episodic_top_k=2)
    assert chosen(plain) == {"q", "u0"}


def test_a_turn_far_in_time_lends_nothing() -> None:
    question = turn("q", "Bob: the concert was loud", NOW - 40 * HOUR)
    next_day = turn("n", "Bob: slept until noon", NOW - 16 * HOUR)
    pack = pack_for([question, next_day], "concert")
    assert chosen(pack) == {"q"}
