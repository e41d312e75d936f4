"""Maintenance of one memory scope: an ordered list of steps, run under the scope's lock.

    erase forgotten remove forgotten texts from every file of the scope (memory.forgetting)
    consolidate     merge new notes and facts into MEMORY.md (memory.consolidation)
    archive notes   move daily notes older than DAILY_RETENTION_DAYS to archive/
    prune sessions  delete sessions and offload logs untouched for memory.sessionRetentionDays
    reindex         read the scope's item files again, so the index matches the disk
    digest days     a dated digest of each finished day, summarized by the model when there
                    is one (memory.upkeep.digest_days)
    embed items     give items without a vector one (memory.embeddings; old items, imports,
                    a changed model, a batch the server failed)

A step is a name and a function of the `MaintenanceRun`; it returns the one line that is
logged, printed by `mnemobot memory maintain` and shown by `/status`. Adding a step means
adding one entry to `MAINTENANCE_STEPS`. A step that raises is logged and reported as
failed; the steps after it still run.

One scope is never maintained twice at once, across processes too: the run holds
`memory/<scope>/.maintenance.lock` and a second run finds it taken and skips. Everything
here is synchronous and may take minutes (a model call): run it in a worker thread.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, timedelta, tzinfo
from pathlib import Path
from typing import Protocol

import orjson
from filelock import Timeout

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.base.counts import counted
from mnemobot.base.file_lock import private_file_lock
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.notes.memory_versions import archive_dir
from mnemobot.memory.store.item_store import ScopeItemStore, StoreStats
from mnemobot.memory.store.item_vectors import VectorFillReport
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.store.scope_paths import (
    MEMORY_DIR_NAME,
    ScopePaths,
    session_scope,
    validate_scope_key,
)
from mnemobot.memory.upkeep.consolidation import (
    CompleteText,
    SupersededHook,
    consolidate_scope,
    ignore_superseded,
)
from mnemobot.memory.upkeep.digest_days import digest_scope_days
from mnemobot.memory.upkeep.forgetting import ErasureReport
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts

log = logging.getLogger(__name__)

LOCK_FILE_NAME = ".maintenance.lock"
# Daily notes older than this many days move to the scope's archive/ (kept, no longer
# read for the recent context). Not measured; a season of notes stays at hand.
DAILY_RETENTION_DAYS = 90
LAST_RUN_FILE_NAME = ".maintenance_last.json"
_SESSION_SUFFIXES = (".log.jsonl", ".json", ".lock")


class ScopeUpkeep(Protocol):
    """What the steps use of the workspace's memory; the memory services above hand one
    in (`memory.services.workspace_memory.MemoryUpkeep`)."""

    def items(self, scope: str) -> list[MemoryItem]:
        """A snapshot of the scope's items, taken under its lock."""
        ...

    def forgotten_texts(self, scope: str) -> ForgottenTexts: ...

    def is_loaded(self, scope: str) -> bool: ...

    def store(self, scope: str) -> ScopeItemStore:
        """The scope's store, loaded."""
        ...

    def reload(self, scope: str) -> StoreStats:
        """Read the scope's files again, so its index matches the disk."""
        ...

    def erase_forgotten(self, scope: str) -> ErasureReport:
        """Remove what was forgotten from every file of the scope."""
        ...

    def embeddings_enabled(self) -> bool: ...

    def fill_vectors(self, scope: str) -> VectorFillReport:
        """Embed the scope's items that have no current vector."""
        ...


@dataclass(slots=True)
class MaintenanceRun:
    """Everything a step may use; one per run of one scope."""

    paths: ScopePaths
    config: MemoryConfig
    now: float
    sessions_dir: Path
    memory: ScopeUpkeep
    # None: no model available (consolidation is then skipped, the other steps still run).
    complete: CompleteText | None = None
    on_superseded: SupersededHook = ignore_superseded
    # The context window of the model `complete` calls, when known (a small local model).
    window: Callable[[], int | None] = lambda: None
    # Where the scope's days begin (the operator's zone): the digests' days.
    tz: tzinfo = UTC

    @property
    def scope(self) -> str:
        return self.paths.scope


StepFunction = Callable[[MaintenanceRun], str]


@dataclass(frozen=True, slots=True)
class MaintenanceStep:
    name: str
    run: StepFunction


@dataclass(frozen=True, slots=True)
class StepResult:
    name: str
    line: str
    failed: bool = False


