"""MemoryService: every memory scope of a workspace behind one small surface.

It is what the systems (ContextBuilding, MemoryPersist, compaction's flush), the memory
tool and the CLI use, so that the bot, `mnemobot memory pack` and `mnemobot eval` build
the very same pack from the very same write path.

Threads: every method is synchronous and safe to call from any thread. Each scope has its
own lock, held for the whole of a call on that scope (its load included), so one scope's
work is serialized while calls on other scopes proceed in parallel; the cache of loaded
scopes has a lock of its own, held only for dictionary operations. The `*_async` methods
(and `offload`) run a call in a worker thread, for the event loop: a cold load of a big
scope (about a second at 100k items) must not stall the other chats. Calls on a scope
that is not loaded yet go to a pool of their own, so a warm chat's pack or write never
waits in a queue behind cold loads.

It is also the one door of every durable write (a turn, an import, the compaction flush,
the memory tool, consolidation's supersessions): each goes through `memory.write_path`,
so the same rules weigh, merge and update facts whichever way they came.

The module is longer than most because it is that one surface; each method only takes
the scope's lock and calls the module doing the work (`pack`, `write_path`, `facts`,
`forgetting`, `item_store`, `daily_notes`, `item_vectors`).

With embeddings on, each scope's item vectors (`vector_file`) follow its items: written
items are embedded in the background after the reply, forgotten or merged ones lose their
vector (and the vector file is rewritten without them when the forgotten text is erased).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory import scope_move
from mnemobot.memory.bm25 import BM25Index
from mnemobot.memory.clock import SYSTEM_CLOCK, Clock
from mnemobot.memory.daily_notes import (
    append_daily_note,
    append_noted_facts,
    legacy_context,
    read_memory_file,
    redact_daily_notes,
    write_memory_file,
)
from mnemobot.memory.dates import find_dates
from mnemobot.memory.documents import DOCUMENT_TAG
from mnemobot.memory.fact_items import new_fact
from mnemobot.memory.facts import SimilarFinder, supersede
from mnemobot.memory.forgetting import (
    PENDING_FILE_NAME,
    ErasureReport,
    erase_scope,
    erase_texts_from_conversations,
    erase_texts_from_memory_files,
    export_scope,
    finish_erasure,
    note_forgotten,
    pending_needles,
)
from mnemobot.memory.forgotten_texts import (
    FORGET_QUERY_MAX_ITEMS,
    ForgetOutcome,
    ForgottenTexts,
    items_to_forget,
    lines_holding,
)
from mnemobot.memory.item_store import PROMOTED_FROM_PREFIX, ScopeItemStore, StoreStats
from mnemobot.memory.item_vectors import (
    EmbeddingModel,
    QueryVector,
    VectorFiller,
    VectorFillReport,
    VectorSearch,
    embed_missing,
)
from mnemobot.memory.items import (
    DocumentText,
    ForwardedText,
    ItemType,
    Layer,
    MemoryItem,
    MemoryQuery,
    TurnMemoryEvent,
    normalize_content,
)
from mnemobot.memory.pack import MemoryPack, build_pack
from mnemobot.memory.request_overlap import RequestOverlap
from mnemobot.memory.scope_move import RenameRef
from mnemobot.memory.scope_paths import ScopePaths
from mnemobot.memory.text_terms import terms, terms_joined
from mnemobot.memory.tokens import estimate_tokens
from mnemobot.memory.vector_file import VECTOR_FILE_NAME, ScopeVectors, file_identity
from mnemobot.memory.write_path import (
    FORWARDED_TAG,
    FactWrite,
    RecordedTurn,
    flushed_facts,
    promote_item,
    rewrite_fact,
    write_document,
    write_facts,
    write_forwarded,
    write_turn,
)

log = logging.getLogger(__name__)

# Terms a similar-text search (duplicates, a fact's turn) uses: the text's rarest.
_SIMILAR_QUERY_TERMS = 6
# Worker threads for calls on loaded scopes, and for calls that load a scope first. Not
# runtime-config fields: the pools exist from start-up on, and threads share one GIL, so
# more workers buy isolation between chats, not speed. Four cold loads at once is already
# a restart burst; a fifth waits for one of them, warm chats never do.
WARM_WORKERS = 4
COLD_LOAD_WORKERS = 4

# BM25 relevance (0..1 within the query's hits) a durable fact needs to count as the one
# a superseded MEMORY.md entry is about (`supersede_matching`).
SUPERSEDED_MATCH_MIN = 0.9

# After the message's embedding failed or timed out, later messages go without one for
# this long (their packs match words), so a hung server costs one wait, not one per turn.
QUERY_RETRY_SECONDS = 30.0
T = TypeVar("T")
_MEMORY_DEFAULTS = MemoryConfig()


def memory_query(
    text: str,
    scope: str,
    now: float,
    config: MemoryConfig,
    *,
    tz: tzinfo | None = None,
    request_messages: Sequence[Mapping[str, Any]] | None = None,
) -> MemoryQuery:
    """The query for `text`: with the days it names (read in `tz`) and, given the
    messages the request sends, what they already carry."""
    spans = find_dates(text, datetime.fromtimestamp(now, tz), config.date_languages) if tz else []
    query = MemoryQuery.for_config(text, scope, now, config)
    query.date_ranges = tuple((span.start, span.end) for span in spans)
    if request_messages:
        query.carried = RequestOverlap.of_messages(request_messages).carries
    return query


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
class _LoadedScope:
    store: ScopeItemStore
    index: BM25Index
    # Opened at the first use of embeddings, for the identity in force then.
    vectors: ScopeVectors | None = None

    def close_vectors(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
            self.vectors = None


class MemoryService:
    def __init__(
        self,
        workspace: Path,
        *,
        max_cached_scopes: int | Callable[[], int] = _MEMORY_DEFAULTS.max_cached_scopes,
        shared_files: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        embedder: EmbeddingModel | None = None,
    ) -> None:
        """`max_cached_scopes`: a number, or a callable read at each load (a live config).

        `shared_files`: other processes (replicas on a shared volume) write scopes too; a
        cached scope whose files changed since this process last touched them is loaded
        again before use (a stat of each item file per call).

        `clock`: when the stores stamp an edit or a forgetting (a replay passes its own).

        `embedder`: the embedding model (`item_vectors`); written items are embedded in
        the background while its config is enabled.
        """
        self.workspace = workspace
        self.clock = clock
        self.shared_files = shared_files
        # What each loaded scope's files looked like after this process last used them.
        self._signatures: dict[str, tuple[tuple[str, int, int, int], ...]] = {}
        # Most recently used last; a bot with thousands of chats keeps only the active
        # ones in memory, the others reload from their files when they speak again.
        self._stores: OrderedDict[str, _LoadedScope] = OrderedDict()
        self._cache_lock = threading.Lock()
        # One lock per scope, alive while a loaded store or a running call holds it: an
        # evicted scope still in use keeps its lock, so its reload waits for that call.
        self._scope_locks: weakref.WeakValueDictionary[str, threading.RLock] = (
            weakref.WeakValueDictionary()
        )
        limit = max_cached_scopes
        self._max_cached_scopes: Callable[[], int] = (
            limit if callable(limit) else lambda: limit  # type: ignore[return-value]
        )
        self._warm_pool = ThreadPoolExecutor(WARM_WORKERS, thread_name_prefix="memory")
        self._cold_pool = ThreadPoolExecutor(COLD_LOAD_WORKERS, thread_name_prefix="memory-load")
        self.embedder = embedder
        self._filler = VectorFiller(self._embed_written) if embedder is not None else None
        self._query_failed_at = -QUERY_RETRY_SECONDS
        self._query_failure = ""

    # ----------------------------------------------------------------- scopes

    def paths(self, scope: str) -> ScopePaths:
        return ScopePaths(self.workspace, scope)

    def store(self, scope: str) -> ScopeItemStore:
        """The scope's store, loaded; its own methods take the scope's lock."""
        with self._scope(scope) as loaded:
            return loaded.store

    def reload(self, scope: str) -> StoreStats:
        """Read the scope's files again: after maintenance or a hand edit rewrote them."""
        lock = self.scope_lock(scope)
        with lock:
            with self._cache_lock:
                gone = self._stores.pop(scope, None)
            if gone is not None:
                gone.close_vectors()
            return self._load(scope, lock).store.stats()

    def is_loaded(self, scope: str) -> bool:
        return scope in self._stores

    def scope_lock(self, scope: str) -> threading.RLock:
        """The lock every call on `scope` holds (re-entrant; shared with its store)."""
        with self._cache_lock:
            lock = self._scope_locks.get(scope)
            if lock is None:
                lock = threading.RLock()
                self._scope_locks[scope] = lock
            return lock

    @contextmanager
    def _scope(self, scope: str) -> Iterator[_LoadedScope]:
        """The loaded scope, with its lock held until the block ends."""
        lock = self.scope_lock(scope)
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

    def _load(self, scope: str, lock: threading.RLock) -> _LoadedScope:
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
        )
        stats = store.load()
        if stats.skipped_lines:
            log.warning(
                "memory scope %s: skipped %d torn or corrupt lines", scope, stats.skipped_lines
            )
        loaded = _LoadedScope(store, index)
        with self._cache_lock:
            self._stores[scope] = loaded
            while len(self._stores) > max(1, self._max_cached_scopes()):
                self._stores.popitem(last=False)[1].close_vectors()
        return loaded

    # ---------------------------------------------------------------- vectors

    def _vectors(self, scope: str, loaded: _LoadedScope, identity: str) -> ScopeVectors:
        """The scope's vectors of `identity`, mapped at first use (under the scope's lock)."""
        vectors = loaded.vectors
        if vectors is None or vectors.identity != identity:
            loaded.close_vectors()
            vectors = ScopeVectors(self.paths(scope).items_dir / VECTOR_FILE_NAME, identity)
            stats = vectors.load(loaded.store.items)
            if stats.damaged:
                log.warning(
                    "memory scope %s: %d damaged vectors ignored (embedded again)",
                    scope,
                    stats.damaged,
                )
            loaded.vectors = vectors
        return vectors

    def _items_written(self, scope: str, items: list[MemoryItem]) -> None:
        # Under the scope's lock, from inside a write: only queue, never wait.
        embedder, filler = self.embedder, self._filler
        if filler is not None and embedder is not None and embedder.config().identity():
            filler.enqueue(scope, [item.id for item in items])

    def _items_dropped(self, scope: str, item_ids: list[str]) -> None:
        loaded = self._stores.get(scope)
        if loaded is not None and loaded.vectors is not None:
            loaded.vectors.discard(item_ids)

    def _embed_written(self, scope: str, item_ids: list[str]) -> int:
        """The filler's work: embed these items of `scope` that still need it."""
        return self.fill_vectors(scope, only=item_ids).embedded

    def fill_vectors(
        self, scope: str, *, limit: int | None = None, only: Sequence[str] | None = None
    ) -> VectorFillReport:
        """Embed the scope's items that have no current vector (`only` these, at most
        `limit`); blocking, for worker threads. The model is called outside the scope's
        lock, so the chat goes on meanwhile; what changed in between is not stored."""
        if self.embedder is None:
            return VectorFillReport(note="no embedding model")
        config = self.embedder.config()
        identity = config.identity()
        if identity is None:
            return VectorFillReport(note="off (memory.embeddings.enabled)")

        def vectors_of(loaded: _LoadedScope) -> ScopeVectors:
            return self._vectors(scope, loaded, identity)

        return embed_missing(
            lambda: self._scope(scope),
            vectors_of,
            self.embedder,
            config,
            limit=config.fill_max_items_per_run if limit is None else limit,
            only=only,
        )

    async def query_vector(self, text: str, config: MemoryConfig) -> QueryVector | None:
        """The message's vector for its pack, within `embeddings.queryTimeoutSeconds`;
        None when embeddings are off. A slow or failing server gives a vector-less
        `QueryVector` saying why (the pack then matches words only), and is not asked
        again for the next `QUERY_RETRY_SECONDS`, so a hung server costs one wait, not
        one per turn."""
        settings = config.embeddings
        identity = settings.identity()
        if identity is None or self.embedder is None:
            return None
        since = time.monotonic() - self._query_failed_at
        if since < QUERY_RETRY_SECONDS:
            return QueryVector(identity, None, f"skipped: {self._query_failure} {since:.0f} s ago")
        started = time.perf_counter()
        try:
            vector = await asyncio.wait_for(
                self.embedder.embed_query(text), settings.query_timeout_seconds
            )
        except TimeoutError:
            failure = f"timed out after {settings.query_timeout_seconds:g} s"
        except Exception as exc:  # any server failure: this turn goes without meaning
            failure = f"unavailable ({type(exc).__name__})"
        else:
            return QueryVector.of(identity, vector, (time.perf_counter() - started) * 1000)
        self._query_failed_at = time.monotonic()
        self._query_failure = failure
        log.warning("embedding the message failed (%s): its pack matches words only", failure)
        # What the failure cost this reply: the wait before giving up, in its diagnostics.
        return QueryVector(identity, None, failure, (time.perf_counter() - started) * 1000)

    def wait_for_vectors(self, timeout: float) -> bool:
        """Wait until the background embedding of written items is done (evals, tests)."""
        return self._filler is None or self._filler.wait_idle(timeout)

    # ------------------------------------------------------------ off the loop

    async def offload(self, scope: str, work: Callable[[], T]) -> T:
        """Run `work` (calls on `scope`) in a worker thread; for the event loop."""
        pool: Executor = self._warm_pool if self.is_loaded(scope) else self._cold_pool
        return await asyncio.get_running_loop().run_in_executor(pool, work)

    async def offload_write(self, scope: str, work: Callable[[], T]) -> T:
        """`offload` for a write: once queued it completes even if the caller is cancelled
        (a /stop mid-turn), never half done."""
        return await asyncio.shield(self.offload(scope, work))

    async def build_pack_async(
        self,
        scope: str,
        text: str,
        *,
        now: float,
        config: MemoryConfig,
        tz: tzinfo,
        request_messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> MemoryPack:
        work = partial(
            self.build_pack,
            scope,
            text,
            now=now,
            config=config,
            tz=tz,
            request_messages=request_messages,
        )
        return await self.offload(scope, work)

    async def record_turn_async(
        self,
        *,
        scope: str,
        user_text: str,
        assistant_text: str,
        at: float,
        config: MemoryConfig,
        tz: tzinfo,
        message_refs: list[str] | None = None,
        tool_outputs: list[str] | None = None,
        speaker: str | None = None,
        chat_key: str = "",
        forwarded: Sequence[ForwardedText] = (),
        documents: Sequence[DocumentText] = (),
        tags: Sequence[str] = (),
    ) -> RecordedTurn:
        """`record_turn` in a worker thread; a write once queued completes even if cancelled."""
        work = partial(
            self.record_turn,
            scope=scope,
            user_text=user_text,
            assistant_text=assistant_text,
            at=at,
            config=config,
            tz=tz,
            message_refs=message_refs,
            tool_outputs=tool_outputs,
            speaker=speaker,
            chat_key=chat_key,
            forwarded=forwarded,
            documents=documents,
            tags=tags,
        )
        return await self.offload_write(scope, work)

    async def add_flushed_facts_async(
        self,
        scope: str,
        bullets: list[str],
        *,
        at: float,
        session_key: str,
        tz: tzinfo,
        config: MemoryConfig,
    ) -> int:
        work = partial(
            self.add_flushed_facts,
            scope,
            bullets,
            at=at,
            session_key=session_key,
            tz=tz,
            config=config,
        )
        return await self.offload_write(scope, work)

    async def known_facts_async(self, scope: str, budget_tokens: int) -> str:
        return await self.offload(scope, partial(self.known_facts, scope, budget_tokens))

    def close(self) -> None:
        """Stop the worker threads once their calls are done (queued ones still run);
        items still waiting for their vectors get them at a later maintenance."""
        if self._filler is not None:
            self._filler.stop()
        self._warm_pool.shutdown(wait=False)
        self._cold_pool.shutdown(wait=False)

    # ------------------------------------------------------------------ write

    def record_turn(
        self,
        *,
        scope: str,
        user_text: str,
        assistant_text: str,
        at: float,
        config: MemoryConfig,
        tz: tzinfo,
        message_refs: list[str] | None = None,
        tool_outputs: list[str] | None = None,
        speaker: str | None = None,
        chat_key: str = "",
        forwarded: Sequence[ForwardedText] = (),
        documents: Sequence[DocumentText] = (),
        tags: Sequence[str] = (),
    ) -> RecordedTurn:
        """The dual write of one answered turn: the daily note line, then the items.

        `forwarded`: messages the user passed on, remembered as their authors' words at
        their dates; `documents`: files' texts, remembered in chunks (never as facts);
        `tags`: added to the turn's items ("voice", "photo").
        """
        with self._scope(scope) as loaded:
            recorded = self._record_turn(
                loaded.store,
                scope=scope,
                user_text=user_text,
                note_text=user_text if user_text.strip() else forwarded_note(forwarded),
                assistant_text=assistant_text,
                at=at,
                config=config,
                tz=tz,
                message_refs=message_refs,
                tool_outputs=tool_outputs,
                speaker=speaker,
                chat_key=chat_key,
                tags=list(tags),
            )
            stored, promoted = list(recorded.stored), list(recorded.promoted)
            event = TurnMemoryEvent(
                scope=scope,
                chat_key=chat_key or scope,
                user_text=user_text,
                assistant_text="",
                at=at,
                message_refs=list(message_refs or []),
            )
            similar = self._similar_finder(scope)
            for passed_on in forwarded:
                written = write_forwarded(
                    loaded.store, event, passed_on, config=config, similar=similar
                )
                stored += written.stored
                promoted += written.promoted
            for document in documents:
                stored += write_document(
                    loaded.store, document, scope=scope, at=at, config=config, speaker=speaker
                )
            return RecordedTurn(stored, promoted)

    def _record_turn(
        self,
        store: ScopeItemStore,
        *,
        scope: str,
        user_text: str,
        assistant_text: str,
        at: float,
        config: MemoryConfig,
        tz: tzinfo,
        message_refs: list[str] | None,
        tool_outputs: list[str] | None,
        speaker: str | None,
        chat_key: str,
        tags: list[str] | None = None,
        note_text: str | None = None,
    ) -> RecordedTurn:
        """`note_text`: the user's side of the daily note when it is not `user_text` (a
        turn of forwards only: whose words they were, not an empty "User:")."""
        paths = self.paths(scope)
        # An answer repeating what was just forgotten ("I removed your code QX-7...") is not
        # kept; the user saying it again, on purpose, is a new statement and is.
        assistant_text = ForgottenTexts.pending(paths).redact(assistant_text)
        note = user_text if note_text is None else note_text
        append_daily_note(paths.directory, note, assistant_text, at=at, tz=tz)
        event = TurnMemoryEvent(
            scope=scope,
            chat_key=chat_key or scope,
            user_text=user_text,
            assistant_text=assistant_text,
            at=at,
            tool_outputs=list(tool_outputs or []),
            message_refs=list(message_refs or []),
            speaker=speaker,
            tags=list(tags or []),
        )
        return write_turn(store, event, config=config, similar=self._similar_finder(scope))

    def _similar_finder(self, scope: str) -> SimilarFinder:
        def similar(text: str, count: int) -> list[str]:
            query_terms = terms(text)
            if not query_terms:
                return []
            with self._scope(scope) as loaded:
                # What is looked for (a restatement, the turn a fact was said in) holds
                # most of the text's terms, so it holds its rarest: searching with those
                # only finds it as well and skips the long posting lists of common words
                # (3 ms a search at 100k items with every term, well under 1 ms so).
                rarest = sorted(set(query_terms), key=loaded.index.document_frequency)
                hits = loaded.index.top(rarest[:_SIMILAR_QUERY_TERMS], count)
            return sorted(hits, key=hits.__getitem__, reverse=True)[:count]

        return similar

    def revise_message(
        self,
        *,
        scope: str,
        ref: str,
        user_text: str,
        assistant_text: str,
        at: float,
        now: float,
        config: MemoryConfig,
        tz: tzinfo,
        message_refs: Sequence[str],
        speaker: str | None = None,
        chat_key: str = "",
        tags: Sequence[str] = (),
    ) -> RecordedTurn:
        """A message edited after its turn: the turn is recorded again with the new wording
        at its own time `at`, and what memory held of the old wording (the turn, the facts
        derived from it) is marked earlier as of `now`, so it is never recalled as current.
        Forwarded messages and documents of the turn have refs of their own and stay.
        """
        with self._scope(scope) as loaded:
            store = loaded.store
            stale = [
                item.id
                for item in store.items.values()
                if ref in item.references
                and not item.is_superseded
                and FORWARDED_TAG not in item.tags
                and item.source != DOCUMENT_TAG
            ]
            append_daily_note(
                self.paths(scope).directory,
                f"(edited an earlier message) {user_text}",
                "",
                at=now,
                tz=tz,
            )
            event = TurnMemoryEvent(
                scope=scope,
                chat_key=chat_key or scope,
                user_text=user_text,
                assistant_text=assistant_text,
                at=at,
                message_refs=list(message_refs),
                speaker=speaker,
                tags=list(tags),
            )
            similar = self._similar_finder(scope)
            # Written first: a fact the edit kept word for word merges into its stored
            # item, which then stays current; only what the new wording lacks is marked.
            recorded = write_turn(store, event, config=config, similar=similar)
            kept = {item.id for item in (*recorded.stored, *recorded.promoted)}
            marked = supersede(store, [i for i in stale if i not in kept], None, now, similar)
            # Marking follows an old fact to the turns said when it was, and the new
            # wording's turn carries the same time: it stays current.
            again = [
                replace(item, valid_to=None, superseded_by=None)
                for item in marked
                if item.id in kept
            ]
            if again:
                store.add(again)
            return recorded

    def supersede_facts(
        self, scope: str, old_ids: list[str], new_id: str | None, *, at: float
    ) -> list[str]:
        """Mark facts no longer true from `at` on (replaced by `new_id`, if any); ids marked.

        For consolidation: replacements the write-time slot rules cannot see. The items
        stay, dated and marked, and a pack never shows them as current.
        """
        with self._scope(scope) as loaded:
            marked = supersede(loaded.store, old_ids, new_id, at, self._similar_finder(scope))
            return [item.id for item in marked]

    def add_flushed_facts(
        self,
        scope: str,
        bullets: list[str],
        *,
        at: float,
        session_key: str,
        tz: tzinfo | None = None,
        config: MemoryConfig | None = None,
    ) -> int:
        """Facts the compaction flush found: into the daily note and the durable layers."""
        config = config or _MEMORY_DEFAULTS
        facts = flushed_facts(bullets, scope=scope, at=at, session_key=session_key, config=config)
        if not facts:
            return 0
        with self._scope(scope) as loaded:
            # The model's words: noted as such, never as something the user said.
            append_noted_facts(
                self.paths(scope).directory, [fact.content for fact in facts], at=at, tz=tz
            )
            written = write_facts(
                loaded.store, facts, at=at, config=config, similar=self._similar_finder(scope)
            )
            return len(written.stored)

    def add_fact(
        self,
        scope: str,
        content: str,
        *,
        item_type: ItemType,
        at: float,
        config: MemoryConfig,
        speaker: str | None = None,
        tags: Sequence[str] = (),
        references: Sequence[str] = (),
    ) -> FactWrite:
        """A fact the model saves (the memory tool), said by `speaker` if named.

        Weighted as the config says for the tool; a repeat merges into the stored fact
        and a newer value of a slot replaces the older one, as a turn's facts do. Nothing
        is stored when the text was forgotten at the user's request at `at` or later.
        """
        fact = new_fact(
            content,
            item_type=item_type,
            scope=scope,
            at=at,
            source="tool",
            config=config,
            speaker=speaker,
            tags=tags,
            references=references,
        )
        with self._scope(scope) as loaded:
            return write_facts(
                loaded.store, [fact], at=at, config=config, similar=self._similar_finder(scope)
            )

    def rewrite_fact(
        self,
        scope: str,
        item_id: str,
        *,
        content: str,
        tags: list[str] | None,
        at: float,
        config: MemoryConfig,
    ) -> MemoryItem | None:
        """An item's new wording (the memory tool's update); None for an unknown id.

        ValueError when the text was forgotten or another item already holds it.
        """
        with self._scope(scope) as loaded:
            return rewrite_fact(
                loaded.store,
                item_id,
                content=content,
                tags=tags,
                at=at,
                config=config,
                similar=self._similar_finder(scope),
            )

    def promote(
        self, scope: str, item_id: str, *, at: float, config: MemoryConfig
    ) -> MemoryItem | None:
        """Make an episode durable (the memory tool's promote); None if it is not one."""
        with self._scope(scope) as loaded:
            return promote_item(
                loaded.store, item_id, at=at, config=config, similar=self._similar_finder(scope)
            )

    def supersede_matching(
        self, scope: str, entries: list[str], *, at: float, config: MemoryConfig
    ) -> list[str]:
        """Consolidation's replacements: the durable facts matching MEMORY.md entries the
        model called superseded are marked earlier from `at` on; ids marked.

        Only a near-certain match (`SUPERSEDED_MATCH_MIN` of the best BM25 relevance) is
        marked: an entry names its fact in other words, and a wrong mark hides a fact.
        """
        with self._scope(scope) as loaded:
            stale: list[str] = []
            for entry in entries:
                stale += [
                    item.id
                    for item, score in self._search(loaded, entry, limit=3)
                    if score >= SUPERSEDED_MATCH_MIN and item.layer is not Layer.EPISODIC
                ]
            if not stale:
                return []
            marked = supersede(
                loaded.store, list(dict.fromkeys(stale)), None, at, self._similar_finder(scope)
            )
            return [item.id for item in marked]

    def get(self, scope: str, item_id: str) -> MemoryItem | None:
        """The scope's item of that id (None: unknown, or of another scope)."""
        with self._scope(scope) as loaded:
            return loaded.store.get(item_id)

    def write_memory_file(self, scope: str, text: str, *, append: bool, max_chars: int) -> int:
        """Replace the scope's MEMORY.md, or append to it; its new length in characters.

        MemoryFileTooLong when the file would be longer than `max_chars`.
        """
        with self.scope_lock(scope):
            return write_memory_file(
                self.paths(scope).memory_file, text, append=append, max_chars=max_chars
            )

    # ------------------------------------------------------------------- read

    def build_pack(
        self,
        scope: str,
        text: str,
        *,
        now: float,
        config: MemoryConfig,
        tz: tzinfo,
        request_messages: Sequence[Mapping[str, Any]] | None = None,
        query_vector: QueryVector | None = None,
    ) -> MemoryPack:
        """The pack for `text`; episodes of `request_messages` (what the request to the
        model sends beside it) are left out. Dates in `text` are read in `tz`.

        `query_vector` (embeddings on): the message's vector, fused with the word match
        when the scope has vectors of the same model; the diagnostics say when not."""
        # Read before the scope's lock: the date parser is the slow part of a query.
        query = memory_query(text, scope, now, config, tz=tz, request_messages=request_messages)
        with self._scope(scope) as loaded:
            dense, meaning = self._dense_search(scope, loaded, config, query_vector)
            pack = build_pack(
                loaded.store.items,
                loaded.index,
                query,
                config.ranking,
                decay_enabled=config.decay_enabled,
                decay_days=config.decay_days,
                tz=tz,
                turns_around=loaded.store.timeline.around,
                dense=dense,
            )
        pack.diagnostics.meaning = meaning
        if query_vector is not None:
            pack.diagnostics.embed_ms = query_vector.embed_ms
        return pack

    def _dense_search(
        self,
        scope: str,
        loaded: _LoadedScope,
        config: MemoryConfig,
        query_vector: QueryVector | None,
    ) -> tuple[VectorSearch | None, str]:
        """The search by meaning for this pack, or None and why not."""
        identity = config.embeddings.identity()
        if identity is None:
            return None, "off"
        if query_vector is None:
            return None, "no vector for the message"
        if query_vector.vector is None:
            return None, query_vector.note
        if query_vector.identity != identity:
            return None, "the message was embedded by another model"
        vectors = self._vectors(scope, loaded, identity)
        if not len(vectors):
            return None, "no item vectors yet (maintenance embeds them)"
        if vectors.dims != query_vector.vector.shape[-1]:
            return None, "the message's vector has another length than the items'"
        return VectorSearch(vectors, query_vector.vector, config.ranking.dense_rescore), "used"

    def search(
        self, scope: str, text: str, *, config: MemoryConfig, tz: tzinfo, limit: int = 10
    ) -> list[tuple[MemoryItem, float]]:
        """Items of every layer ranked by BM25 relevance (0..1), best first.

        Unlike the pack, nothing is deduplicated or budgeted: the memory tool must see
        the durable copy of a fact as well as the episode it came from, to update it.
        """
        with self._scope(scope) as loaded:
            return self._search(loaded, text, limit=limit)

    @staticmethod
    def _search(loaded: _LoadedScope, text: str, *, limit: int) -> list[tuple[MemoryItem, float]]:
        query_terms = terms(text)
        if not query_terms:
            return []
        hits = loaded.index.top(query_terms, max(limit, 1))
        base = loaded.index.base_score(query_terms)
        best = max(hits.values(), default=0.0) - base
        ranked = sorted(hits.items(), key=lambda hit: hit[1], reverse=True)
        found = []
        for item_id, score in ranked:
            item = loaded.store.items.get(item_id)
            if item is not None:
                found.append((item, (score - base) / best if best > 0 else 0.0))
        return found[:limit]

    def forget(self, scope: str, item_id: str) -> list[str]:
        """Forget an item and whatever would still tell the same thing; ids forgotten.

        What goes with it and which texts are erased: `memory.forgotten_texts`. Daily-note
        lines are redacted at once (the legacy context shows them); the other files at the
        next maintenance (`erase_forgotten`).
        """
        return [item.id for item in self.forget_items(scope, item_id)]

    def forget_items(self, scope: str, item_id: str) -> list[MemoryItem]:
        """`forget`, returning the items forgotten (the named one first)."""
        with self._scope(scope) as loaded:
            return self._forget(loaded.store, scope, item_id)

    def _forget(self, store: ScopeItemStore, scope: str, item_id: str) -> list[MemoryItem]:
        item = store.get(item_id)
        if item is None:
            return []
        going, needles = items_to_forget(store.items.values(), item, PROMOTED_FROM_PREFIX)
        for victim in going:
            store.forget(victim.id)
        self._note_forgotten_texts(scope, needles)
        return [victim for victim in going if store.get(victim.id) is None]

    def _note_forgotten_texts(self, scope: str, needles: list[str]) -> None:
        paths = self.paths(scope)
        for needle in needles:
            redact_daily_notes(paths.directory, needle)
        # The rest (item files, sessions, offload logs, MEMORY.md) at the next maintenance.
        note_forgotten(paths, needles)

    def forget_matching(self, scope: str, query: str) -> ForgetOutcome:
        """Forget every item, MEMORY.md line and daily-note line that holds all the words
        of `query` ("locker code"), with what goes with each (see `forget`).

        A query matching more than `FORGET_QUERY_MAX_ITEMS` items forgets nothing: it is
        too broad to be what the user meant.
        """
        wanted = list(dict.fromkeys(terms(query)))
        if not wanted:
            return ForgetOutcome()
        paths = self.paths(scope)
        with self._scope(scope) as loaded:
            store, index = loaded.store, loaded.index
            rarest = min(wanted, key=index.document_frequency)
            matching = [
                item
                for item_id in index.scores([rarest])
                if (item := store.items.get(item_id)) is not None
                and set(wanted) <= set(terms(item.content))
            ]
            if len(matching) > FORGET_QUERY_MAX_ITEMS:
                return ForgetOutcome(too_many=len(matching))
            lines = lines_holding(paths, set(wanted))
            gone: dict[str, MemoryItem] = {}
            for item in sorted(matching, key=lambda i: i.type is not ItemType.TURN):
                if item.id not in gone:
                    going = self._forget(store, scope, item.id)
                    gone.update((victim.id, victim) for victim in going)
            self._note_forgotten_texts(scope, [normalize_content(line) for line in lines])
        return ForgetOutcome(items=list(gone.values()), lines=len(lines))

    def forgotten_texts(self, scope: str) -> ForgottenTexts:
        """Texts of the scope forgotten and not yet erased from every file."""
        return ForgottenTexts.pending(self.paths(scope))

    def erase_forgotten(self, scope: str, *, session_wait_seconds: float = 30.0) -> ErasureReport:
        """Maintenance step: remove what `forget` hid from every file of the scope.

        Live items still holding a forgotten text are forgotten too; item files are
        rewritten without forgotten items (tombstones keep only ids and fingerprints);
        daily notes, MEMORY.md and its versions, the sessions and offload logs of the
        scope's chats are redacted. A session a turn holds for longer than
        `session_wait_seconds` keeps the erasure pending for the next run. Cheap when
        nothing was forgotten since the last run.
        """
        paths = self.paths(scope)
        needles = pending_needles(paths)
        if not needles and not self.is_loaded(scope):
            # Nothing forgotten since the last run: not worth loading a cold scope for.
            return ErasureReport(scope)
        # The conversations first, each under its session's lock: a turn holds that lock
        # until it has recorded itself in memory, so what a turn still running wrote (its
        # note line, its items) is on disk before the memory files below are redacted.
        # Not under the scope's lock: the turn may need it before it lets go.
        report = erase_texts_from_conversations(
            self.workspace, scope, needles, wait_seconds=session_wait_seconds
        )
        with self._scope(scope) as loaded:
            store = loaded.store
            forgotten = ForgottenTexts(tuple(needles))
            for other in [i for i in store.items.values() if forgotten.holds(i.content)]:
                store.forget(other.id)
            stats = store.stats()
            if needles or stats.lines > stats.items + stats.tombstones:
                store.compact_files()
            if needles:
                # A forgotten item's vector goes with it: the file is rewritten with the
                # vectors of live items only.
                self._compact_vectors(scope, loaded)
            report.add(
                erase_texts_from_memory_files(
                    self.workspace, paths, needles, skip=paths.item_files()
                )
            )
        if not report.busy:
            with self.scope_lock(scope):
                finish_erasure(paths, needles)
        return report

    def _compact_vectors(self, scope: str, loaded: _LoadedScope) -> None:
        """Rewrite the scope's vector file without the rows of items no longer live,
        whichever model made it (embeddings on or off): a forgotten text's vector could
        still give its meaning away."""
        path = self.paths(scope).items_dir / VECTOR_FILE_NAME
        identity = file_identity(path)
        if identity is None:
            return
        if not identity:
            loaded.close_vectors()
            path.unlink(missing_ok=True)
            return
        self._vectors(scope, loaded, identity).compact()

    def scopes_to_erase(self) -> list[str]:
        """Scopes with forgotten texts still on disk (what `erase_forgotten` has to do)."""
        root = self.workspace / "memory"
        if not root.is_dir():
            return []
        return sorted(p.parent.name for p in root.glob(f"*/{PENDING_FILE_NAME}"))

    def erase_scope(self, scope: str) -> list[str]:
        """Delete the scope's memory and the chat's session files (/forget_me); what went.

        Its vectors go with the directory; what waits to be embedded is dropped."""
        with self._scope(scope) as loaded:
            if self._filler is not None:
                self._filler.discard(scope)
            loaded.close_vectors()
            with self._cache_lock:
                self._stores.pop(scope, None)
            return erase_scope(self.workspace, scope)

    def move_scope(self, old: str, new: str, rename_ref: RenameRef | None = None) -> int:
        """Move scope `old`'s memory to scope `new` (a chat's new id), merged into what
        `new` has; how many files moved (0: `old` had none). `rename_ref` renames the moved
        items' references. Both scopes are read again afterwards.

        What waits to be embedded for `old` is dropped: its items are embedded under `new`
        when they are read there."""
        with self.scope_lock(old), self.scope_lock(new):
            if self._filler is not None:
                self._filler.discard(old)
            count = scope_move.move_scope(
                self.workspace, old, new, rename_ref or scope_move.keep_ref
            )
            self.reload(old)
            self.reload(new)
        return count

    def export_scope(self, scope: str) -> bytes:
        """The scope's memory files as one zip (/export)."""
        with self.scope_lock(scope):
            return export_scope(self.workspace, scope)

    def known_facts(self, scope: str, budget_tokens: int) -> str:
        """What the scope already holds durably, newest first, for the compaction flush."""
        forgotten = self.forgotten_texts(scope)
        with self._scope(scope) as loaded:
            items = loaded.store.items.values()
            durable = [
                i for i in items if i.layer is not Layer.EPISODIC and not forgotten.holds(i.content)
            ]
        durable.sort(key=lambda i: i.updated_at, reverse=True)
        scope_memory = self.scope_memory_text(scope, budget_tokens // 2)
        used = estimate_tokens(scope_memory)
        lines: list[str] = []
        for item in durable:
            line = f"- {item.content}"
            used += estimate_tokens(line)
            if used > budget_tokens:
                break
            lines.append(line)
        return "\n".join(filter(None, [scope_memory, *lines]))

    def scope_memory_text(self, scope: str, budget_tokens: int) -> str:
        """The chat's MEMORY.md within the budget, without lines forgotten and not yet
        erased (the file is rewritten at the next maintenance; until then it is hidden)."""
        text = read_memory_file(self.paths(scope).memory_file, budget_tokens)
        return self.forgotten_texts(scope).keep_lines(text)

    def operator_memory_text(self, budget_tokens: int) -> str:
        return read_memory_file(self.workspace / "memory" / "MEMORY.md", budget_tokens)

    def legacy_context_text(
        self, scope: str, now: datetime, config: MemoryConfig, *, long_term: bool = True
    ) -> str:
        """The recent daily notes; with `long_term`, MEMORY.md above them."""
        text = legacy_context(
            self.paths(scope).directory,
            now.date(),
            config.recent_days,
            config.legacy_context_budget_tokens,
            long_term=long_term,
        )
        return self.forgotten_texts(scope).keep_lines(text)

    def stats(self, scope: str) -> StoreStats:
        with self._scope(scope) as loaded:
            return loaded.store.stats()

    def layer_counts(self, scope: str) -> dict[str, int]:
        return self.stats(scope).per_layer


def forwarded_note(forwarded: Sequence[ForwardedText]) -> str:
    """The daily note's user side for a turn of forwards only, each with its author."""
    return " ".join(f"[forwarded from {f.author}] {f.text}" for f in forwarded)
