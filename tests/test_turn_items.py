"""Turn items have their own type, old memory files still read right, and the extraction
confidences are settings of the runtime config."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson

from mnemobot.config.runtime import RuntimeConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning

SCOPE = "telegram:42"
AT = datetime(2025, 3, 1, 10, tzinfo=UTC)


def old_line(item_id: str, item_type: str, content: str, tags: list[str]) -> bytes:
    """An item line as files written before turns had their own type hold it."""
    return orjson.dumps(
        {
            "id": item_id,
            "layer": "EPISODIC",
            "type": item_type,
            "title": content[:80],
            "content": content,
            "scope": SCOPE,
            "tags": tags,
            "references": [f"m-{item_id}"],
            "source": "turn",
            "confidence": 0.65,
            "salience": 0.5,
            "ttlDays": None,
            "createdAt": "2025-03-01T10:00:00Z",
            "updatedAt": "2025-03-01T10:00:00Z",
            "lastAccessedAt": None,
            "fingerprint": f"fp-{item_id}",
        }
    )


def test_a_turn_is_recorded_as_a_turn(workspace: Path) -> None:
    memory = WorkspaceMemory.open(workspace)
    recorded = memory.record.record_turn(
        scope=SCOPE,
        user_text="I'm working on the parser rewrite.",
        assistant_text="Good luck with it!",
        at=AT.timestamp(),
        config=RuntimeConfig().memory,
        tz=UTC,
    )
    assert [item.type for item in recorded.stored] == [ItemType.TURN, ItemType.TASK_STATE]
    assert "turn" in recorded.stored[0].tags
    stored = ScopePaths(workspace, SCOPE).episodic_file(AT.date()).read_bytes()
    assert b'"type":"TURN"' in stored


def test_a_turn_written_before_the_turn_type_loads_as_a_turn(workspace: Path) -> None:
    episodes = ScopePaths(workspace, SCOPE).episodic_file(AT.date())
    episodes.parent.mkdir(parents=True)
    episodes.write_bytes(
        old_line("t1", "TASK_STATE", "Ana: we repainted the boat on Saturday", ["turn"])
        + b"\n"
        + old_line("k1", "TASK_STATE", "Ana: I still need to sand the mast", ["task"])
        + b"\n"
    )
    memory = WorkspaceMemory.open(workspace)
    store = memory.scopes.store(SCOPE)
    turn, task = store.get("t1"), store.get("k1")
    assert turn is not None and task is not None
    assert turn.type is ItemType.TURN
    assert turn.fingerprint == "fp-t1"  # tombstones naming the old fingerprint still match
    assert task.type is ItemType.TASK_STATE

    pack = memory.recall.build_pack(
        SCOPE, "boat mast", now=AT.timestamp() + 60, config=RuntimeConfig().memory, tz=UTC
    )
    assert "- 2025-03-01: Ana: we repainted the boat on Saturday\n" in pack.rendered
    assert "- 2025-03-01: Task: Ana: I still need to sand the mast\n" in pack.rendered

    assert memory.forget.forget(SCOPE, "t1") == ["t1"]
    assert WorkspaceMemory.open(workspace).scopes.store(SCOPE).get("t1") is None


def test_extraction_confidences_come_from_the_service_tuning(workspace: Path) -> None:
    rule = "Never push to main on Fridays."
    default = RuntimeConfig().memory
    assert DEFAULT_EXTRACTION.constraint_confidence == 0.85
    assert DEFAULT_EXTRACTION.turn_confidence == 0.65

    trusted = WorkspaceMemory.open(workspace).record.record_turn(
        scope="telegram:1",
        user_text=rule,
        assistant_text="",
        at=AT.timestamp(),
        config=default,
        tz=UTC,
    )
    assert [item.layer for item in trusted.promoted] == [Layer.SEMANTIC]
    cautious = ExtractionTuning(constraint_confidence=0.7, turn_confidence=0.5)
    doubted = WorkspaceMemory.open(workspace, extraction=cautious).record.record_turn(
        scope="telegram:2",
        user_text=rule,
        assistant_text="",
        at=AT.timestamp(),
        config=default,
        tz=UTC,
    )
    assert doubted.promoted == []
    assert [item.confidence for item in doubted.stored] == [0.5, 0.7]