@dataclass(slots=True)
class MaintenanceReport:
    scope: str
    at: float
    steps: list[StepResult] = field(default_factory=list)
    skipped: str | None = None

    @property
    def failed(self) -> bool:
        return any(step.failed for step in self.steps)

    def lines(self) -> list[str]:
        if self.skipped:
            return [f"{self.scope}: skipped ({self.skipped})"]
        return [f"{self.scope}: {step.name}: {step.line}" for step in self.steps]

    def to_json(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "at": self.at,
            "steps": [{"name": s.name, "line": s.line, "failed": s.failed} for s in self.steps],
        }


# ----------------------------------------------------------------------------- steps


def consolidate(run: MaintenanceRun) -> str:
    if not run.config.consolidation.enabled:
        return "off (memory.consolidation.enabled)"
    if run.complete is None:
        return "skipped: no model to consolidate with"
    outcome = consolidate_scope(
        run.paths,
        complete=run.complete,
        items=lambda: run.memory.items(run.scope),
        forgotten=lambda: run.memory.forgotten_texts(run.scope),
        window=run.window,
        now=run.now,
        on_superseded=run.on_superseded,
    )
    return outcome.line


def archive_old_notes(run: MaintenanceRun) -> str:
    days = DAILY_RETENTION_DAYS
    cutoff = date.fromtimestamp(run.now) - timedelta(days=days)
    directory = run.paths.directory
    old = []
    if directory.is_dir():
        for path in directory.glob("????-??-??.md"):
            try:
                day = date.fromisoformat(path.stem)
            except ValueError:
                continue
            if day < cutoff:
                old.append(path)
    if not old:
        return f"no notes older than {counted(days, 'day')}"
    target = archive_dir(run.paths)
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(old):
        os.replace(path, target / path.name)
    return f"archived {counted(len(old), 'note')} older than {counted(days, 'day')}"


def prune_old_sessions(run: MaintenanceRun) -> str:
    days = run.config.session_retention_days
    if days <= 0:
        return "kept all (memory.sessionRetentionDays is 0)"
    cutoff = run.now - days * SECONDS_PER_DAY
    deleted = {"session": 0, "offload log": 0}
    directory = run.sessions_dir
    if not directory.is_dir():
        return "no sessions"
    for path in sorted(directory.iterdir()):
        suffix = next((s for s in _SESSION_SUFFIXES if path.name.endswith(s)), None)
        if suffix is None or suffix == ".lock" or not path.is_file():
            continue
        key = path.name[: -len(suffix)]
        if session_scope(key, run.config.scope) != run.scope:
            continue
        if path.stat().st_mtime >= cutoff:
            continue
        path.unlink(missing_ok=True)
        if suffix == ".json":
            deleted["session"] += 1
            directory.joinpath(f"{key}.lock").unlink(missing_ok=True)
        else:
            deleted["offload log"] += 1
    if not any(deleted.values()):
        return f"nothing untouched for {counted(days, 'day')}"
    counts = ", ".join(counted(count, what) for what, count in deleted.items())
    return f"deleted {counts} untouched for {counted(days, 'day')}"


def reindex(run: MaintenanceRun) -> str:
    if not run.memory.is_loaded(run.scope):
        # Loading it only to drop it would push an active chat out of the cache.
        return "not loaded; read from its files at next use"
    stats = run.memory.reload(run.scope)
    skipped = (
        f", {stats.skipped_lines} torn or corrupt lines skipped" if stats.skipped_lines else ""
    )
    return f"{counted(stats.items, 'item')} in {counted(stats.files, 'file')}{skipped}"


def erase_forgotten(run: MaintenanceRun) -> str:
    report = run.memory.erase_forgotten(run.scope)
    if not report.needles:
        return "nothing forgotten since the last run"
    files = len(report.files_rewritten)
    busy = (
        f"; still in use: {', '.join(report.busy)} (erased at the next run)" if report.busy else ""
    )
    elsewhere = f"; also {', '.join(report.elsewhere)}" if report.elsewhere else ""
    return (
        f"erased {counted(report.needles, 'forgotten text')}: {counted(files, 'file')} rewritten, "
        f"{counted(report.lines_redacted, 'line')} redacted{elsewhere}{busy}"
    )


def digest_days(run: MaintenanceRun) -> str:
    return digest_scope_days(run.memory, run.paths, run.tz, run.now, run.complete)


