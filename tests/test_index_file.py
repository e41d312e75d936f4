"""A scope's BM25 index saved beside its items (`items/index.bin`): read back instead of
tokenizing every item, and never trusted when the JSONL files say otherwise."""

from __future__ import annotations

import contextlib
import gc
import os
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.store import index_file
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import ScopeItemStore, indexed_text, is_indexed
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.text.terms import terms, terms_identity, terms_joined
from tests.crash_points import run_to_crash

SCOPE = "telegram:7"
AT = 1_740_823_200.0  # 2025-03-01
QUESTIONS = (
    "Where did Caroline go hiking?",
    "pip install failed",
    "pottery class on Tuesday",
    "Kyoto trip with Jon",
    "what about the dog",
)
_TEXTS = (
    "Caroline went hiking in the Alps with Jon",
    "pip install failed with ModuleNotFoundError, fixed by pinning requests",
    "Melanie signed up for a pottery class on Tuesday evenings",
    "We planned a trip to Kyoto in the spring, mostly for the temples",
    "The dog chewed the garden hose again",
    "Caroline prefers tea over coffee in the morning",
)


def make_item(number: int, text: str | None = None, *, day: int = 0) -> MemoryItem:
    content = text or f"{_TEXTS[number % len(_TEXTS)]} (note {number})"
    at = AT + day * 86_400 + number
    return MemoryItem(
        id=f"i{number}",
        layer=Layer.SEMANTIC if number % 5 == 0 else Layer.EPISODIC,
        type=ItemType.PROJECT_FACT,
        title=content[:30],
        content=content,
        scope=SCOPE,
        created_at=at,
        updated_at=at,
        tags=["speaker:caroline"] if number % 2 else ["travel"],
    )


def open_store(paths: ScopePaths, *, min_items: int = 1) -> ScopeItemStore:
    """A store as the bot opens one, keeping its index file from `min_items` items."""
    store = ScopeItemStore(
        paths,
        index=BM25Index(),
        terms=terms,
        terms_joined=terms_joined,
        terms_identity=terms_identity(),
        index_file_min_items=min_items,
    )
    store.load()
    return store


def rebuilt_scores(paths: ScopePaths) -> list[dict[str, float]]:
    """What an index built from the JSONL alone scores for each question (the truth)."""
    plain = ScopeItemStore(paths)
    plain.load()
    index = BM25Index()
    index.add_many(
        (item.id, terms(indexed_text(item))) for item in plain.items.values() if is_indexed(item)
    )
    return [index.scores(terms(question)) for question in QUESTIONS]


def scores_of(store: ScopeItemStore) -> list[dict[str, float]]:
    index = store._index
    assert isinstance(index, BM25Index)
    return [index.scores(terms(question)) for question in QUESTIONS]


def same_scores(first: list[dict[str, float]], second: list[dict[str, float]]) -> bool:
    return all(
        a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-12) for k in a)
        for a, b in zip(first, second, strict=True)
    )


@pytest.fixture
def paths(tmp_path: Path) -> ScopePaths:
    return ScopePaths(tmp_path, SCOPE)


def wait_until_sure(paths: ScopePaths) -> None:
    """Wait until every item file is older than the window in which the index records it
    as unsure (so the next index file trusts an unchanged size, mtime and ctime)."""
    files = paths.item_files()
    deadline = time.monotonic() + 10 * index_file._UNSURE_SECONDS
    while any(time.time() - p.stat().st_ctime < index_file._UNSURE_SECONDS for p in files):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_big_scope_saves_its_index_and_the_next_load_reads_it(paths: ScopePaths) -> None:
    writer = open_store(paths)
    writer.add([make_item(n, day=n % 3) for n in range(40)])
    assert not paths.index_file.exists()

    first = open_store(paths)
    # The load built the index from the items and saved it beside them.
    assert first.index_load is not None and first.index_load.built
    assert paths.index_file.exists()
    second = open_store(paths)
    assert second.index_load is not None and not second.index_load.built
    assert second.index_load.read_anew == 0
    assert same_scores(scores_of(second), rebuilt_scores(paths))
    # A small scope keeps no index file: its JSONL loads fast enough.
    other = ScopePaths(paths.workspace, "telegram:8")
    open_store(other).add([replace(make_item(n), scope=other.scope) for n in range(5)])
    open_store(other, min_items=100)
    assert not other.index_file.exists()


