"""Consolidation: merge what a scope learned since the last run into its MEMORY.md.

A run reads the scope's daily-note lines and durable items written since its watermark
(`memory/<scope>/.consolidation_state`) plus the current `MEMORY.md`, asks the model to
merge, deduplicate and trim them into a new `MEMORY.md` under a size cap, and names the
previous entries it replaced in a `## Superseded` section. The rewrite is accepted only if
it passes the loss guard (memory.memory_rewrite); then the old file goes to the archive,
the new one replaces it atomically and the watermark moves past what was read. A rejected
or failed run changes nothing, so the next run reads the same material again.

A small local model cannot take the whole of it at once: each call is sized to the
context window of the model it goes to (`model.call_budget`), and new material
that does not fit is split over several calls, each a rewrite of the file the call before
it wrote (the run archives the file it started from once). Texts forgotten and waiting
for erasure are never read, neither in the notes and facts nor in MEMORY.md itself.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.counts import counted
from mnemobot.base.tokens import estimate_tokens, max_chars
from mnemobot.memory.notes.memory_rewrite import (
    CURRENT_FILE_LABEL,
    EMPTY_FILE_MARK,
    NO_CHANGE,
    SUPERSEDED_HEADING,
    check_rewrite,
    entries,
    parse_rewrite,
)
from mnemobot.memory.notes.memory_versions import (
    archive_version,
    memory_file_lock,
    read_memory_text,
)
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.consolidation_input import (
    NOTHING_FORGOTTEN,
    NewMaterial,
    gather_new_material,
    load_state,
    save_state,
)
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.model.call_budget import (
    MAX_SHRINKS,
    MIN_MATERIAL_TOKENS,
    SHRINK_AFTER_OVERFLOW,
    rewrite_budget,
)

log = logging.getLogger(__name__)

# A MEMORY.md this many times over the cap was pasted by hand: a rewrite of it would need
# a prompt far beyond the budget, so the run is skipped and the operator told.
OVERSIZED_FACTOR = 3
# Largest MEMORY.md a rewrite may produce, in estimated tokens (the model is told about 4
# characters per token); a longer rewrite is rejected. Not measured; twice what a prompt
# shows of it by default (memory.scopeMemoryBudgetTokens, 2000), so the file can keep
# more than one prompt needs (`mnemobot bench consolidation` reports a run's cost).
MEMORY_MAX_TOKENS = 4_000
# New notes and facts one run reads at most (oldest first); the rest waits for the next
# run. Not measured; three times the file, enough for six hours of a busy chat.
MAX_INPUT_TOKENS = 12_000
# Sampling temperature of the rewrite: low, it must not invent.
TEMPERATURE = 0.2

INSTRUCTIONS = f"""You maintain the long-term memory file (MEMORY.md) of one chat between \
a user and an assistant. You get the current MEMORY.md and what was said or learned since \
it was last written. Lines "Noted from the conversation" and facts marked "noted" are \
the assistant's own notes, not the user's words: never write them as something the user \
said. Write the new MEMORY.md:
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


# (scope, superseded entries, the run's time): handed the entries a rewrite replaced, so
# the item store can mark the matching facts as no longer valid from then on.
SupersededHook = Callable[[str, list[str], float], None]


def ignore_superseded(scope: str, entries: list[str], at: float) -> None:
    """The default SupersededHook: nothing to mark."""


# ----------------------------------------------------------------------------- run


@dataclass(frozen=True, slots=True)
class ConsolidationOutcome:
    """What a run did, as the one line maintenance logs and prints."""

    changed: bool
    line: str
    rejected: bool = False
    superseded: tuple[str, ...] = ()


class PutAside(Exception):
    """Raised by a `CompleteText` whose call gave way to a user's reply (a model server
    with few slots): not a failure; the run stops and the next one does the work."""


# The line of a run (or step) that gave way: an ordinary event, logged as such.
PUT_ASIDE_LINE = "put aside for a user's reply; done again at the next run"


class PromptTooLarge(Exception):
    """Raised by a `CompleteText` when the model refused the request as longer than its
    context window; the run then sends less material and tries again."""


# Answer tokens for the "## Superseded" list, on top of the file itself.
SUPERSEDED_ANSWER_TOKENS = 1_000
# Most model calls one run makes when the new material is split to fit a small window;
# what is left waits for the next run.
MAX_CALLS_PER_RUN = 24


@dataclass(slots=True)
class _RunTally:
    calls: int = 0
    rewrites: int = 0
    note_lines: int = 0
    facts: int = 0
    superseded: list[str] = field(default_factory=list)
    first_entries: int = 0
    archived: bool = False

    def read_what(self) -> str:
        calls = f" in {self.calls} calls" if self.calls > 1 else ""
        return f"{counted(self.note_lines, 'note line')}, {counted(self.facts, 'fact')}{calls}"