def embed_items(run: MaintenanceRun) -> str:
    if not run.memory.embeddings_enabled():
        return "off (memory.embeddings.enabled)"
    report = run.memory.fill_vectors(run.scope)
    left = f", {report.missing} still without one" if report.missing else ""
    note = f" ({report.note})" if report.note else ""
    if report.note and not report.embedded:
        return f"skipped: {report.note}{left}"
    return f"embedded {counted(report.embedded, 'item')}{left}{note}"


# The steps in the order they run. Forgotten text goes first, so consolidation never reads
# it back; consolidation reads notes before they are archived.
MAINTENANCE_STEPS: tuple[MaintenanceStep, ...] = (
    MaintenanceStep("erase forgotten", erase_forgotten),
    MaintenanceStep("consolidate", consolidate),
    MaintenanceStep("archive notes", archive_old_notes),
    MaintenanceStep("prune sessions", prune_old_sessions),
    MaintenanceStep("reindex", reindex),
    MaintenanceStep("digest days", digest_days),
    MaintenanceStep("embed items", embed_items),
)


# ----------------------------------------------------------------------------- run


def maintain_scope(
    run: MaintenanceRun, steps: Sequence[MaintenanceStep] = MAINTENANCE_STEPS
) -> MaintenanceReport:
    """Run `steps` on one scope; skipped at once if the scope is being maintained already."""
    report = MaintenanceReport(run.scope, run.now)
    run.paths.directory.mkdir(parents=True, exist_ok=True)
    lock = private_file_lock(run.paths.directory / LOCK_FILE_NAME)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        report.skipped = "maintenance of this scope is already running"
        log.info("maintenance %s: skipped, already running", run.scope)
        return report
    try:
        for step in steps:
            started = time.monotonic()
            try:
                result = StepResult(step.name, step.run(run))
            except Exception as exc:  # one broken step must not stop the others
                log.exception("maintenance %s: %s failed", run.scope, step.name)
                result = StepResult(step.name, f"failed: {exc}", failed=True)
            worth_a_look = result.failed or result.line.startswith(("rejected", "skipped"))
            log.log(
                logging.WARNING if worth_a_look else logging.INFO,
                "maintenance %s: %s: %s (%.1f s)",
                run.scope,
                step.name,
                result.line,
                time.monotonic() - started,
            )
            report.steps.append(result)
        write_atomic(
            run.paths.directory / LAST_RUN_FILE_NAME,
            orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2),
        )
    finally:
        lock.release()
    return report


@contextmanager
def maintenance_paused(paths: ScopePaths, timeout_seconds: float) -> Iterator[None]:
    """Hold the scope's maintenance lock, after a run in progress has finished, for work
    that moves or deletes the scope's files (a run would write on into them)."""
    if not paths.directory.is_dir():
        yield
        return
    lock = private_file_lock(paths.directory / LOCK_FILE_NAME)
    lock.acquire(timeout=timeout_seconds)
    try:
        yield
    finally:
        lock.release()


def last_report(paths: ScopePaths) -> MaintenanceReport | None:
    """The scope's last maintenance as it was saved, or None if it never ran."""
    try:
        data = orjson.loads((paths.directory / LAST_RUN_FILE_NAME).read_bytes())
        steps = [
            StepResult(str(s["name"]), str(s["line"]), bool(s.get("failed")))
            for s in data.get("steps", [])
        ]
        return MaintenanceReport(paths.scope, float(data["at"]), steps)
    except (FileNotFoundError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def known_scopes(workspace: Path, sessions_dir: Path, config: MemoryConfig) -> list[str]:
    """Every scope with memory files or sessions, in name order."""
    found: set[str] = set()
    memory_root = workspace / MEMORY_DIR_NAME
    if memory_root.is_dir():
        found.update(p.name for p in memory_root.iterdir() if p.is_dir())
    if sessions_dir.is_dir() and config.session_retention_days > 0:
        for path in sessions_dir.iterdir():
            for suffix in _SESSION_SUFFIXES[:2]:
                if path.name.endswith(suffix):
                    found.add(session_scope(path.name[: -len(suffix)], config.scope))
                    break
    valid = []
    for scope in sorted(found):
        try:
            valid.append(validate_scope_key(scope))
        except ValueError:
            continue  # not a scope directory of ours (hand-made): leave it alone
    return valid
