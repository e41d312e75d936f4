"""The one `mnemobot run` of a workspace, and what it does when the workspace vanishes.

`run` holds a lock file in the workspace (`.run.lock`, or one per replica name with
Redis): a second `run` finds it taken and stops with one line, since two would answer
every message twice. A lock lives on its file, though: if the workspace is deleted or
moved while the bot runs, the next `run` would create a new file and take it. So the
guard looks every `CHECK_SECONDS` whether the lock file is still the one it holds. When
it is not, it logs one error saying what happened and what is lost, creates the
workspace's folders again (new messages are kept again from then on) and takes the new
lock file. If another `run` took it first, this one stops: one of the two must.

A `mnemobot memory` command that writes the workspace (import, erase) holds another lock
for as long as it writes (`MemoryCommandLock`); `run` does not start while it is held,
and the command does not start while a `run` holds the workspace, whichever came first.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from filelock import FileLock, Timeout

from mnemobot.base.file_lock import private_file_lock
from mnemobot.config.workspace import WorkspacePaths

log = logging.getLogger(__name__)

# A deleted workspace is noticed within this long; each look is one stat.
CHECK_SECONDS = 2.0


MEMORY_COMMAND_RUNNING = (
    "a `mnemobot memory import` or `memory erase` is writing this workspace; run this "
    "again when it has finished"
)


class MemoryCommandLock:
    """The workspace held by one memory command that writes it (see the module docstring)."""

    def __init__(self, paths: WorkspacePaths) -> None:
        self.path = paths.memory_command_lock
        self._lock = private_file_lock(self.path)

    def acquire(self) -> bool:
        """Take it; False when another memory command holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        return True

    def release(self) -> None:
        self._lock.release()


def memory_command_running(paths: WorkspacePaths) -> bool:
    """Whether a memory command holds the workspace now."""
    if not paths.memory_command_lock.exists():
        return False
    probe = MemoryCommandLock(paths)
    if not probe.acquire():
        return True
    probe.release()
    return False


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


class WorkspaceGuard:
    def __init__(self, paths: WorkspacePaths, lock_path: Path) -> None:
        self.paths = paths
        self.lock_path = lock_path
        self._lock: FileLock | None = None
        self._held: tuple[int, int] | None = None

    def acquire(self) -> bool:
        """Take the workspace; False when another `run` holds it."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = private_file_lock(self.lock_path)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return False
        self._lock = lock
        self._held = _identity(self.lock_path)
        return True

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def still_held(self) -> bool:
        """Whether the lock file on disk is the one this guard holds."""
        return self._held is not None and _identity(self.lock_path) == self._held

    def take_again(self) -> bool:
        """After the workspace vanished: recreate it and take the new lock file."""
        self.release()
        self.paths.create()
        return self.acquire()

    async def watch(self, stop: asyncio.Event) -> None:
        """Until `stop` is set: notice a vanished workspace, recreate it, keep the lock;
        sets `stop` when another `run` took the workspace meanwhile."""
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), CHECK_SECONDS)
                return
            except TimeoutError:
                pass
            if self.still_held():
                continue
            log.error(
                "the workspace %s was deleted or moved while the bot was running: the "
                "memory, sessions and replies still to be sent that were in it are gone "
                "(restore them from a backup); creating it again so new messages are kept",
                self.paths.root,
            )
            try:
                taken = await asyncio.to_thread(self.take_again)
            except OSError as exc:
                log.error("cannot create the workspace %s again (%s)", self.paths.root, exc)
                continue
            if not taken:
                log.error(
                    "another `mnemobot run` took the workspace %s meanwhile; stopping this "
                    "one (two would answer every message twice)",
                    self.paths.root,
                )
                stop.set()
                return