def test_a_scope_with_items_kept_out_of_the_word_index_saves_and_reads_it(
    paths: ScopePaths,
) -> None:
    # The days' digests are items the word index leaves out: the index file then names
    # the index's documents apart from the items, and is saved all the same.
    digest = replace(
        make_item(90, "2025-03-01: Caroline hiking; the Kyoto trip; pip install fixed"),
        type=ItemType.DIGEST,
        layer=Layer.SEMANTIC,
    )
    open_store(paths).add([*(make_item(n) for n in range(30)), digest])
    open_store(paths)
    reloaded = open_store(paths)
    assert reloaded.index_load is not None and not reloaded.index_load.built
    assert reloaded.items["i90"].type is ItemType.DIGEST
    assert "i90" not in reloaded._index  # type: ignore[operator]
    assert same_scores(scores_of(reloaded), rebuilt_scores(paths))


def test_what_was_written_since_the_save_is_indexed_on_top(paths: ScopePaths) -> None:
    open_store(paths).add([make_item(n, day=n % 3) for n in range(40)])
    open_store(paths)  # saves the index
    saved = paths.index_file.read_bytes()
    store = open_store(paths)
    store.add([make_item(n, day=4) for n in range(40, 46)])
    store.update("i3", content="Caroline went to Kyoto instead of hiking")
    store.forget("i7")
    store.remove("i9", merged_into="i3")

    reloaded = open_store(paths)
    assert reloaded.index_load is not None and not reloaded.index_load.built
    # Only the six new items and the edited one were read and tokenized again.
    assert reloaded.index_load.read_anew == 7
    assert paths.index_file.read_bytes() == saved  # too few to save the file again
    assert same_scores(scores_of(reloaded), rebuilt_scores(paths))
    assert "i7" not in reloaded._index and "i9" not in reloaded._index  # type: ignore[operator]


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """A person's edit: same inode, same size, mtime set back as `touch -r` would."""
    assert len(old) == len(new)
    before = path.stat()
    data = path.read_bytes()
    assert old in data
    with open(path, "r+b") as handle:
        handle.write(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def test_an_edited_jsonl_is_noticed_even_with_its_mtime_set_back(paths: ScopePaths) -> None:
    open_store(paths).add([make_item(n) for n in range(20)])
    wait_until_sure(paths)
    open_store(paths)  # saves the index, trusting the files' times
    [semantic] = [p for p in paths.item_files() if p.name == "semantic.jsonl"]

    _edit_in_place(semantic, b"hiking in the Alps", b"sailing on a lake!")

    reloaded = open_store(paths)
    assert reloaded.index_load is not None and reloaded.index_load.built
    hits = BM25Index.top(reloaded._index, terms("sailing lake"), 3)  # type: ignore[arg-type]
    assert "i0" in hits
    assert same_scores(scores_of(reloaded), rebuilt_scores(paths))
    # The file was saved anew: the load after it reads it again.
    assert not open_store(paths).index_load.built  # type: ignore[union-attr]


def test_a_rewritten_or_shortened_jsonl_makes_the_index_stale(paths: ScopePaths) -> None:
    open_store(paths).add([make_item(n) for n in range(20)])
    open_store(paths)
    episodes = paths.episodic_file(datetime.fromtimestamp(AT, UTC).date())
    lines = episodes.read_bytes().splitlines(keepends=True)
    # An editor's save: a new file in its place, one line dropped.
    replacement = episodes.with_suffix(".new")
    replacement.write_bytes(b"".join(lines[1:]))
    os.replace(replacement, episodes)
    dropped = orjson.loads(lines[0])["id"]

    reloaded = open_store(paths)
    assert reloaded.index_load is not None and reloaded.index_load.built
    assert dropped not in reloaded.items and dropped not in reloaded._index  # type: ignore[operator]
    assert same_scores(scores_of(reloaded), rebuilt_scores(paths))


@pytest.mark.parametrize("damage", ["cut in half", "garbage", "other rules", "bad arrays"])
def test_a_torn_or_foreign_index_file_is_ignored_and_rebuilt(
    paths: ScopePaths, damage: str
) -> None:
    open_store(paths).add([make_item(n) for n in range(30)])
    open_store(paths)
    whole = paths.index_file.read_bytes()
    if damage == "cut in half":
        paths.index_file.write_bytes(whole[: len(whole) // 2])
    elif damage == "garbage":
        paths.index_file.write_bytes(os.urandom(len(whole)))
    elif damage == "other rules":
        paths.index_file.unlink()
        ScopeItemStore(
            paths,
            index=BM25Index(),
            terms=terms,
            terms_identity="older rules",
            index_file_min_items=1,
        ).load()
        assert paths.index_file.exists()
    else:
        # Whole and checksummed, but the first document's terms run past the end.
        header_len = int.from_bytes(whole[12:16], "little")
        header = orjson.loads(whole[32 : 32 + header_len])
        start, _dtype, _count = header["arrays"]["doc_ptr"]
        broken = bytearray(whole)
        broken[start + 8 : start + 16] = (10**12).to_bytes(8, "little")
        paths.index_file.write_bytes(bytes(broken))

    reloaded = open_store(paths)
    assert reloaded.index_load is not None and reloaded.index_load.built
    assert same_scores(scores_of(reloaded), rebuilt_scores(paths))
    # Saved anew, whole.
    assert not open_store(paths).index_load.built  # type: ignore[union-attr]


_SAVER = """
from pathlib import Path
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.text.terms import terms, terms_identity, terms_joined

store = ScopeItemStore(
    ScopePaths(Path(sys.argv[1]), "telegram:7"), index=BM25Index(), terms=terms,
    terms_joined=terms_joined, terms_identity=terms_identity(), index_file_min_items=1,
)
store.load()
arm()
store.save_index_file()
"""


@pytest.mark.parametrize("point", ["mid-write", "before-replace", "after-replace"])
def test_a_kill_mid_index_save_leaves_a_scope_that_loads_and_answers(
    paths: ScopePaths, point: str
) -> None:
    open_store(paths).add([make_item(n) for n in range(30)])
    store = open_store(paths)  # saves the index
    old = paths.index_file.read_bytes()
    store.add(
        [
            replace(
                make_item(100 + n, f"Jon booked the Kyoto temples tour number {n}"), id=f"late{n}"
            )
            for n in range(8)
        ]
    )
    store.update("i2", content="Melanie quit the pottery class for a Kyoto trip")

    # The saver reads those as lines written since the save, and saves the file anew.
    run_to_crash(_SAVER, point, str(paths.workspace))

    # Old or new, never a mix; no temporary file is taken for the index.
    assert (paths.index_file.read_bytes() == old) is (point != "after-replace")
    reloaded = open_store(paths)
    assert reloaded.index_load is not None and not reloaded.index_load.built
    assert {"late0", "late7", "i2"} <= reloaded.items.keys()
    assert same_scores(scores_of(reloaded), rebuilt_scores(paths))
    kyoto = reloaded._index.top(terms("Kyoto temples tour"), 3)  # type: ignore[union-attr]
    assert set(kyoto) <= {f"late{n}" for n in range(8)}


# A few texts, so adds repeat (merge) and forgets hit items that were merged into.
_STEP_TEXTS = ["likes tea", "works at Acme", "lives in Paris", "has a cat", "Likes  TEA"]
_steps = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "update", "forget", "remove", "promote", "reload"]),
        st.integers(0, 30),
        st.sampled_from(_STEP_TEXTS),
        st.integers(0, 3),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(_steps)
def test_a_load_from_the_index_file_equals_reading_the_files_whole(steps: list[tuple]) -> None:
    """Whatever was written between loads that saved or read the index file, a load from
    it (and the lines written since) holds what reading every line holds: the same items,
    tombstones, durable ids, fingerprints, turns around a turn and BM25 scores."""
    with tempfile.TemporaryDirectory() as directory:
        paths = ScopePaths(Path(directory), SCOPE)
        store = open_store(paths)
        for operation, number, text, day in steps:
            item_id = f"i{number}"
            layer = Layer.SEMANTIC if number % 3 == 0 else Layer.EPISODIC
            kind = ItemType.TURN if number % 3 == 1 else ItemType.PROJECT_FACT
            at = AT + day * 86_400 + number % 4
            if operation == "add":
                fresh = MemoryItem(
                    id=item_id, layer=layer, type=kind, title=text, content=text,
                    scope=SCOPE, created_at=at, updated_at=at,
                )  # fmt: skip
                store.add([fresh])
            elif operation == "update" and item_id in store.items:
                with contextlib.suppress(ValueError):
                    store.update(item_id, content=f"{text} now")
            elif operation == "forget":
                store.forget(item_id)
            elif operation == "remove" and store.items:
                store.remove(item_id, merged_into=next(iter(store.items)))
            elif operation == "promote":
                store.promote(item_id)
            elif operation == "reload":
                store = open_store(paths)
        indexed = open_store(paths)
        if indexed.items:
            # The items stay in their files, read when asked for.
            assert indexed.items.base is not None and paths.index_file.exists()
        plain = ScopeItemStore(paths)
        plain.load()
        as_json = {i: it.to_json_dict() for i, it in plain.items.items()}
        assert {i: it.to_json_dict() for i, it in indexed.items.items()} == as_json
        assert indexed.stats().tombstones == plain.stats().tombstones
        assert indexed.stats().per_layer == plain.stats().per_layer
        assert set(indexed.durable_ids) == set(plain.durable_ids)
        assert same_scores(scores_of(indexed), rebuilt_scores(paths))
        for probe in list(plain.items.values()):
            assert not indexed.is_forgotten(probe)
            assert indexed.timeline.around(probe) == plain.timeline.around(probe)
        for live in list(indexed.items.values()):
            [merged] = indexed.add([replace(live, id=live.id + "-again")])
            assert merged.id == live.id


def test_scopes_loaded_and_dropped_all_day_leave_no_file_open(tmp_path: Path) -> None:
    # A big scope's items are read from their day files, kept open while it is loaded: a
    # bot that loads and drops big scopes all day (more chats than it keeps) must not run
    # out of file descriptors, even when the collector runs late (the bot tunes it so).
    scopes = ScopeRuntime(tmp_path, max_cached_scopes=1, index_file_min_items=1)
    names = ["telegram:1", "telegram:2"]
    for name in names:
        with scopes.loaded(name) as loaded:
            loaded.store.add([replace(make_item(n, day=n), scope=name) for n in range(30)])
        scopes.reload(name)  # saves its index file: its items are now read from their lines
    descriptors = Path("/proc/self/fd")
    before = len(list(descriptors.iterdir()))
    gc.disable()
    try:
        for round_number in range(40):
            name = names[round_number % 2]
            with scopes.loaded(name) as loaded:
                assert loaded.store.items.base is not None
                for number in range(30):
                    assert loaded.store.items[f"i{number}"].scope == name
        assert len(list(descriptors.iterdir())) <= before + 32
    finally:
        gc.enable()
        scopes.close()


def test_durable_items_with_a_tag_are_found_among_those_on_disk(paths: ScopePaths) -> None:
    # What the standing preferences look for after a load: only the durable items tagged
    # so, read from the lines that hold the tag (an item that only says the word is not).
    tagged = replace(make_item(5), tags=["standing"])
    says_it = replace(make_item(10, 'Caroline said "standing" desks help'), tags=[])
    open_store(paths).add([*(make_item(n) for n in range(30) if n not in (5, 10)), tagged, says_it])
    store = open_store(paths)
    assert store.items.base is not None
    assert [item.id for item in store.durable_items("standing")] == ["i5"]
    store.add([replace(make_item(40), tags=["standing"])])
    assert [item.id for item in store.durable_items("standing")] == ["i5", "i40"]
    assert {item.id for item in store.durable_items()} == set(store.durable_ids)


def test_a_big_scopes_items_can_be_walked_twice_like_a_dicts(paths: ScopePaths) -> None:
    # Code that reads `store.items.values()` once to check one thing and again for another
    # (the forget command, a test) must see every item both times, as with a small scope.
    open_store(paths).add([make_item(n, day=n % 3) for n in range(40)])
    store = open_store(paths)
    open_store(paths).add([make_item(40)])
    store.load()
    assert store.items.base is not None and store.items.new
    values, pairs = store.items.values(), store.items.items()
    assert len(list(values)) == len(list(values)) == len(values) == 41
    assert [key for key, _ in pairs] == [item.id for item in values] == list(store.items)
    assert store.items["i3"] in values and ("i3", store.items["i3"]) in pairs
