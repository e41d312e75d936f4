"""A workspace's memory: the scope runtime and the role services over it, made together.

The composition root (`bot/app.py`), the CLI and the evals open one and hand each caller
the role it uses: ContextBuilding recalls, MemoryPersist records, the memory tool does
all three, /forget_me erases, maintenance reaches them through `MemoryUpkeep`. Nothing
holds the whole but whoever closes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.services.forget import MemoryForget
from mnemobot.memory.services.recall import MemoryRecall
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.memory.services.scopes import MAX_CACHED_SCOPES, ScopeRuntime
from mnemobot.memory.services.vectors import MemoryVectors
from mnemobot.memory.store.item_store import ScopeItemStore, StoreStats
from mnemobot.memory.store.item_vectors import EmbeddingModel, VectorFillReport
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.upkeep.forgetting import ErasureReport
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning


@dataclass(frozen=True, slots=True)
class WorkspaceMemory:
    scopes: ScopeRuntime
    recall: MemoryRecall
    record: MemoryRecord
    forget: MemoryForget
    vectors: MemoryVectors

    @classmethod
    def open(
        cls,
        workspace: Path,
        *,
        max_cached_scopes: int = MAX_CACHED_SCOPES,
        shared_files: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        embedder: EmbeddingModel | None = None,
        ranking: Ranking = DEFAULT_RANKING,
        extraction: ExtractionTuning = DEFAULT_EXTRACTION,
    ) -> WorkspaceMemory:
        """Memory of the scopes under `workspace` (see `ScopeRuntime` for the options);
        `embedder`: the embedding model, items embedded while its config is enabled.

        `ranking`, `extraction`: the pack's and the extraction's tuning; the defaults are
        the bot's, another value is for an eval or a test (they are not settings)."""
        scopes = ScopeRuntime(
            workspace, max_cached_scopes=max_cached_scopes, shared_files=shared_files, clock=clock
        )
        vectors = MemoryVectors(scopes, embedder, ranking)
        return cls(
            scopes=scopes,
            recall=MemoryRecall(scopes, vectors, ranking),
            record=MemoryRecord(scopes, extraction),
            forget=MemoryForget(scopes, vectors),
            vectors=vectors,
        )

    @property
    def workspace(self) -> Path:
        return self.scopes.workspace

    def close(self) -> None:
        """Stop the worker threads once their calls are done (queued ones still run) and
        close the embedding model's blocking client; items still waiting for their vectors
        get them at a later maintenance."""
        self.vectors.close()
        self.scopes.close()
        if self.vectors.embedder is not None:
            self.vectors.embedder.close()


@dataclass(frozen=True, slots=True)
class MemoryUpkeep:
    """What maintenance steps use of the memory (`memory.upkeep.maintenance.ScopeUpkeep`), which
    sits below the services and is handed this."""

    memory: WorkspaceMemory

    def items(self, scope: str) -> list[MemoryItem]:
        # A snapshot under the scope's lock: a turn may add items meanwhile.
        with self.memory.scopes.loaded(scope) as loaded:
            return list(loaded.store.items.values())

    def forgotten_texts(self, scope: str) -> ForgottenTexts:
        return self.memory.forget.forgotten_texts(scope)

    def is_loaded(self, scope: str) -> bool:
        return self.memory.scopes.is_loaded(scope)

    def store(self, scope: str) -> ScopeItemStore:
        return self.memory.scopes.store(scope)

    def reload(self, scope: str) -> StoreStats:
        return self.memory.scopes.reload(scope)

    def erase_forgotten(self, scope: str) -> ErasureReport:
        return self.memory.forget.erase_forgotten(scope)

    def embeddings_enabled(self) -> bool:
        return self.memory.vectors.enabled()

    def fill_vectors(self, scope: str) -> VectorFillReport:
        return self.memory.vectors.fill(scope)
