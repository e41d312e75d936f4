"""Consolidation: merge what a scope learned since the last run into its MEMORY.md.

A run reads the scope's daily-note lines and durable items written since its watermark
(`memory/<scope>/.consolidation_state`) plus the current `MEMORY.md`, asks the model to
merge, deduplicate and trim them into a new `MEMORY.md` under a size cap, and names the
previous entries it replaced in a `## Superseded` section. The rewrite is accepted only if
it passes the loss guard (memory.memory_rewrite); then the old file goes to the archive,
the new one replaces it atomically and the watermark moves past what was read. A rejected
or failed run changes nothing, so the next run reads the same material again.

Episodic turn items are not read: every turn is also a daily-note line, which is what the
model sees of it (shorter, so a run costs fewer tokens). Durable items are loaded only when
the notes have grown since the last run: every way a fact is learned (a turn, the memory
tool within a turn, a compaction's flush) writes a note line, so an idle scope costs a few
file stats, not a load of its items. The caller holds the scope's maintenance lock; the
model is reached through `complete`, passed in from above, and this never runs inside a
turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from mnemobot.config.runtime import ConsolidationConfig
from mnemobot.memory.atomic_file import write_atomic
from mnemobot.memory.items import Layer, MemoryItem, normalize_content
from mnemobot.memory.memory_rewrite import (
    NO_CHANGE,
    SUPERSEDED_HEADING,
    check_rewrite,
    entries,
    parse_rewrite,
)
from mnemobot.memory.memory_versions import archive_version, memory_file_lock, read_memory_text
from mnemobot.memory.scope_paths import ScopePaths
from mnemobot.memory.tokens import estimate_tokens

log = logging.getLogger(__name__)

STATE_FILE_NAME = ".consolidation_state"
# The model is told the cap in characters: models count those better than tokens.
CHARS_PER_TOKEN = 4
# A MEMORY.md this many times over the cap was pasted by hand: a rewrite of it would need
# a prompt far beyond the budget, so the run is skipped and the operator told.
OVERSIZED_FACTOR = 3

INSTRUCTIONS = f"""You maintain the long-term memory file (MEMORY.md) of one chat between \
a user and an assistant. You get the current MEMORY.md and what was said or learned since \
it was last written. Write the new MEMORY.md:
- Merge the new facts in; keep every old fact that is still true.
- Deduplicate, and when a new fact replaces an old one (the user moved, changed their \
mind, a plan changed), keep only the current fact; you may add "(earlier: ...)".
- One short self-contained bullet per fact ("- "), grouped under "## " headings such as \
## About the user, ## Preferences, ## People, ## Projects and decisions, ## How-tos.
- Leave out small talk and anything that will not matter in a few weeks.
- At most {{max_chars}} characters in total; trim the least useful facts first.
After the new file, add a last section "{SUPERSEDED_HEADING}" listing, one "- " bullet \
each, every bullet of the current MEMORY.md you removed or replaced (write "- none" if \
none). Answer with the file only, no code fences, no comments. If nothing new is worth \
keeping and the current file needs no change, answer exactly {NO_CHANGE}."""


class CompleteText(Protocol):
    """One model call: instructions and material in, the answer's text out.

    Raises any exception on failure (a timeout, an error, an answer cut off); the message
    is logged as the reason the run was dropped.
    """

    def __call__(self, instructions: str, material: str) -> str: ...


# (scope, superseded entries): handed the entries a rewrite replaced, so the item store
# can mark the matching facts as no longer valid.
SupersededHook = Callable[[str, list[str]], None]


def ignore_superseded(scope: str, entries: list[str]) -> None:
    """The default SupersededHook: nothing to mark."""


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
            parts.append("NEW CONVERSATION NOTES:\n" + "\n".join(self.note_lines))
        if self.items:
            facts = [f"- [{i.type.value.lower()}] {_one_line(i.content)}" for i in self.items]
            parts.append("NEW FACTS:\n" + "\n".join(facts))
        return "\n\n".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())


_NOTE_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")


def gather_new_material(
    paths: ScopePaths,
    state: ConsolidationState,
    load_items: Callable[[], Iterable[MemoryItem]],
    budget_tokens: int,
) -> NewMaterial:
    """Note lines and durable items newer than the watermark, oldest first, within budget.

    Only whole lines are read (a line being appended is left for the next run); what does
    not fit the budget waits for the next run.
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
            is_text = bool(line) and not line.startswith("# ")
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
        if normalize_content(item.content) not in notes_text:  # flushed facts are notes too
            taken.append(item)
            used += cost
    consumed = [i for i in fresh if boundary is None or i.updated_at < boundary]
    # Items sharing the cut's timestamp all wait for the next run, so none is skipped.
    taken = [i for i in taken if boundary is None or i.updated_at < boundary]
    if consumed:
        next_state.items_after = consumed[-1].updated_at
    return NewMaterial(lines, taken, next_state)


