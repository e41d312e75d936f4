"""What a consolidation run reads: the watermark, and the new notes and facts past it.

The watermark (`memory/<scope>/.consolidation_state`) holds how many bytes of each daily
note were read and the time of the newest durable item read; `gather_new_material` takes
what came after it, oldest first, within a token budget, so a run split over several model
calls reads on from where the last accepted call stopped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.tokens import estimate_tokens
from mnemobot.memory.notes.memory_rewrite import NEW_FACTS_LABEL, NEW_NOTES_LABEL
from mnemobot.memory.store.items import (
    Layer,
    MemoryItem,
    how_item_stated,
    normalize_content,
)
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts, is_forgotten_mark

log = logging.getLogger(__name__)

STATE_FILE_NAME = ".consolidation_state"
NOTHING_FORGOTTEN = ForgottenTexts()


# ----------------------------------------------------------------------------- state


@dataclass(slots=True)
class ConsolidationState:
    """The watermark: bytes of each daily note already read, newest durable item read."""

    note_offsets: dict[str, int] = field(default_factory=dict)
    items_after: float = 0.0
    last_rewrite_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "noteOffsets": self.note_offsets,
            "itemsAfter": self.items_after,
            "lastRewriteAt": self.last_rewrite_at,
        }


def state_path(paths: ScopePaths) -> Path:
    return paths.directory / STATE_FILE_NAME


def load_state(paths: ScopePaths) -> ConsolidationState:
    """The scope's watermark; a missing or unreadable file means "read everything"."""
    try:
        data = orjson.loads(state_path(paths).read_bytes())
        offsets = {str(k): int(v) for k, v in dict(data.get("noteOffsets") or {}).items()}
        last = data.get("lastRewriteAt")
        return ConsolidationState(
            offsets, float(data.get("itemsAfter") or 0.0), float(last) if last else None
        )
    except FileNotFoundError:
        return ConsolidationState()
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
        log.warning(
            "%s of %s is unreadable (%s); reading everything again",
            STATE_FILE_NAME,
            paths.scope,
            exc,
        )
        return ConsolidationState()


def save_state(paths: ScopePaths, state: ConsolidationState) -> None:
    write_atomic(state_path(paths), orjson.dumps(state.to_json(), option=orjson.OPT_INDENT_2))


# ----------------------------------------------------------------------------- input


@dataclass(slots=True)
class NewMaterial:
    """What a run reads, and the watermark to save once its rewrite is accepted."""

    note_lines: list[str]
    items: list[MemoryItem]
    next_state: ConsolidationState

    @property
    def is_empty(self) -> bool:
        return not self.note_lines and not self.items

    def render(self) -> str:
        parts = []
        if self.note_lines:
            parts.append(f"{NEW_NOTES_LABEL}\n" + "\n".join(self.note_lines))
        if self.items:
            facts = [
                f"- [{i.type.value.lower()}, {how_item_stated(i)}] {_one_line(i.content)}"
                for i in self.items
            ]
            parts.append(f"{NEW_FACTS_LABEL}\n" + "\n".join(facts))
        return "\n\n".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())


_NOTE_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")


def gather_new_material(
    paths: ScopePaths,
    state: ConsolidationState,
    load_items: Callable[[], Iterable[MemoryItem]],
    budget_tokens: int,
    forgotten: ForgottenTexts = NOTHING_FORGOTTEN,
) -> NewMaterial:
    """Note lines and durable items newer than the watermark, oldest first, within budget.

    Only whole lines are read (a line being appended is left for the next run); what does
    not fit the budget waits for the next run. What is `forgotten` (waiting for erasure)
    and the marks left by erased lines are passed over, as read.
    """
    next_state = ConsolidationState(
        dict(state.note_offsets), state.items_after, state.last_rewrite_at
    )
    notes = []
    if paths.directory.is_dir():
        notes = sorted(p for p in paths.directory.iterdir() if _NOTE_FILE.match(p.name))
    # Notes moved to the archive are done with: forget their offsets.
    names = {p.name for p in notes}
    next_state.note_offsets = {k: v for k, v in state.note_offsets.items() if k in names}
    grown = any(p.stat().st_size > state.note_offsets.get(p.name, 0) for p in notes)
    if not grown:
        return NewMaterial([], [], next_state)
    used = 0
    full = False
    lines: list[str] = []
    for note in notes:
        data = note.read_bytes()
        offset = state.note_offsets.get(note.name, 0)
        if offset > len(data):
            # The note was rewritten shorter (a forgotten line redacted): read it again.
            offset = 0
        elif offset and data[offset - 1 : offset] != b"\n":
            # Rewritten, and the old offset now falls inside a line: go on at the next one.
            offset = data.find(b"\n", offset) + 1 or len(data)
        position = offset
        for raw in data[offset : data.rfind(b"\n") + 1].split(b"\n")[:-1]:
            line = raw.decode("utf-8", errors="replace").strip()
            is_text = (
                bool(line)
                and not line.startswith("# ")
                and not is_forgotten_mark(line)
                and not forgotten.holds(line)
            )
            cost = estimate_tokens(line) + 1
            if is_text and used + cost > budget_tokens and used > 0:
                full = True
                break
            position += len(raw) + 1
            if is_text:
                lines.append(f"{note.stem} {line}")
                used += cost
        next_state.note_offsets[note.name] = position
        if full:
            break
    taken: list[MemoryItem] = []
    if full:
        return NewMaterial(lines, taken, next_state)
    notes_text = normalize_content("\n".join(lines))
    fresh = sorted(
        (
            i
            for i in load_items()
            if i.layer is not Layer.EPISODIC and i.updated_at > state.items_after
        ),
        key=lambda i: i.updated_at,
    )
    boundary: float | None = None
    for item in fresh:
        cost = estimate_tokens(item.content) + 4
        if used + cost > budget_tokens and used > 0:
            boundary = item.updated_at
            break
        if forgotten.holds(item.content):
            continue
        if normalize_content(item.content) not in notes_text:  # flushed facts are notes too
            taken.append(item)
            used += cost
    consumed = [i for i in fresh if boundary is None or i.updated_at < boundary]
    # Items sharing the cut's timestamp all wait for the next run, so none is skipped.
    taken = [i for i in taken if boundary is None or i.updated_at < boundary]
    if consumed:
        next_state.items_after = consumed[-1].updated_at
    return NewMaterial(lines, taken, next_state)
