"""The vectors of a workspace's scopes: filled in the background, searched for a pack.

With embeddings on, each scope's item vectors (`vector_file`) follow its items: written
items are embedded in the background after the reply (`item_vectors.VectorFiller`),
forgotten or merged ones lose their vector (the scope runtime drops them), and the vector
file is rewritten without them when the forgotten text is erased (`compact`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.services.scopes import LoadedScope, ScopeRuntime
from mnemobot.memory.store.item_vectors import (
    FILL_MAX_ITEMS_PER_RUN,
    EmbeddingModel,
    QueryVector,
    VectorFiller,
    VectorFillReport,
    VectorSearch,
    embed_missing,
)
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.store.vector_file import VECTOR_FILE_NAME, ScopeVectors, file_identity

log = logging.getLogger(__name__)

# After the message's embedding failed or timed out, later messages go without one for
# this long (their packs match words), so a hung server costs one wait, not one per turn.
QUERY_RETRY_SECONDS = 30.0


class MemoryVectors:
    def __init__(
        self,
        scopes: ScopeRuntime,
        embedder: EmbeddingModel | None,
        ranking: Ranking = DEFAULT_RANKING,
    ) -> None:
        """`embedder`: the embedding model (`item_vectors`); written items are embedded in
        the background while its config is enabled. `ranking`: how many of the closest
        vectors a pack's search rescores (`Ranking.dense_rescore`)."""
        self.scopes = scopes
        self.embedder = embedder
        self.ranking = ranking
        self._filler = VectorFiller(self._embed_written) if embedder is not None else None
        if self._filler is not None:
            scopes.add_write_listener(self._items_written)
        self._query_failed_at = -QUERY_RETRY_SECONDS
        self._query_failure = ""

    def enabled(self) -> bool:
        """Whether items are embedded now (a model, and `memory.embeddings` on)."""
        return self.embedder is not None and self.embedder.config().identity() is not None

    def of(self, scope: str, loaded: LoadedScope, identity: str) -> ScopeVectors:
        """The scope's vectors of `identity`, mapped at first use (under the scope's lock)."""
        vectors = loaded.vectors
        if vectors is None or vectors.identity != identity:
            loaded.close_vectors()
            vectors = ScopeVectors(self.scopes.paths(scope).items_dir / VECTOR_FILE_NAME, identity)
            stats = vectors.load(loaded.store.items)
            if stats.damaged:
                log.warning(
                    "memory scope %s: %d damaged vectors ignored (embedded again)",
                    scope,
                    stats.damaged,
                )
            loaded.vectors = vectors
        return vectors

    def fill(
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

        def vectors_of(loaded: LoadedScope) -> ScopeVectors:
            return self.of(scope, loaded, identity)

        return embed_missing(
            lambda: self.scopes.loaded(scope),
            vectors_of,
            self.embedder,
            limit=FILL_MAX_ITEMS_PER_RUN if limit is None else limit,
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

    def search(
        self,
        scope: str,
        loaded: LoadedScope,
        config: MemoryConfig,
        query_vector: QueryVector | None,
    ) -> tuple[VectorSearch | None, str]:
        """The search by meaning for a pack of the loaded scope, or None and why not."""
        identity = config.embeddings.identity()
        if identity is None:
            return None, "off"
        if query_vector is None:
            return None, "no vector for the message"
        if query_vector.vector is None:
            return None, query_vector.note
        if query_vector.identity != identity:
            return None, "the message was embedded by another model"
        vectors = self.of(scope, loaded, identity)
        if not len(vectors):
            return None, "no item vectors yet (maintenance embeds them)"
        if vectors.dims != query_vector.vector.shape[-1]:
            return None, "the message's vector has another length than the items'"
        return VectorSearch(vectors, query_vector.vector, self.ranking.dense_rescore), "used"

    def compact(self, scope: str, loaded: LoadedScope) -> None:
        """Rewrite the scope's vector file without the rows of items no longer live,
        whichever model made it (embeddings on or off): a forgotten text's vector could
        still give its meaning away."""
        path = self.scopes.paths(scope).items_dir / VECTOR_FILE_NAME
        identity = file_identity(path)
        if identity is None:
            return
        if not identity:
            loaded.close_vectors()
            path.unlink(missing_ok=True)
            return
        self.of(scope, loaded, identity).compact()

    def discard_pending(self, scope: str) -> None:
        """Drop what waits to be embedded for `scope` (it was erased or moved)."""
        if self._filler is not None:
            self._filler.discard(scope)

    def wait(self, timeout: float) -> bool:
        """Wait until the background embedding of written items is done (evals, tests)."""
        return self._filler is None or self._filler.wait_idle(timeout)

    def close(self) -> None:
        """Stop the background embedding; items still waiting for their vectors get them
        at a later maintenance."""
        if self._filler is not None:
            self._filler.stop()

    def _items_written(self, scope: str, items: list[MemoryItem]) -> None:
        # Under the scope's lock, from inside a write: only queue, never wait.
        embedder, filler = self.embedder, self._filler
        if filler is not None and embedder is not None and embedder.config().identity():
            filler.enqueue(scope, [item.id for item in items])

    def _embed_written(self, scope: str, item_ids: list[str]) -> int:
        """The filler's work: embed these items of `scope` that still need it."""
        return self.fill(scope, only=item_ids).embedded
