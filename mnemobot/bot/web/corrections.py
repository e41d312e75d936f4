"""Corrections from the page: forget an item or a fact, put an earlier MEMORY.md back.

Forgetting is the memory tool's forget, whole: the item goes with whatever still tells the
same thing (the episodes it came from, its promoted copies), daily-note lines are
redacted at once, and the erasure step of maintenance (the same step, run through the same
maintenance timer and its locks) then removes the text from every file of the chat: item
files, MEMORY.md and its versions, sessions and their logs. The answer is the tool's
receipt, and what the erasure did, if it finished within `ERASE_WAIT_SECONDS` (a turn of
that chat holding its session, or a maintenance run in progress, can keep it longer; it
finishes in the background and the chat page says so while it is pending).

Restoring a version is `mnemobot memory restore`'s: the current MEMORY.md is archived
first, under the lock every writer of the file holds.

Every correction is logged with the name of the token that made it and what it changed,
never with the text it removed (the log would keep what was erased).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from functools import partial

from mnemobot.bot.tools.memory_tool import forget_receipt
from mnemobot.bot.web.host import WebHost
from mnemobot.memory.notes.memory_versions import find_version, restore_version
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.maintenance import MaintenanceReport, erase_forgotten

log = logging.getLogger(__name__)

# How long the answer to a forget waits for the erasure from every file. Measured on two
# cores (`MemoryForget.erase_forgotten` after forgetting one of N synthetic episodes):
# 0.5 s at 3,000 items, 3.8 s at 30,000; a turn holding the chat's session takes longer,
# and the page should not hang on it.
ERASE_WAIT_SECONDS = 10.0
READ_ONLY = "corrections are off: this page was started with --read-only"


class CorrectionRefused(Exception):
    """The correction cannot be made; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Forgotten:
    receipt: str
    # What the erasure from every file did, or that it goes on in the background.
    erasure: list[str]
    item_ids: list[str]


class Corrections:
    def __init__(self, host: WebHost, *, read_only: bool) -> None:
        self.host = host
        self.read_only = read_only
        self.erase_wait_seconds = ERASE_WAIT_SECONDS
        self._erasures: set[asyncio.Task[MaintenanceReport]] = set()

    def refusal(self) -> str | None:
        """Why no correction can be made now, or None."""
        return READ_ONLY if self.read_only else None

    async def forget(self, scope: str, item_id: str, who: str) -> Forgotten:
        refused = self.refusal() or self.host.corrections_refused()
        if refused:
            raise CorrectionRefused(refused)
        memory = self.host.memory
        work = partial(memory.forget.forget_items, scope, item_id)
        gone = await memory.scopes.run(scope, work, write=True)
        if not gone:
            raise CorrectionRefused(f"no memory item {item_id} in {scope} (already forgotten?)")
        log.info(
            "web correction by %s: forgot item %s of %s (%d items with it)",
            who,
            item_id,
            scope,
            len(gone),
        )
        erased = await self._erase(scope)
        receipt = forget_receipt(gone, 0, erased_later=False)
        return Forgotten(receipt, erased, [i.id for i in gone])

    async def _erase(self, scope: str) -> list[str]:
        timer = self.host.maintenance
        steps = tuple(step for step in timer.steps if step.run is erase_forgotten)
        if not steps:
            return ["erased from every file by the next memory maintenance"]
        task = asyncio.create_task(timer.maintain(scope, steps), name=f"web-erase {scope}")
        self._erasures.add(task)
        task.add_done_callback(self._erasure_done)
        done, _ = await asyncio.wait({task}, timeout=self.erase_wait_seconds)
        if not done:
            return ["still erasing from every file (a turn or a maintenance run holds them)"]
        if task.exception() is not None:
            return ["the erasure failed (see the log); the next memory maintenance tries again"]
        return task.result().lines()

    def _erasure_done(self, task: asyncio.Task[MaintenanceReport]) -> None:
        self._erasures.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("erasing forgotten texts failed", exc_info=task.exception())

    async def restore(self, scope: str, version_name: str, who: str) -> str:
        refused = self.refusal()
        if refused:
            raise CorrectionRefused(refused)
        paths = ScopePaths(self.host.paths.root, scope)
        version = find_version(paths, version_name)
        if version is None:
            raise CorrectionRefused(f"no version {version_name!r} of MEMORY.md in {scope}")
        now = self.host.clock()
        await asyncio.to_thread(restore_version, paths, version, now)
        log.info(
            "web correction by %s: restored MEMORY.md of %s from version %s",
            who,
            scope,
            version.version,
        )
        return f"restored MEMORY.md of {scope} from {version.version} (the current one archived)"

    async def settled(self) -> None:
        """Wait for erasures still running (at shutdown: nothing is left half done)."""
        while self._erasures:
            await asyncio.wait(set(self._erasures))
