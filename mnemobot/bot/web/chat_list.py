"""The chats with memory, newest activity first: what `mnemobot memory chats` lists.

Counting a scope's items means loading it. A scope the memory service holds already is
counted there; any other is loaded by a memory service of its own, one at a time (as
`memory chats` does), so the bot's cache of active chats is not pushed out by a look at
the list, and its counts are kept until its files change (their stat signature).
"""

from __future__ import annotations

import threading

from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.services.scopes import scope_files_signature
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.item_store import StoreStats
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.store.workspace_scopes import (
    ChatMemorySummary,
    chat_summary,
    scopes_with_memory,
)

Signature = tuple[tuple[str, int, int, int], ...]


class ChatList:
    def __init__(self, paths: WorkspacePaths, memory: WorkspaceMemory) -> None:
        self.paths = paths
        self.memory = memory
        self._counted: dict[str, tuple[Signature, StoreStats]] = {}
        self._lock = threading.Lock()

    def summaries(self) -> list[ChatMemorySummary]:
        """Every chat with memory, the most recently active first (blocking: a thread)."""
        found = [
            chat_summary(self.paths, scope, self._stats(scope))
            for scope in scopes_with_memory(self.paths.root)
        ]
        return sorted(found, key=lambda s: (-(s.last_activity or 0.0), s.chat))

    def _stats(self, scope: str) -> StoreStats:
        if self.memory.scopes.is_loaded(scope):
            return self.memory.recall.stats(scope)
        signature = scope_files_signature(ScopePaths(self.paths.root, scope))
        with self._lock:
            counted = self._counted.get(scope)
            if counted is not None and counted[0] == signature:
                return counted[1]
            aside = WorkspaceMemory.open(self.paths.root)
            try:
                stats = aside.recall.stats(scope)
            finally:
                aside.close()
            self._counted[scope] = (signature, stats)
            return stats
