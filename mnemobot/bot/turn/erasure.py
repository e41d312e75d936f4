"""Erasing a memory scope for good: every file that holds what was said in it.

`/forget_me` and `mnemobot memory erase` both come here. What goes, in this order:

1. every session of the scope, forum topics included (`sessions/<key>.json`, its offload
   log `<key>.log.jsonl`, set-aside copies of an unreadable file) and its large tool
   results (`large_tool_results/<key>/`); the sessions' cached copies are dropped too;
2. the scope's memory directory (`memory/<scope>/`: MEMORY.md and its versions, daily
   notes, items, archive), once a maintenance run of the scope has finished;
3. the files tool's folder of the scope (`files/<scope>/`); a folder shared by all chats
   (`files.shared`) is left and the reply says so;
4. the `/export` zips of the scope (`exports/memory-<scope>-*.zip`);
5. whatever a part of the bot registered with `add_step`: a channel's journals (the
   finished entries of the chat's messages and replies), scheduled tasks.

With `memory.scope: "global"` the scope is every chat: every session goes.

Each step returns one line per thing removed, and the reply lists them.

A confirmed `/forget_me` goes through `erase_confirmed`: written in the erasure journal
(`erasure_journal`) before its first step and struck out after its last, so an erasure
cut by a crash is known, and finished, after the restart. Every step can run again over
what an earlier, cut run left.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from mnemobot.base.counts import counted
from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.bot.tools.files_tool import SHARED_FOLDER, shared_received_folder
from mnemobot.bot.turn.erasure_journal import ErasureJournal, FileErasureJournal, PendingErasure
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import SessionStore
from mnemobot.memory.services.forget import MemoryForget
from mnemobot.memory.store.scope_paths import GLOBAL_SCOPE, ScopePaths, session_scope
from mnemobot.memory.upkeep.maintenance import maintenance_paused

EXPORTS_DIR_NAME = "exports"
# A maintenance run of the scope (a consolidation waiting on the model) ends within its
# own timeouts; erasing under it could let it write back what was erased.
MAINTENANCE_WAIT_SECONDS = 600.0
# `<key>.json`, `<key>.log.jsonl`, `<key>.lock`, `<key>.json.corrupt-<stamp>`.
# The line of an erasure that left the files folder every chat shares (`files.shared`).
SHARED_FILES_LEFT = "(files/shared/ is shared by every chat and was left as it is)"
_SESSION_FILE = re.compile(r"^(?P<key>.+?)(?:\.log\.jsonl|\.json(?:\..+)?|\.lock)$")


@dataclass(frozen=True, slots=True)
class ErasureTarget:
    """A memory scope and the sessions whose chats use it."""

    scope: str
    session_keys: tuple[str, ...]

    def holds(self, key: str) -> bool:
        """Whether a chat or session key (`telegram:42`, `telegram:42:7`) is of this scope."""
        return self.scope == GLOBAL_SCOPE or key == self.scope or key.startswith(self.scope + ":")


EraseStep = Callable[[ErasureTarget], Awaitable[list[str]]]


def export_prefix(scope: str) -> str:
    """File names of a scope's /export zips start with this."""
    return f"memory-{scope.replace(':', '-')}-"


def session_keys_on_disk(sessions_dir: Path) -> set[str]:
    if not sessions_dir.is_dir():
        return set()
    return {m["key"] for p in sessions_dir.iterdir() if (m := _SESSION_FILE.match(p.name))}