# ----------------------------------------------------------------------------- run


@dataclass(frozen=True, slots=True)
class ConsolidationOutcome:
    """What a run did, as the one line maintenance logs and prints."""

    changed: bool
    line: str
    rejected: bool = False
    superseded: tuple[str, ...] = ()


def consolidate_scope(
    paths: ScopePaths,
    *,
    complete: CompleteText,
    config: ConsolidationConfig,
    items: Callable[[], Iterable[MemoryItem]],
    now: float,
    on_superseded: SupersededHook = ignore_superseded,
) -> ConsolidationOutcome:
    """One consolidation run of `paths.scope` (the caller holds its maintenance lock).

    `items` returns the scope's items; it is called only when there is something new.
    """
    max_chars = config.max_tokens * CHARS_PER_TOKEN
    memory_file = paths.memory_file
    previous_bytes = memory_file.read_bytes() if memory_file.is_file() else b""
    if len(previous_bytes) > max_chars * OVERSIZED_FACTOR * 4:
        return ConsolidationOutcome(
            False,
            f"skipped: MEMORY.md is far over the cap ({len(previous_bytes)} bytes); "
            "trim it by hand or raise memory.consolidation.maxTokens",
            rejected=True,
        )
    previous = read_memory_text(memory_file, max_chars * OVERSIZED_FACTOR)
    state = load_state(paths)
    material = gather_new_material(paths, state, items, config.max_input_tokens)
    if material.is_empty:
        return ConsolidationOutcome(False, "nothing new since the last run")
    prompt = f"CURRENT MEMORY.md:\n{previous.strip() or '(empty)'}\n\n{material.render()}"
    instructions = INSTRUCTIONS.format(max_chars=max_chars)
    try:
        answer = complete(instructions, prompt)
    except Exception as exc:  # any failure of the call: nothing changes, next run retries
        return ConsolidationOutcome(False, f"rejected: {_reason(exc)}", rejected=True)
    rewrite = parse_rewrite(answer)
    read_what = f"{len(material.note_lines)} note lines, {len(material.items)} facts"
    if rewrite.no_change:
        save_state(paths, material.next_state)
        return ConsolidationOutcome(False, f"read {read_what}; nothing worth keeping")
    reason = check_rewrite(previous, rewrite, config)
    if reason is not None:
        return ConsolidationOutcome(False, f"rejected: {reason}", rejected=True)
    new_text = rewrite.memory.rstrip() + "\n"
    with memory_file_lock(memory_file):
        current = memory_file.read_bytes() if memory_file.is_file() else b""
        if current != previous_bytes:
            if not current.startswith(previous_bytes):
                return ConsolidationOutcome(
                    False,
                    "rejected: MEMORY.md was edited during the run; retrying next time",
                    rejected=True,
                )
            # Lines the memory tool appended meanwhile: keep them after the rewrite.
            appended = current[len(previous_bytes) :].decode("utf-8", errors="replace")
            new_text = new_text + appended.strip() + "\n"
        if current:
            archive_version(paths, current, now, keep=config.keep_versions)
        write_atomic(memory_file, new_text.encode())
    material.next_state.last_rewrite_at = now
    save_state(paths, material.next_state)
    if rewrite.superseded:
        on_superseded(paths.scope, list(rewrite.superseded))
    return ConsolidationOutcome(
        True,
        f"rewrote MEMORY.md from {read_what} ({len(entries(previous))} -> "
        f"{len(entries(new_text))} entries, {len(rewrite.superseded)} superseded)",
        superseded=tuple(rewrite.superseded),
    )


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())[:300]
