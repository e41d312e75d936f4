"""Which chats of a workspace have memory, and when each was last active.

What `mnemobot memory chats` lists and the web page's chat list shows: one scope per
directory under `memory/` (a hand-made folder that is no scope key is left out), and the
time anything of it was last written, its memory files or its chats' sessions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.store.item_store import StoreStats
from mnemobot.memory.store.scope_paths import MEMORY_FILE_NAME, validate_scope_key


def scopes_with_memory(workspace: Path) -> list[str]:
    """Every scope that has a memory directory, in name order."""
    root = WorkspacePaths(workspace).memory
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.iterdir()):
        if not path.is_dir():
            continue
        try:
            found.append(validate_scope_key(path.name))
        except ValueError:
            continue  # not a scope directory of ours (hand-made): leave it alone
    return found


def last_activity(paths: WorkspacePaths, scope: str) -> float | None:
    """When anything of the scope was last written: its memory files or its chats' sessions."""
    times = [p.stat().st_mtime for p in (paths.memory / scope).rglob("*") if p.is_file()]
    if paths.sessions.is_dir():
        times += [
            p.stat().st_mtime
            for p in paths.sessions.iterdir()
            if p.name.startswith(scope) and p.name.endswith(".json")
        ]
    return max(times, default=None)


@dataclass(frozen=True, slots=True)
class ChatMemorySummary:
    """One line of `memory chats`: a scope's counts and when it was last active."""

    chat: str
    items: int
    per_layer: dict[str, int]
    daily_notes: int
    memory_md: bool
    # Epoch seconds; None when nothing of it is on disk.
    last_activity: float | None

    def to_json(self) -> dict[str, object]:
        at = self.last_activity
        return {
            "chat": self.chat,
            "items": self.items,
            "perLayer": dict(self.per_layer),
            "dailyNotes": self.daily_notes,
            "memoryMd": self.memory_md,
            "lastActivity": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at)) if at else None,
        }


def chat_summary(paths: WorkspacePaths, scope: str, stats: StoreStats) -> ChatMemorySummary:
    """The summary of `scope`, its item counts taken from `stats` (the scope's store)."""
    directory = paths.memory / scope
    return ChatMemorySummary(
        chat=scope,
        items=stats.items,
        per_layer=dict(stats.per_layer),
        daily_notes=len(list(directory.glob("????-??-??.md"))),
        memory_md=(directory / MEMORY_FILE_NAME).is_file(),
        last_activity=last_activity(paths, scope),
    )