class ScopeErasure:
    def __init__(
        self,
        paths: WorkspacePaths,
        memory: MemoryForget,
        sessions: SessionStore,
        config: Callable[[], RuntimeConfig],
        *,
        journal: ErasureJournal | None = None,
    ) -> None:
        """`journal`: where confirmed erasures and asks are kept (default: a file in the
        workspace's `delivery/` folder; replicas: Redis)."""
        self.paths = paths
        self.memory = memory
        self.sessions = sessions
        self.config = config
        self.journal = journal or FileErasureJournal.in_delivery(paths.delivery)
        self._steps: list[EraseStep] = [
            self._erase_sessions,
            self._erase_memory,
            self._erase_files,
            self._erase_exports,
        ]

    def add_step(self, step: EraseStep) -> None:
        """Erase more with every scope (a channel's journals, scheduled tasks...)."""
        self._steps.append(step)

    def target(self, scope: str) -> ErasureTarget:
        """The scope and every session of it, on disk or only cached so far."""
        memory_config = self.config().memory
        keys = session_keys_on_disk(self.paths.sessions) | set(self.sessions.cached_keys())
        # A run cut by a crash may have left a session's large results after its file.
        results = self.paths.large_tool_results
        keys |= {p.name for p in results.iterdir()} if results.is_dir() else set()
        mine = sorted(k for k in keys if session_scope(k, memory_config.scope) == scope)
        return ErasureTarget(scope, tuple(mine))

    async def erase(self, target: ErasureTarget) -> list[str]:
        """Run every step; what was removed, one line each."""
        removed: list[str] = []
        for step in self._steps:
            removed += await step(target)
        return removed

    async def erase_confirmed(self, erasure: PendingErasure) -> list[str]:
        """Erase `erasure.scope`, kept in the journal until done (again, when it was cut)."""
        await self.journal.begin(erasure)
        removed = await self.erase(self.target(erasure.scope))
        await self.journal.finish(erasure.scope)
        return removed

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.paths.root))

    async def _erase_sessions(self, target: ErasureTarget) -> list[str]:
        removed: list[str] = []
        for key in target.session_keys:
            # Synchronous on purpose: the cache must not see a turn in between; a few
            # unlinks per session.
            removed += [self._shown(p) for p in self.sessions.erase(key)]
            results = self.paths.large_tool_results / key
            if results.is_dir():
                await asyncio.to_thread(shutil.rmtree, results)
                removed.append(self._shown(results) + "/")
        return removed

    async def _erase_memory(self, target: ErasureTarget) -> list[str]:
        paths = ScopePaths(self.paths.root, target.scope)
        if not paths.directory.is_dir():
            return []

        def erase() -> list[str]:
            with maintenance_paused(paths, MAINTENANCE_WAIT_SECONDS):
                return self.memory.erase_scope(target.scope)

        return await self.memory.scopes.run(target.scope, erase)

    async def _erase_files(self, target: ErasureTarget) -> list[str]:
        if self.config().files.shared:
            # The folder is everyone's; the files people sent this chat are its own.
            received = self.paths.files / SHARED_FOLDER / shared_received_folder(target.scope)
            if not received.is_dir():
                return [SHARED_FILES_LEFT]
            count = sum(1 for p in received.rglob("*") if p.is_file())
            await asyncio.to_thread(shutil.rmtree, received)
            return [f"{self._shown(received)}/ ({counted(count, 'file')})", SHARED_FILES_LEFT]
        folder = self.paths.files / target.scope
        if not folder.is_dir():
            return []
        count = sum(1 for p in folder.rglob("*") if p.is_file())
        await asyncio.to_thread(shutil.rmtree, folder)
        return [f"{self._shown(folder)}/ ({counted(count, 'file')})"]

    async def _erase_exports(self, target: ErasureTarget) -> list[str]:
        exports = self.paths.root / EXPORTS_DIR_NAME
        if not exports.is_dir():
            return []
        prefix = "memory-" if target.scope == GLOBAL_SCOPE else export_prefix(target.scope)
        removed = []
        for path in sorted(exports.glob(f"{prefix}*.zip")):
            path.unlink(missing_ok=True)
            removed.append(self._shown(path))
        return removed


def journal_file_step(path: Path, root: Path) -> EraseStep:
    """An erase step for a journal no running bot holds open (`mnemobot memory erase`)."""

    async def erase(target: ErasureTarget) -> list[str]:
        count = await asyncio.to_thread(lambda: DurableQueue(path).purge(target.holds))
        return [f"{path.relative_to(root)}: {count} finished entries of this chat"] if count else []

    return erase
