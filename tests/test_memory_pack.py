"""The MemoryPack: which items a turn gets to see, within budget, and how they read."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime

from mnemobot.memory.pack.build import MemoryPack, PackSection, build_pack
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.text.terms import terms

DAY = 86_400.0
NOW = datetime(2025, 6, 1, 12, tzinfo=UTC).timestamp()
RANKING = DEFAULT_RANKING


def make_item(
    item_id: str,
    content: str,
    *,
    layer: Layer = Layer.EPISODIC,
    item_type: ItemType = ItemType.PROJECT_FACT,
    days_ago: float = 1.0,
    references: list[str] | None = None,
    scope: str = "telegram:1",
    title: str = "",
    tags: list[str] | None = None,
) -> MemoryItem:
    at = NOW - days_ago * DAY
    return MemoryItem(
        id=item_id,
        layer=layer,
        type=item_type,
        title=title,
        content=content,
        scope=scope,
        created_at=at,
        updated_at=at,
        references=references or [],
        tags=tags or [],
    )


def store(*items: MemoryItem) -> tuple[dict[str, MemoryItem], BM25Index]:
    index = BM25Index()
    by_id: dict[str, MemoryItem] = {}
    for item in items:
        by_id[item.id] = item
        index.add(item.id, terms(item.content))
    return by_id, index


def pack_for(
    items: dict[str, MemoryItem],
    index: BM25Index,
    text: str,
    *,
    ranking: Ranking = RANKING,
    decay_enabled: bool = True,
    **query_fields: object,
) -> MemoryPack:
    query = MemoryQuery(text=text, scope="telegram:1", now=NOW, **query_fields)  # type: ignore[arg-type]
    return build_pack(items, index, query, replace(ranking, decay_enabled=decay_enabled))


def ids(pack: MemoryPack) -> list[str]:
    return [packed.item.id for packed in pack.items]


def test_two_item_chat_puts_the_relevant_item_first() -> None:
    items, index = store(
        make_item("dog", "My dog is called Rex", days_ago=3),
        make_item("job", "I work night shifts at the hospital", days_ago=2),
    )
    pack = pack_for(items, index, "what is my dog called?", working_top_k=0)
    assert ids(pack) == ["dog"]
    assert pack.items[0].relevance == 1.0
    # A match leaves the unmatched recent turn out: it would only fill the prompt.
    with_context = pack_for(items, index, "what is my dog called?", working_top_k=6)
    assert ids(with_context) == ["dog"]
    # Nothing matches ("where were we?"): the newest turns come along as context.
    no_match = pack_for(items, index, "where were we?", working_top_k=6)
    assert set(ids(no_match)) == {"dog", "job"}


def test_soft_budget_is_kept_and_only_high_scorers_go_past_it_up_to_max() -> None:
    filler = " ".join(["garden"] * 70)  # ~110 tokens per rendered line
    items, index = store(
        *[make_item(f"e{i}", f"tomato {i} {filler}", days_ago=i + 1) for i in range(12)]
    )
    # Every item matches equally well, so all score high: they may go past soft, not max.
    pack = pack_for(
        items, index, "tomato", soft_budget_tokens=300, max_budget_tokens=600, episodic_top_k=12
    )
    assert 300 < pack.diagnostics.total_tokens <= 600
    assert pack.diagnostics.total_tokens == sum(p.tokens for p in pack.items)
    assert pack.diagnostics.dropped_by_budget == 12 - len(pack.items) > 0
    running = 0
    for packed in pack.items:
        running += packed.tokens
        if running > 300:
            assert packed.score >= RANKING.overflow_min_score
    # Nobody is a high scorer under a threshold above every score: the soft budget holds.
    strict = Ranking(overflow_min_score=5.0)
    pack = pack_for(
        items,
        index,
        "tomato",
        ranking=strict,
        soft_budget_tokens=300,
        max_budget_tokens=600,
        episodic_top_k=12,
    )
    assert 0 < pack.diagnostics.total_tokens <= 300
    assert len(pack.items) == 2


def test_per_layer_top_k() -> None:
    items, index = store(
        *[make_item(f"e{i}", f"backup script run {i}") for i in range(10)],
        *[make_item(f"s{i}", f"backup goes to disk {i}", layer=Layer.SEMANTIC) for i in range(10)],
        *[
            make_item(f"p{i}", f"backup fix {i}", layer=Layer.PROCEDURAL, item_type=ItemType.FIX)
            for i in range(10)
        ],
    )
    limits = {"episodic_top_k": 3, "semantic_top_k": 2, "procedural_top_k": 1}
    capped = Ranking(fill_budget_past_top_k=False)
    pack = pack_for(items, index, "backup", ranking=capped, **limits)
    assert pack.diagnostics.candidates_per_layer == {
        "EPISODIC": 10,
        "SEMANTIC": 10,
        "PROCEDURAL": 10,
    }
    assert pack.diagnostics.chosen_per_layer == {"EPISODIC": 3, "SEMANTIC": 2, "PROCEDURAL": 1}
    assert [p.section for p in pack.items].count(PackSection.RELEVANT_FACTS) == 2
    none_semantic = pack_for(items, index, "backup", semantic_top_k=0)
    assert all(p.item.layer is not Layer.SEMANTIC for p in none_semantic.items)

    # By default budget the limits leave unused goes to the next matching items: all 30
    # fit here, within the soft budget; a layer with topK 0 stays out all the same.
    filled = pack_for(items, index, "backup", **limits)
    assert filled.diagnostics.chosen_per_layer == {
        "EPISODIC": 10,
        "SEMANTIC": 10,
        "PROCEDURAL": 10,
    }
    assert filled.diagnostics.filled_past_top_k == 24
    assert filled.diagnostics.total_tokens <= filled.diagnostics.soft_budget_tokens
    tight = pack_for(
        items, index, "backup", soft_budget_tokens=200, max_budget_tokens=200, **limits
    )
    assert tight.diagnostics.total_tokens <= 200


def test_a_two_year_old_fact_is_still_found_when_it_is_the_only_relevant_one() -> None:
    old_fact = make_item(
        "allergy",
        "The user is allergic to penicillin",
        layer=Layer.SEMANTIC,
        item_type=ItemType.CONSTRAINT,
        days_ago=730,
    )
    chatter = [make_item(f"e{i}", f"talked about the weather {i}", days_ago=i) for i in range(20)]
    items, index = store(old_fact, *chatter)
    pack = pack_for(items, index, "can I take penicillin?")
    assert "allergy" in ids(pack)
    said = datetime.fromtimestamp(NOW - 730 * DAY, UTC).strftime("%Y-%m-%d")
    assert f"- Constraint (said {said}): The user is allergic to penicillin" in pack.rendered


def test_decay_ranks_an_old_fact_below_an_equally_relevant_fresh_one() -> None:
    old = make_item("old", "deploy with make ship", layer=Layer.SEMANTIC, days_ago=400)
    fresh = make_item("fresh", "deploy with make release", layer=Layer.SEMANTIC, days_ago=1)
    items, index = store(old, fresh)
    decayed = pack_for(items, index, "deploy make")
    assert ids(decayed) == ["fresh", "old"]
    scores = {p.item.id: p.score for p in decayed.items}
    undecayed = pack_for(items, index, "deploy make", decay_enabled=False)
    assert {p.item.id: p.score for p in undecayed.items}["old"] > scores["old"] > 0


def test_rendered_markdown_format() -> None:
    items, index = store(
        make_item("e-new", "We fixed the flaky test in CI", days_ago=1, item_type=ItemType.TURN),
        make_item("e-old", "The CI test was flaky again", days_ago=40, item_type=ItemType.TURN),
        make_item(
            "s1", "CI runs on GitHub Actions", layer=Layer.SEMANTIC, item_type=ItemType.DECISION
        ),
        make_item(
            "p1",
            "Rerun the flaky test with -p no:randomly",
            layer=Layer.PROCEDURAL,
            item_type=ItemType.FIX,
            title="Flaky test",
        ),
    )
    pack = pack_for(items, index, "flaky CI test", working_top_k=0)
    old_day = datetime.fromtimestamp(NOW - 40 * DAY, UTC).strftime("%Y-%m-%d")
    new_day = datetime.fromtimestamp(NOW - DAY, UTC).strftime("%Y-%m-%d")
    today = new_day
    assert pack.rendered == (
        "# Memory\n\n"
        "## Recent episodes\n"
        f"- {old_day}: The CI test was flaky again\n"
        f"- {new_day}: We fixed the flaky test in CI\n\n"
        "## Relevant facts\n"
        f"- Decision (said {today}): CI runs on GitHub Actions\n\n"
        "## Applicable procedures\n"
        f"- Fix (said {today}): Rerun the flaky test with -p no:randomly\n"
    )
    # Turns show their text, other items their kind; titles are never paid for twice;
    # empty sections vanish.
    facts_only = pack_for(items, index, "GitHub Actions", working_top_k=0)
    assert facts_only.rendered == (
        f"# Memory\n\n## Relevant facts\n- Decision (said {today}): CI runs on GitHub Actions\n"
    )


def test_empty_pack_renders_nothing() -> None:
    items, index = store(make_item("e1", "hello there"))
    pack = pack_for(items, index, "quantum chromodynamics", working_top_k=0)
    assert pack.is_empty
    assert pack.rendered == ""
    empty_items, empty_index = store()
    assert pack_for(empty_items, empty_index, "anything").rendered == ""


def test_rendering_is_pure() -> None:
    items, index = store(
        make_item("e1", "Bought a red bicycle", days_ago=5),
        make_item("s1", "The bicycle is red", layer=Layer.SEMANTIC),
    )
    before = copy.deepcopy({key: item.to_json_dict() for key, item in items.items()})
    first = pack_for(items, index, "bicycle")
    second = pack_for(items, index, "bicycle")
    assert first.rendered == second.rendered
    assert first.to_json_dict()["items"] == second.to_json_dict()["items"]
    assert {key: item.to_json_dict() for key, item in items.items()} == before


def test_content_already_covered_is_not_repeated() -> None:
    episode = make_item(
        "turn",
        "User: never push to main on Fridays | Assistant: noted",
        references=["msg:7"],
        item_type=ItemType.TASK_STATE,
    )
    derived = make_item(
        "rule",
        "never push to main on Fridays",
        item_type=ItemType.CONSTRAINT,
        references=["msg:7"],
        layer=Layer.SEMANTIC,
    )
    promoted = make_item(
        "promoted",
        episode.content,
        item_type=ItemType.TASK_STATE,
        layer=Layer.SEMANTIC,
        references=["msg:7", PROMOTED_FROM_PREFIX + "turn"],
    )
    unrelated_rule = make_item(
        "other",
        "never push to main without review",
        item_type=ItemType.CONSTRAINT,
        references=["msg:9"],
        layer=Layer.SEMANTIC,
    )
    items, index = store(episode, derived, promoted, unrelated_rule)
    # Make the episode win first place so the others are judged against it.
    pack = pack_for(items, index, "push to main on fridays noted", working_top_k=0)
    chosen = ids(pack)
    assert chosen[0] == "turn"
    assert "rule" not in chosen
    assert "promoted" not in chosen
    assert "other" in chosen
    assert pack.diagnostics.skipped_duplicates == 2


def test_recent_episodes_come_along_only_when_nothing_matches() -> None:
    old_match = make_item("match", "the boiler pressure was low", days_ago=100)
    recent = [make_item(f"r{i}", f"small talk number {i}", days_ago=i * 0.01) for i in range(5)]
    recent.append(make_item("r_boiler", "the boiler guy comes tomorrow", days_ago=0.001))
    items, index = store(old_match, *recent)
    pack = pack_for(items, index, "boiler pressure", working_top_k=3)
    # A recent turn comes along when it matches; small talk that does not stays out.
    assert ids(pack) == ["match", "r_boiler"]
    pack = pack_for(items, index, "anything new?", working_top_k=3)
    assert set(ids(pack)) == {"r_boiler", "r0", "r1"}
    assert pack.diagnostics.candidates_per_layer["EPISODIC"] == 3


def test_other_scopes_and_expired_items_stay_out() -> None:
    mine = make_item("mine", "my passport number is in the drawer")
    theirs = make_item("theirs", "passport renewal next week", scope="telegram:2")
    expired = make_item("expired", "passport photo appointment today", days_ago=3)
    expired.ttl_days = 1
    items, index = store(mine, theirs, expired)
    pack = pack_for(items, index, "passport", working_top_k=0)
    assert ids(pack) == ["mine"]
    assert pack.diagnostics.skipped_other_scope == 1
    assert pack.diagnostics.skipped_expired == 1


def test_json_form_lists_items_and_diagnostics() -> None:
    items, index = store(make_item("e1", "the cat is named Miso", references=["msg:1"]))
    data = pack_for(items, index, "cat name").to_json_dict()
    (item,) = data["items"]
    assert item["id"] == "e1"
    assert item["layer"] == "EPISODIC"
    assert item["type"] == "PROJECT_FACT"
    assert item["references"] == ["msg:1"]
    assert item["content"] == "the cat is named Miso"
    assert item["tokens"] == 20
    assert item["score"] > 0
    assert data["diagnostics"]["chosenPerLayer"]["EPISODIC"] == 1
    assert data["diagnostics"]["legacyFallbackUsed"] is False
    assert data["diagnostics"]["softBudgetTokens"] == 1800
    assert data["rendered"].startswith("# Memory\n\n## Recent episodes\n- ")


def test_candidate_pool_keeps_the_best_hits_and_breaks_ties_by_recency() -> None:
    items, index = store(
        make_item("best", "solar panel solar panel invoice", days_ago=50),
        *[make_item(f"tie{i}", f"solar note {i}", days_ago=10 - i) for i in range(6)],
    )
    pool_of_three = Ranking(candidate_pool=3)
    pack = pack_for(items, index, "solar panel", ranking=pool_of_three, working_top_k=0)
    # The strongest match always makes the pool; of the equal ones, the two newest.
    assert ids(pack)[0] == "best"
    assert set(ids(pack)[1:]) == {"tie5", "tie4"}
    assert sum(pack.diagnostics.candidates_per_layer.values()) == 3


def test_filling_past_top_k_takes_only_items_near_the_best_match() -> None:
    common = [
        make_item(f"g{i}", f"watered the garden on day {i} before work", days_ago=i + 1)
        for i in range(20)
    ]
    best = make_item("tomato", "the garden tomatoes got blight this year", days_ago=30)
    items, index = store(best, *common)
    query = {"episodic_top_k": 1, "working_top_k": 0, "soft_budget_tokens": 1800}
    floor_off = pack_for(
        items,
        index,
        "tomato blight in the garden",
        ranking=Ranking(fill_min_relevance=0),
        **query,
    )
    floor_on = pack_for(items, index, "tomato blight in the garden", **query)
    assert ids(floor_on)[0] == ids(floor_off)[0] == "tomato"
    # Matching "garden" alone, the watering notes fill the budget with no floor...
    assert len(floor_off.items) == 21
    assert max(p.relevance for p in floor_off.items[1:]) < RANKING.fill_min_relevance
    # ...and stay out with the default one: a weak match is paid for and holds nothing.
    assert ids(floor_on) == ["tomato"]
