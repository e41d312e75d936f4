"""The JSONL item store of one scope: files, dedup, tombstones, promotion, torn lines."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX, ScopeItemStore
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import (
    GLOBAL_SCOPE,
    ScopePaths,
    scope_key,
    validate_scope_key,
)
from mnemobot.memory.text.terms import terms as bm25_terms
from tests.crash_points import run_to_crash

SCOPE = "telegram:42"
DAY1 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC).timestamp()
DAY2 = datetime(2025, 3, 2, 9, 30, tzinfo=UTC).timestamp()


class SetIndex:
    """A trivial real term index: which ids hold which terms."""

    def __init__(self) -> None:
        self.docs: dict[str, set[str]] = {}

    def add(self, doc_id: str, terms: list[str]) -> None:
        self.docs[doc_id] = set(terms)

    def remove(self, doc_id: str) -> None:
        self.docs.pop(doc_id, None)

    def find(self, term: str) -> set[str]:
        return {doc_id for doc_id, terms in self.docs.items() if term in terms}


def words(text: str) -> list[str]:
    return text.lower().replace(".", " ").replace(":", " ").split()


_ids = itertools.count()


def item(
    content: str,
    *,
    layer: Layer = Layer.EPISODIC,
    item_type: ItemType = ItemType.PREFERENCE,
    at: float = DAY1,
    confidence: float = 0.85,
    salience: float = 0.6,
    tags: list[str] | None = None,
    references: list[str] | None = None,
    item_id: str | None = None,
) -> MemoryItem:
    return MemoryItem(
        id=item_id or f"it{next(_ids)}",
        layer=layer,
        type=item_type,
        title=content[:40],
        content=content,
        scope=SCOPE,
        created_at=at,
        updated_at=at,
        tags=tags or [],
        references=references or [],
        confidence=confidence,
        salience=salience,
    )


@pytest.fixture
def paths(workspace: Path) -> ScopePaths:
    return ScopePaths(workspace, SCOPE)


def open_store(paths: ScopePaths, index: SetIndex | None = None) -> ScopeItemStore:
    store = ScopeItemStore(paths, index=index, terms=words if index is not None else None)
    store.load()
    return store


def file_lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line]


# ------------------------------------------------------------------- scope paths


def test_scope_keys_and_the_paths_of_a_scope(workspace: Path) -> None:
    assert scope_key("telegram", -100123) == "telegram:-100123"
    assert scope_key("telegram", 5, "global") == GLOBAL_SCOPE
    paths = ScopePaths(workspace, "telegram:7")
    root = workspace / "memory" / "telegram:7"
    assert paths.directory == root
    assert paths.memory_file == root / "MEMORY.md"
    assert paths.operator_memory_file == workspace / "memory" / "MEMORY.md"
    assert paths.daily_note(date(2025, 1, 2)) == root / "2025-01-02.md"
    assert paths.episodic_file(date(2025, 1, 2)) == root / "items/episodic/2025-01-02.jsonl"
    assert paths.semantic_file == root / "items/semantic.jsonl"
    assert paths.procedural_file == root / "items/procedural.jsonl"


@pytest.mark.parametrize(
    "bad", ["", " ", "../x", "a/b", "..", "a\\b", "a\x00b", ".hidden", "x..y", "MEMORY.md"]
)
def test_scope_keys_that_could_escape_the_memory_directory_are_refused(
    workspace: Path, bad: str
) -> None:
    with pytest.raises(ValueError):
        validate_scope_key(bad)
    with pytest.raises(ValueError):
        ScopePaths(workspace, bad)


def test_a_chat_id_with_a_slash_cannot_build_a_scope() -> None:
    with pytest.raises(ValueError):
        scope_key("telegram", "../../etc")
    with pytest.raises(ValueError):
        scope_key("tele:gram", 1)


# ------------------------------------------------------------------ add and load


def test_items_go_to_their_layer_files_and_load_back(paths: ScopePaths) -> None:
    store = open_store(paths)
    added = store.add(
        [
            item("I prefer tea.", at=DAY1),
            item("We use Postgres.", item_type=ItemType.PROJECT_FACT, at=DAY2),
            item("Pin numpy below 2.", layer=Layer.PROCEDURAL, item_type=ItemType.FIX),
            item("Never push to main.", layer=Layer.SEMANTIC, item_type=ItemType.CONSTRAINT),
        ]
    )
    assert len(added) == 4
    assert len(file_lines(paths.episodic_file(date(2025, 3, 1)))) == 1
    assert len(file_lines(paths.episodic_file(date(2025, 3, 2)))) == 1
    assert len(file_lines(paths.semantic_file)) == 1
    assert len(file_lines(paths.procedural_file)) == 1

    reloaded = open_store(paths)
    assert {i.content for i in reloaded.items.values()} == {a.content for a in added}
    assert reloaded.items == {a.id: a for a in added}
    stats = reloaded.stats()
    assert stats.per_layer == {"EPISODIC": 2, "SEMANTIC": 1, "PROCEDURAL": 1}
    assert stats.files == 4
    assert stats.skipped_lines == 0


def test_a_duplicate_merges_into_the_stored_item(paths: ScopePaths) -> None:
    store = open_store(paths)
    [first] = store.add(
        [item("I prefer tea.", confidence=0.7, salience=0.9, tags=["a"], references=["m1"])]
    )
    later = DAY1 + 3600
    [merged] = store.add(
        [
            item(
                "I  prefer   TEA.",  # same fingerprint: whitespace and case do not count
                confidence=0.9,
                salience=0.2,
                tags=["b", "a"],
                references=["m2"],
                at=later,
            )
        ]
    )
    assert merged.id == first.id
    assert merged.content == "I  prefer   TEA."  # the longer text is kept
    assert merged.confidence == 0.9
    assert merged.salience == 0.9
    assert merged.tags == ["a", "b"]
    assert merged.references == ["m1", "m2"]
    assert merged.updated_at == later
    assert merged.created_at == DAY1
    assert len(store) == 1
    # The merge is an appended line, the first line is untouched.
    lines = file_lines(paths.episodic_file(date(2025, 3, 1)))
    assert len(lines) == 2
    assert orjson.loads(lines[0])["content"] == "I prefer tea."
    assert open_store(paths).items == {first.id: merged}


def test_duplicates_within_one_add_merge_and_layers_do_not(paths: ScopePaths) -> None:
    store = open_store(paths)
    stored = store.add(
        [
            item("Never deploy on Fridays.", item_type=ItemType.CONSTRAINT),
            item("never deploy on fridays.", item_type=ItemType.CONSTRAINT, confidence=0.95),
            item(
                "Never deploy on Fridays.",
                item_type=ItemType.CONSTRAINT,
                layer=Layer.SEMANTIC,
            ),
        ]
    )
    assert len(stored) == 2
    assert sorted(i.layer for i in store.items.values()) == [Layer.EPISODIC, Layer.SEMANTIC]
    episodic = next(i for i in store.items.values() if i.layer is Layer.EPISODIC)
    assert episodic.confidence == 0.95


def test_writes_append_and_never_rewrite_earlier_bytes(paths: ScopePaths) -> None:
    store = open_store(paths)
    store.add([item("I prefer tea.")])
    before = paths.episodic_file(date(2025, 3, 1)).read_bytes()
    [stored] = store.add([item("I like chess.")])
    store.update(stored.id, title="Chess")
    after = paths.episodic_file(date(2025, 3, 1)).read_bytes()
    assert after.startswith(before)
    assert len(file_lines(paths.episodic_file(date(2025, 3, 1)))) == 3


def test_update_is_last_write_wins_across_reloads(paths: ScopePaths) -> None:
    index = SetIndex()
    store = open_store(paths, index)
    [stored] = store.add([item("I prefer tea.")])
    updated = store.update(stored.id, content="I prefer green tea.", tags=["drinks"])
    assert updated is not None
    assert updated.fingerprint != stored.fingerprint
    assert index.find("green") == {stored.id}
    assert store.update("missing", title="x") is None

    reloaded = open_store(paths, SetIndex())
    assert reloaded.items[stored.id].content == "I prefer green tea."
    assert reloaded.items[stored.id].tags == ["drinks"]
    # The old text is no longer a duplicate of anything; the new one is.
    [merged] = reloaded.add([item("i prefer green tea.")])
    assert merged.id == stored.id


# --------------------------------------------------------------------- forgetting


def test_a_forgotten_item_never_comes_back(paths: ScopePaths) -> None:
    index = SetIndex()
    store = open_store(paths, index)
    [stored] = store.add([item("My sister lives in Oslo.", item_type=ItemType.PROJECT_FACT)])
    assert index.find("oslo") == {stored.id}
    assert store.forget(stored.id) is True
    assert store.forget(stored.id) is False
    assert stored.id not in store.items
    assert index.find("oslo") == set()

    tombstone = orjson.loads(file_lines(paths.episodic_file(date(2025, 3, 1)))[-1])
    assert tombstone["id"] == stored.id
    assert tombstone["tombstone"] is True
    assert tombstone["fingerprint"] == stored.fingerprint
    assert "forgottenAt" in tombstone

    # The same sentence extracted again later, under a new id and on another day.
    again = item("My sister lives in Oslo.", item_type=ItemType.PROJECT_FACT, at=DAY2)
    assert store.add([again]) == []
    reloaded = open_store(paths, SetIndex())
    assert reloaded.items == {}
    assert reloaded.add([again]) == []
    assert reloaded.stats().tombstones == 1
    # Re-adding the old id itself does not revive it either.
    assert reloaded.add([item("Something new.", item_id=stored.id)]) == []


def test_forgetting_an_episode_also_forgets_its_promoted_copy(paths: ScopePaths) -> None:
    store = open_store(paths)
    [episode] = store.add([item("I prefer tea.")])
    promoted = store.promote(episode.id)
    assert promoted is not None
    assert store.forget(promoted.id)
    assert store.items == {}
    assert open_store(paths).items == {}


def test_a_tombstone_wins_whichever_file_holds_it(paths: ScopePaths) -> None:
    store = open_store(paths)
    [stored] = store.add([item("I prefer tea.", layer=Layer.SEMANTIC)])
    store.forget(stored.id)
    # The same text lands in an episodic file by hand (a restore, a copy); episodic files
    # load before semantic.jsonl where the tombstone is: still gone.
    record = item("I prefer tea.", at=DAY2).to_json_dict()
    paths.episodic_dir.mkdir(parents=True)
    paths.episodic_file(date(2025, 3, 2)).write_bytes(orjson.dumps(record) + b"\n")
    assert open_store(paths).items == {}


# ------------------------------------------------------------ corrupt and torn lines


def test_torn_and_corrupt_lines_are_skipped_and_counted(paths: ScopePaths) -> None:
    good = [item(f"Fact number {n} is true.", item_type=ItemType.PROJECT_FACT) for n in range(4)]
    lines = [orjson.dumps(i.to_json_dict()) for i in good]
    torn = orjson.dumps(item("I was being written when the power went.").to_json_dict())[:37]
    bad_record = orjson.dumps({"id": "x", "layer": "NOPE", "content": "?"})
    path = paths.episodic_file(date(2025, 3, 1))
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b"\n".join([lines[0], b"{not json at all", lines[1], bad_record, lines[2], lines[3], torn])
    )
    store = open_store(paths)
    assert set(store.items) == {i.id for i in good}
    assert store.stats().skipped_lines == 3

    # Appending after a torn line starts a fresh line, so the new item is not lost.
    [new] = store.add([item("Added after the crash.")])
    reloaded = open_store(paths)
    assert new.id in reloaded.items
    assert reloaded.stats().skipped_lines == 3


def test_the_fast_loader_reads_items_exactly_like_from_json_dict() -> None:
    original = MemoryItem(
        id="abc",
        layer=Layer.PROCEDURAL,
        type=ItemType.COMMAND_RESULT,
        title="Run tests",
        content="$ pytest -q",
        scope=SCOPE,
        created_at=DAY1,
        updated_at=DAY2,
        tags=["command", "pytest"],
        references=["m1", "file:tests/test_x.py"],
        source="user",
        confidence=0.81,
        salience=0.33,
        ttl_days=30,
        last_accessed_at=DAY2 + 5,
    )
    record = orjson.loads(orjson.dumps(original.to_json_dict()))
    assert MemoryItem.from_json_dict(record) == original
    sparse = {"id": "s", "layer": "SEMANTIC", "type": "DECISION", "content": "Use uv."}
    sparse["createdAt"] = "2025-03-01T10:00:00Z"
    sparse["tags"] = ["x", 3]  # a hand edit
    assert MemoryItem.from_json_dict(sparse).tags == ["x", "3"]


def test_a_title_cut_from_the_content_loads_and_writes_back_unchanged(
    paths: ScopePaths,
) -> None:
    # Loaded titles that are the start of the content are kept as a length and cut again
    # when read: every kind must read back, and be written back, byte for byte.
    content = "Anna: We moved to Berlin. The flat is small but bright, near the park."
    titles = [
        "Anna: We moved to Berlin.",  # the start of the content
        "Anna: We moved to Berlin. The flat …",  # cut_text's word-boundary cut
        "Anna: We moved to Berlin. …",  # cut_text's sentence cut
        "Anna: We moved to Berlin…",  # an ellipsis glued on
        "",
        content,
        "Preference (Anna): Berlin",  # not from the content
        "Anna:  We moved",  # close, but not the start (two spaces)
    ]
    store = ScopeItemStore(paths)
    written = [item(content + f" {n}", item_type=ItemType.TURN) for n in range(len(titles))]
    for one, title in zip(written, titles, strict=True):
        one.title = title
    store.add(written)
    before = sorted(line for path in paths.item_files() for line in file_lines(path))
    reloaded = open_store(paths)
    assert [reloaded.get(one.id) for one in written] == written
    assert [reloaded.get(one.id).title for one in written] == titles  # type: ignore[union-attr]
    reloaded.compact_files()
    assert sorted(line for path in paths.item_files() for line in file_lines(path)) == before


# --------------------------------------------------------------------- promotion


def test_promotion_copies_an_episode_to_the_right_durable_file(paths: ScopePaths) -> None:
    store = open_store(paths)
    preference, failure, already = store.add(
        [
            item("I prefer tea.", references=["m1"]),
            item("ImportError: no module named x", item_type=ItemType.FAILURE),
            item("Use uv.", item_type=ItemType.DECISION, layer=Layer.SEMANTIC),
        ]
    )
    semantic = store.promote(preference.id)
    procedural = store.promote(failure.id)
    assert semantic is not None and procedural is not None
    assert semantic.layer is Layer.SEMANTIC and semantic.id != preference.id
    assert procedural.layer is Layer.PROCEDURAL
    assert semantic.references == ["m1", PROMOTED_FROM_PREFIX + preference.id]
    assert semantic.content == preference.content
    assert store.promote(already.id) is None
    assert store.promote("missing") is None
    # The episode stays an episode.
    assert store.items[preference.id].layer is Layer.EPISODIC

    # Promoting the same text again merges into the durable copy.
    assert store.promote(preference.id) == store.items[semantic.id]
    assert len(file_lines(paths.semantic_file)) == 3  # the decision, the copy, its merge

    reloaded = open_store(paths)
    assert reloaded.items[semantic.id].layer is Layer.SEMANTIC
    assert reloaded.items[procedural.id].layer is Layer.PROCEDURAL
    assert {i.content for i in reloaded.items.values() if i.layer is Layer.PROCEDURAL} == {
        "ImportError: no module named x"
    }


def test_auto_promote_takes_only_confident_new_episodes(paths: ScopePaths) -> None:
    store = open_store(paths)
    store.add([item("Old confident fact.", item_type=ItemType.PROJECT_FACT, confidence=0.9)])
    store.auto_promote(0.75)  # consumes the first batch
    added = store.add(
        [
            item("I prefer tea.", confidence=0.9),
            item("Maybe I like jazz.", confidence=0.6),
            item("Fix: pin numpy.", item_type=ItemType.FIX, confidence=0.75),
        ]
    )
    promoted = store.auto_promote(0.75)
    assert sorted((p.layer, p.content) for p in promoted) == [
        (Layer.PROCEDURAL, "Fix: pin numpy."),
        (Layer.SEMANTIC, "I prefer tea."),
    ]
    assert store.auto_promote(0.75) == []  # nothing new since
    assert store.auto_promote(0.5, added) != []  # explicit items are always considered
    assert store.stats().per_layer["SEMANTIC"] == 3


# --------------------------------------------------------- index and maintenance


def test_the_bm25_index_follows_adds_updates_and_forgets(paths: ScopePaths) -> None:
    index = BM25Index()
    store = ScopeItemStore(paths, index=index, terms=bm25_terms)
    store.load()
    tea, chess = store.add([item("I prefer green tea."), item("I play chess on Sundays.")])
    assert set(index.scores(bm25_terms("tea"))) == {tea.id}
    store.update(tea.id, content="I prefer black coffee.")
    assert index.scores(bm25_terms("tea")) == {}
    assert set(index.scores(bm25_terms("coffee"))) == {tea.id}
    store.forget(chess.id)
    assert index.scores(bm25_terms("chess")) == {}

    fresh_index = BM25Index()
    ScopeItemStore(paths, index=fresh_index, terms=bm25_terms).load()
    assert set(fresh_index.scores(bm25_terms("coffee"))) == {tea.id}
    assert len(fresh_index) == 1


def test_compaction_keeps_live_items_and_tombstones_only(paths: ScopePaths) -> None:
    store = open_store(paths)
    kept, gone = store.add([item("I prefer tea."), item("I like chess.")])
    for n in range(5):
        store.update(kept.id, title=f"title {n}")
    store.forget(gone.id)
    day_file = paths.episodic_file(date(2025, 3, 1))
    with day_file.open("ab") as handle:
        handle.write(b"{torn")
    assert len(day_file.read_bytes().splitlines()) == 9

    stats = store.compact_files()
    assert stats.lines == 2  # the live item and the tombstone
    assert stats.skipped_lines == 0
    reloaded = open_store(paths)
    assert reloaded.items == {kept.id: store.items[kept.id]}
    assert reloaded.items[kept.id].title == "title 4"
    assert reloaded.add([item("I like chess.")]) == []  # still forgotten
    assert reloaded.stats().skipped_lines == 0


def test_items_of_another_scope_are_refused(paths: ScopePaths) -> None:
    store = open_store(paths)
    foreign = item("I prefer tea.")
    foreign.scope = "telegram:other"
    with pytest.raises(ValueError):
        store.add([foreign])


# ----------------------------------------------------------------- crash safety

_WRITER = """
from pathlib import Path
from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths

store = ScopeItemStore(ScopePaths(Path(sys.argv[1]), "telegram:42"))
store.load()
filler = "x" * 20000
for n in range(5):
    batch = [
        MemoryItem(
            id=f"w{n}-{k}", layer=Layer.EPISODIC, type=ItemType.PROJECT_FACT,
            title="t", content=f"fact {n} {k} {filler}", scope="telegram:42",
            created_at=1740823200.0, updated_at=1740823200.0,
        )
        for k in range(5)
    ]
    if n == 4:
        arm()
    store.add(batch)
"""


@pytest.mark.parametrize(("point", "whole_batches"), [("mid-append", 4), ("after-append", 5)])
def test_a_writer_killed_mid_append_leaves_a_file_that_loads(
    paths: ScopePaths, point: str, whole_batches: int
) -> None:
    run_to_crash(_WRITER, point, str(paths.workspace))

    data = paths.episodic_file(date(2025, 3, 1)).read_bytes()
    torn = point == "mid-append"
    # The kill did land mid-append: the file ends in half a line.
    assert data.endswith(b"\n") is not torn
    # Every whole line loads (the earlier batches and the start of the torn one); the torn
    # line is skipped and counted.
    whole_lines = {orjson.loads(line)["id"] for line in data.split(b"\n")[:-1]}
    earlier = {f"w{n}-{k}" for n in range(whole_batches) for k in range(5)}
    assert earlier <= whole_lines
    assert len(whole_lines) < 25 if torn else whole_lines == earlier
    store = open_store(paths)
    assert set(store.items) == whole_lines
    assert store.stats().skipped_lines == (1 if torn else 0)
    # What comes next is kept whole after the torn line, not glued to it.
    store.add([item("after the crash", at=DAY1)])
    assert "after the crash" in {i.content for i in open_store(paths).items.values()}


def test_a_reload_keeps_the_newest_episodes_at_the_end_of_the_store(paths: ScopePaths) -> None:
    # The pack looks for recent context at the newest end of the store's dict only; after
    # a restart, durable items (loaded from their own files) must not bury the episodes.
    store = open_store(paths)
    for day in range(3):
        episodes = store.add(
            [item(f"day {day} turn {n}", at=DAY1 + day * 86_400 + n) for n in range(3)]
        )
        store.promote(episodes[0].id)
    reloaded = open_store(paths)
    assert [i.content for i in reloaded.items.values()][-3:] == [
        "day 2 turn 0",
        "day 2 turn 1",
        "day 2 turn 2",
    ]
    assert reloaded.items.keys() == store.items.keys()


# A few texts, so adds repeat (merge) and forgets hit items that were merged into.
_TEXTS = ["likes tea", "works at Acme", "lives in Paris", "has a cat", "Likes  TEA"]
writes = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "update", "forget", "remove", "promote"]),
        st.integers(0, 40),
        st.sampled_from(_TEXTS),
        st.integers(0, 3),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(writes)
def test_a_reload_holds_what_the_writes_left_in_memory(steps: list[tuple]) -> None:
    """Whatever mix of adds, merges, edits, forgets and promotions was written, reading
    the files again (read, admit, index) gives the items, tombstones and fingerprints the
    store held, the newest episodes last."""
    with tempfile.TemporaryDirectory() as directory:
        paths = ScopePaths(Path(directory), SCOPE)
        index = SetIndex()
        store = ScopeItemStore(paths, index=index, terms=words, clock=lambda: DAY2)
        for operation, number, text, day in steps:
            item_id = f"i{number}"
            # An id keeps its layer: a third of them are durable facts.
            layer = Layer.SEMANTIC if number % 3 == 0 else Layer.EPISODIC
            if operation == "add":
                store.add([item(text, layer=layer, at=DAY1 + day * 86_400, item_id=item_id)])
            elif operation == "update" and item_id in store.items:
                with contextlib.suppress(ValueError):  # forgotten or held by another item
                    store.update(item_id, content=f"{text} now")
            elif operation == "forget":
                store.forget(item_id)
            elif operation == "remove" and store.items:
                store.remove(item_id, merged_into=next(iter(store.items)))
            elif operation == "promote":
                store.promote(item_id)
        reloaded_index = SetIndex()
        reloaded = ScopeItemStore(paths, index=reloaded_index, terms=words)
        reloaded.load()
        as_json = {i: it.to_json_dict() for i, it in store.items.items()}
        assert {i: it.to_json_dict() for i, it in reloaded.items.items()} == as_json
        assert reloaded_index.docs == index.docs
        assert reloaded.stats().tombstones == store.stats().tombstones
        assert set(reloaded.durable_ids) == set(store.durable_ids)
        for probe in store.items.values():
            assert not reloaded.is_forgotten(probe)
        episodes = [it for it in reloaded.items.values() if it.layer is Layer.EPISODIC]
        assert list(reloaded.items.values())[len(reloaded.items) - len(episodes) :] == episodes
        # In the order their last lines were written, file by file (days in order).
        last_written: dict[str, None] = {}
        for path in paths.item_files():
            for line in file_lines(path):
                record_id = orjson.loads(line)["id"]
                last_written.pop(record_id, None)
                last_written[record_id] = None
        live = [i for i in last_written if i in reloaded.items]
        assert [it.id for it in episodes] == [
            i for i in live if reloaded.items[i].layer is Layer.EPISODIC
        ]
        # Each item is found by its fingerprint: the same text again merges into it.
        for live in list(reloaded.items.values()):
            [merged] = reloaded.add([replace(live, id=live.id + "-again")])
            assert merged.id == live.id
