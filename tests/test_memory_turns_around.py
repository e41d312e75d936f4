"""The turns around a matching turn come into the pack, found through the store's timeline."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from mnemobot.memory.pack.build import MemoryPack, build_pack
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import Ranking
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.text.terms import terms

SCOPE = "telegram:1"
NOW = datetime(2025, 6, 1, 12, tzinfo=UTC).timestamp()
HOUR = 3_600.0


def turn(item_id: str, content: str, at: float) -> MemoryItem:
    return MemoryItem(
        id=item_id,
        layer=Layer.EPISODIC,
        type=ItemType.TURN,
        title="",
        content=content,
        scope=SCOPE,
        created_at=at,
        updated_at=at,
        tags=["turn"],
        references=[f"msg:{item_id}"],
    )


def open_store(workspace: Path) -> ScopeItemStore:
    store = ScopeItemStore(ScopePaths(workspace, SCOPE), index=BM25Index(), terms=terms)
    store.load()
    return store


def pack_of(store: ScopeItemStore, text: str, *, with_timeline: bool = True) -> MemoryPack:
    query = MemoryQuery(text=text, scope=SCOPE, now=NOW, working_top_k=0)
    return build_pack(
        store.items,
        store._index,  # type: ignore[arg-type]
        query,
        Ranking(),
        turns_around=store.timeline.around if with_timeline else None,
    )


def chosen(pack: MemoryPack) -> list[str]:
    return sorted(packed.item.id for packed in pack.items)


def test_the_question_and_the_answer_around_a_matching_turn_come_along(tmp_path: Path) -> None:
    start = NOW - 48 * HOUR
    store = open_store(tmp_path)
    store.add(
        [
            turn("t1", "Bob: how was your weekend?", start),
            turn("t2", "Alice: we went to the lake and I tried paddleboarding", start + 60),
            turn("t3", "Bob: how did it go?", start + 5 * 60),
            turn("t4", "Alice: fell in twice but loved it", start + 12 * 60),
            # The next day: another conversation, not brought along.
            turn("t5", "Bob: good morning", start + 20 * HOUR),
        ]
    )
    question = "what did she think of paddleboarding"
    # Only t2 shares a word with the question; the answer (t4) shares none.
    assert chosen(pack_of(store, question, with_timeline=False)) == ["t2"]
    pack = pack_of(store, question)
    assert chosen(pack) == ["t1", "t2", "t3", "t4"]
    assert pack.diagnostics.turns_around_hits == 3
    # Rendered in conversation order.
    lines = [line for line in pack.rendered.splitlines() if line.startswith("- ")]
    assert [line.split(": ", 1)[1].split(":")[0] for line in lines] == [
        "Bob",
        "Alice",
        "Bob",
        "Alice",
    ]

    # The timeline is rebuilt from the files, and a forgotten turn leaves it.
    reloaded = open_store(tmp_path)
    assert chosen(pack_of(reloaded, question)) == ["t1", "t2", "t3", "t4"]
    assert reloaded.forget("t1")
    assert chosen(pack_of(reloaded, question)) == ["t2", "t3", "t4"]
    assert len(reloaded.timeline) == 4


def test_a_turn_written_late_takes_its_place_in_time(tmp_path: Path) -> None:
    start = NOW - 5 * HOUR
    store = open_store(tmp_path)
    store.add([turn("a", "Bob: first", start), turn("c", "Bob: third", start + 120)])
    # Written after "c" (a delayed write), said between the two.
    store.add([turn("b", "Alice: second", start + 60)])
    before, after = store.timeline.around(store.items["b"], 2)
    assert [t.id for t in before] == ["a"] and [t.id for t in after] == ["c"]
    assert [t.id for t in store.timeline.around(store.items["c"], 2)[0]] == ["b", "a"]