def consolidate_scope(
    paths: ScopePaths,
    *,
    complete: CompleteText,
    items: Callable[[], Iterable[MemoryItem]],
    now: float,
    on_superseded: SupersededHook = ignore_superseded,
    forgotten: Callable[[], ForgottenTexts] = lambda: NOTHING_FORGOTTEN,
    window: Callable[[], int | None] = lambda: None,
) -> ConsolidationOutcome:
    """One consolidation run of `paths.scope` (the caller holds its maintenance lock).

    `items` returns the scope's items; it is called only when there is something new.
    `forgotten` returns the texts waiting for erasure: they are never read. `window` returns
    the context window of the model `complete` calls, if known: each call is sized to it
    and the new material split over several calls when it does not fit one
    (`model.call_budget`); without it the built-in sizes stand.
    """
    memory_file = paths.memory_file
    previous_bytes = memory_file.read_bytes() if memory_file.is_file() else b""
    full_chars = max_chars(MEMORY_MAX_TOKENS)
    if len(previous_bytes) > full_chars * OVERSIZED_FACTOR * 4:
        return ConsolidationOutcome(
            False,
            f"skipped: MEMORY.md is far over the cap ({len(previous_bytes)} bytes); "
            "trim it by hand",
            rejected=True,
        )
    tally = _RunTally()
    left = MAX_INPUT_TOKENS
    shrink = 1.0
    state = load_state(paths)
    while tally.calls < MAX_CALLS_PER_RUN and left > 0:
        skipped = forgotten()
        previous_bytes = memory_file.read_bytes() if memory_file.is_file() else b""
        previous = skipped.keep_lines(read_memory_text(memory_file, full_chars * OVERSIZED_FACTOR))
        if tally.calls == 0:
            tally.first_entries = len(entries(previous))
        instructions = INSTRUCTIONS.format(max_chars=full_chars)
        window_tokens = window()
        budget = rewrite_budget(
            window_tokens=window_tokens,
            cap_tokens=MEMORY_MAX_TOKENS,
            max_material_tokens=left,
            fixed_prompt_tokens=estimate_tokens(instructions) + estimate_tokens(previous) + 16,
            answer_extra_tokens=SUPERSEDED_ANSWER_TOKENS,
        )
        if budget is None:
            return _finish(
                paths,
                tally,
                f"skipped: the model's {window_tokens}-token window leaves no room for new notes "
                f"beside MEMORY.md (~{estimate_tokens(previous)} tokens); trim MEMORY.md or "
                "set llm.summaryModel to a model with a larger window",
                failed=True,
            )
        material_tokens = max(MIN_MATERIAL_TOKENS, int(budget.material_tokens * shrink))
        material = gather_new_material(paths, state, items, material_tokens, skipped)
        if material.is_empty:
            if tally.calls == 0:
                return ConsolidationOutcome(False, "nothing new since the last run")
            break
        # The model is told the cap in characters: models count those better than tokens.
        instructions = INSTRUCTIONS.format(max_chars=max_chars(budget.cap_tokens))
        prompt = (
            f"{CURRENT_FILE_LABEL}\n{previous.strip() or EMPTY_FILE_MARK}\n\n{material.render()}"
        )
        tally.calls += 1
        try:
            answer = complete(instructions, prompt)
        except PromptTooLarge as exc:
            if shrink <= SHRINK_AFTER_OVERFLOW**MAX_SHRINKS:
                return _finish(paths, tally, f"rejected: {_reason(exc)}", failed=True)
            shrink *= SHRINK_AFTER_OVERFLOW
            continue
        except PutAside:
            return _finish(paths, tally, PUT_ASIDE_LINE)
        except Exception as exc:  # any failure of the call: nothing changes, next run retries
            return _finish(paths, tally, f"rejected: {_reason(exc)}", failed=True)
        tally.note_lines += len(material.note_lines)
        tally.facts += len(material.items)
        left -= max(1, _material_tokens(material))
        rewrite = parse_rewrite(answer)
        if rewrite.no_change:
            state = material.next_state
            save_state(paths, state)
            continue
        reason = check_rewrite(previous, rewrite, budget.cap_tokens)
        if reason is None:
            reason = _replace_memory_file(paths, previous_bytes, rewrite.memory, now, tally)
        if reason is not None:
            return _finish(paths, tally, f"rejected: {reason}", failed=True)
        material.next_state.last_rewrite_at = now
        state = material.next_state
        save_state(paths, state)
        tally.rewrites += 1
        if rewrite.superseded:
            tally.superseded += rewrite.superseded
            on_superseded(paths.scope, list(rewrite.superseded), now)
    return _finish(paths, tally, "")


def _material_tokens(material: NewMaterial) -> int:
    return sum(estimate_tokens(line) + 1 for line in material.note_lines) + sum(
        estimate_tokens(item.content) + 4 for item in material.items
    )


def _replace_memory_file(
    paths: ScopePaths,
    previous_bytes: bytes,
    text: str,
    now: float,
    tally: _RunTally,
) -> str | None:
    """Write the rewrite over MEMORY.md (the run's first rewrite archives the old file);
    why not, or None once written."""
    memory_file = paths.memory_file
    new_text = text.rstrip() + "\n"
    with memory_file_lock(memory_file):
        current = memory_file.read_bytes() if memory_file.is_file() else b""
        if current != previous_bytes:
            if not current.startswith(previous_bytes):
                return "MEMORY.md was edited during the run; retrying next time"
            # Lines the memory tool appended meanwhile: keep them after the rewrite.
            appended = current[len(previous_bytes) :].decode("utf-8", errors="replace")
            new_text = new_text + appended.strip() + "\n"
        if current and not tally.archived:
            archive_version(paths, current, now)
            tally.archived = True
        write_atomic(memory_file, new_text.encode())
    return None


def _finish(
    paths: ScopePaths, tally: _RunTally, problem: str, *, failed: bool = False
) -> ConsolidationOutcome:
    """The run's line: what was written, and why it stopped when it stopped early."""
    if tally.rewrites:
        entries_now = len(entries(read_memory_text(paths.memory_file, 10**7)))
        line = (
            f"rewrote MEMORY.md from {tally.read_what()} ({tally.first_entries} -> "
            f"{counted(entries_now, 'entry', 'entries')}, {len(tally.superseded)} superseded)"
        )
        if problem:
            line += f"; then {problem}"
        return ConsolidationOutcome(True, line, superseded=tuple(tally.superseded))
    if problem:
        return ConsolidationOutcome(False, problem, rejected=failed)
    return ConsolidationOutcome(False, f"read {tally.read_what()}; nothing worth keeping")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())[:300]
