"""The scope runtime: every memory scope of a workspace, loaded when first used, and the
one way to run work on a scope.

Work on a scope runs under that scope's lock, for the whole of the call (its load
included): `with scopes.loaded(scope) as loaded:` in the role services (`recall`,
`record`, `erasure`, `vectors`), whose methods are all synchronous and safe from any
thread. One scope's work is serialized while calls on other scopes proceed in parallel;
the cache of loaded scopes has a lock of its own, held only for dictionary operations.

From the event loop, a role's call runs in a worker thread through `await
scopes.run(scope, work)`: a cold load of a big scope (about a second at 100k items) must
not stall the other chats. Calls on a scope that is not loaded yet go to a pool of their
own, so a warm chat's pack or write never waits in a queue behind cold loads. A write
(`write=True`), once queued, completes even if its caller is cancelled (a /stop
mid-turn), never half done.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import INDEX_FILE_MIN_ITEMS, ScopeItemStore, StoreStats
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.store.vector_file import ScopeVectors
from mnemobot.memory.text.terms import terms, terms_identity, terms_joined

log = logging.getLogger(__name__)

# Worker threads for calls on loaded scopes, and for calls that load a scope first. Not
# runtime-config fields: the pools exist from start-up on, and threads share one GIL, so
# more workers buy isolation between chats, not speed. Four cold loads at once is already
# a restart burst; a fifth waits for one of them, warm chats never do.
WARM_WORKERS = 4
COLD_LOAD_WORKERS = 4

# Scopes kept loaded (most recently used); the others reload from their files when their
# chat speaks again (a cold load: about a second at 100k items, bench cold-scope). Not
# measured as a trade-off; a few hundred active chats of a typical bot stay warm.
MAX_CACHED_SCOPES = 256

T = TypeVar("T")
# Told of items a scope's store wrote (scope, items), under the scope's lock.
WriteListener = Callable[[str, list[MemoryItem]], None]


def scope_files_signature(paths: ScopePaths) -> tuple[tuple[str, int, int, int], ...]:
    """Name, inode, size and mtime of each file a scope loads: changes with any write or
    atomic rewrite, as cheap as a stat per file."""
    signature = []
    for path in (*paths.item_files(), paths.memory_file):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        signature.append((path.name, stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(signature)


@dataclass(slots=True)
class LoadedScope:
    """A scope in memory: its items, their word index and (embeddings on) its vectors."""

    store: ScopeItemStore
    index: BM25Index
    # Opened at the first use of embeddings, for the identity in force then.
    vectors: ScopeVectors | None = None

    def close(self) -> None:
        """Close its vectors and the item files it reads lines from (reopened if a
        caller still holding the store reads on)."""
        self.close_vectors()
        self.store.items.close()

    def close_vectors(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
            self.vectors = None


class ScopeRuntime:
    def __init__(
        self,
        workspace: Path,
        *,
        max_cached_scopes: int = MAX_CACHED_SCOPES,
        shared_files: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        index_file_min_items: int = INDEX_FILE_MIN_ITEMS,
    ) -> None:
        """`max_cached_scopes`: scopes kept loaded (`MAX_CACHED_SCOPES`; a test sets fewer).

        `index_file_min_items`: a scope this big keeps an index file and its items on disk
        (`memory.store.item_store.INDEX_FILE_MIN_ITEMS`; a test sets fewer).

        `shared_files`: other processes (replicas on a shared volume) write scopes too; a
        cached scope whose files changed since this process last touched them is loaded
        again before use (a stat of each item file per call).

        `clock`: when the stores stamp an edit or a forgetting (a replay passes its own).
        """
        self.workspace = workspace
        self.clock = clock
        self.shared_files = shared_files
        self._index_file_min_items = index_file_min_items
        # What each loaded scope's files looked like after this process last used them.
        self._signatures: dict[str, tuple[tuple[str, int, int, int], ...]] = {}
        # Most recently used last; a bot with thousands of chats keeps only the active
        # ones in memory, the others reload from their files when they speak again.
        self._stores: OrderedDict[str, LoadedScope] = OrderedDict()
        self._cache_lock = threading.Lock()
        # One lock per scope, alive while a loaded store or a running call holds it: an
        # evicted scope still in use keeps its lock, so its reload waits for that call.
        self._scope_locks: weakref.WeakValueDictionary[str, threading.RLock] = (
            weakref.WeakValueDictionary()
        )
        self._max_cached_scopes = max(1, max_cached_scopes)
        self._warm_pool = ThreadPoolExecutor(WARM_WORKERS, thread_name_prefix="memory")
        self._cold_pool = ThreadPoolExecutor(COLD_LOAD_WORKERS, thread_name_prefix="memory-load")
        self._write_listeners: list[WriteListener] = []

    def paths(self, scope: str) -> ScopePaths:
        return ScopePaths(self.workspace, scope)

    @property
    def index_file_min_items(self) -> int:
        """Items from which a scope keeps an index file and its items on disk."""
        return self._index_file_min_items

    def lock(self, scope: str) -> threading.RLock:
        """The lock every call on `scope` holds (re-entrant; shared with its store)."""
        with self._cache_lock:
            lock = self._scope_locks.get(scope)
            if lock is None:
                lock = threading.RLock()
                self._scope_locks[scope] = lock
            return lock

    @contextmanager
    def loaded(self, scope: str) -> Iterator[LoadedScope]:
        """The loaded scope, with its lock held until the block ends."""
        lock = self.lock(scope)
        with lock:
            with self._cache_lock:
                found = self._stores.get(scope)
                if found is not None:
                    self._stores.move_to_end(scope)
            if (
                found is not None
                and self.shared_files
                and self._signatures.get(scope) != scope_files_signature(self.paths(scope))
            ):
                log.info("memory scope %s changed on disk (another replica); reloading", scope)
                found = None
            if found is None:
                found = self._load(scope, lock)
            try:
                yield found
            finally:
                if self.shared_files:
                    self._signatures[scope] = scope_files_signature(self.paths(scope))

    def store(self, scope: str) -> ScopeItemStore:
        """The scope's store, loaded; its own methods take the scope's lock."""
        with self.loaded(scope) as loaded:
            return loaded.store

    def is_loaded(self, scope: str) -> bool:
        return scope in self._stores

    def reload(self, scope: str) -> StoreStats:
        """Read the scope's files again: after maintenance or a hand edit rewrote them."""
        lock = self.lock(scope)
        with lock:
            self.drop(scope)
            return self._load(scope, lock).store.stats()

    def drop(self, scope: str) -> None:
        """Forget the loaded scope (its vectors closed); read from its files at next use."""
        with self._cache_lock:
            gone = self._stores.pop(scope, None)
        if gone is not None:
            gone.close()

    def add_write_listener(self, listener: WriteListener) -> None:
        """Call `listener(scope, items)` after each write of a store (under the scope's
        lock, from inside the write: it must only queue, never wait)."""
        self._write_listeners.append(listener)

    async def run(self, scope: str, work: Callable[[], T], *, write: bool = False) -> T:
        """Run `work` (calls on `scope`) in a worker thread; for the event loop.

        `write`: once queued, `work` completes even if the caller is cancelled."""
        pool: Executor = self._warm_pool if self.is_loaded(scope) else self._cold_pool
        running = asyncio.get_running_loop().run_in_executor(pool, work)
        return await (asyncio.shield(running) if write else running)

    def close(self) -> None:
        """Stop the worker threads once their calls are done (queued ones still run)."""
        self._warm_pool.shutdown(wait=False)
        self._cold_pool.shutdown(wait=False)

    def _load(self, scope: str, lock: threading.RLock) -> LoadedScope:
        # Under the scope's lock only: other scopes load and answer meanwhile.
        index = BM25Index()
        store = ScopeItemStore(
            self.paths(scope),
            index=index,
            terms=terms,
            terms_joined=terms_joined,
            clock=self.clock,
            lock=lock,
            on_written=partial(self._items_written, scope),
            on_dropped=partial(self._items_dropped, scope),
            terms_identity=terms_identity(),
            index_file_min_items=self._index_file_min_items,
        )
        stats = store.load()
        if stats.skipped_lines:
            log.warning(
                "memory scope %s: skipped %d torn or corrupt lines", scope, stats.skipped_lines
            )
        loaded = LoadedScope(store, index)
        with self._cache_lock:
            self._stores[scope] = loaded
            while len(self._stores) > self._max_cached_scopes:
                self._stores.popitem(last=False)[1].close()
        return loaded

    def _items_written(self, scope: str, items: list[MemoryItem]) -> None:
        for listener in self._write_listeners:
            listener(scope, items)

    def _items_dropped(self, scope: str, item_ids: list[str]) -> None:
        loaded = self._stores.get(scope)
        if loaded is not None and loaded.vectors is not None:
            loaded.vectors.discard(item_ids)
