"""MemoryService: every memory scope of a workspace behind one small surface.

It is what the systems (ContextBuilding, MemoryPersist, compaction's flush), the memory
tool and the CLI use, so that the bot, `mnemobot memory pack` and `mnemobot eval` build
the very same pack from the very same write path.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path

from config.runtime import MemoryConfig
from memory.bm25 import BM25Index
from memory.daily_notes import (
    append_daily_note,
    legacy_context,
    read_memory_file,
    redact_daily_notes,
)
from memory.extraction import extract_items
from memory.item_store import ScopeItemStore, StoreStats, new_item_id
from memory.items import (
    ItemType,
    Layer,
    MemoryItem,
    MemoryQuery,
    TurnMemoryEvent,
    normalize_content,
)
from memory.pack import MemoryPack, build_pack
from memory.scope_paths import ScopePaths
from memory.text_terms import terms, terms_joined
from memory.tokens import estimate_tokens

log = logging.getLogger(__name__)

FLUSH_CONFIDENCE = 0.8
MAX_CACHED_SCOPES = 256
_PROCEDURE_MARK = "[procedure]"


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    stored: list[MemoryItem]
    promoted: list[MemoryItem]


def memory_query(text: str, scope: str, now: float, config: MemoryConfig) -> MemoryQuery:
    return MemoryQuery(
        text=text,
        scope=scope,
        now=now,
        episodic_top_k=config.episodic_top_k,
        semantic_top_k=config.semantic_top_k,
        procedural_top_k=config.procedural_top_k,
        working_top_k=config.working_top_k,
        soft_budget_tokens=config.soft_prompt_budget_tokens,
        max_budget_tokens=config.max_prompt_budget_tokens,
    )


class MemoryService:
    def __init__(self, workspace: Path, *, max_cached_scopes: int = MAX_CACHED_SCOPES) -> None:
        self.workspace = workspace
        # Most recently used last; a bot with thousands of chats keeps only the active
        # ones in memory, the others reload from their files when they speak again.
        self._stores: OrderedDict[str, tuple[ScopeItemStore, BM25Index]] = OrderedDict()
        self._lock = threading.Lock()
        self.max_cached_scopes = max_cached_scopes

    # ----------------------------------------------------------------- scopes

    def paths(self, scope: str) -> ScopePaths:
        return ScopePaths(self.workspace, scope)

    def store(self, scope: str) -> ScopeItemStore:
        return self._scope(scope)[0]

    def _scope(self, scope: str) -> tuple[ScopeItemStore, BM25Index]:
        found = self._stores.get(scope)
        if found is not None:
            with self._lock:
                if scope in self._stores:
                    self._stores.move_to_end(scope)
            return found
        with self._lock:
            found = self._stores.get(scope)
            if found is None:
                index = BM25Index()
                store = ScopeItemStore(
                    self.paths(scope), index=index, terms=terms, terms_joined=terms_joined
                )
                stats = store.load()
                if stats.skipped_lines:
                    log.warning(
                        "memory scope %s: skipped %d torn or corrupt lines",
                        scope,
                        stats.skipped_lines,
                    )
                found = self._stores[scope] = (store, index)
                while len(self._stores) > self.max_cached_scopes:
                    self._stores.popitem(last=False)
        return found

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
    ) -> RecordedTurn:
        """The dual write of one answered turn: the daily note line, then the items."""
        paths = self.paths(scope)
        append_daily_note(paths.directory, user_text, assistant_text, at=at, tz=tz)
        event = TurnMemoryEvent(
            scope=scope,
            chat_key=chat_key or scope,
            user_text=user_text,
            assistant_text=assistant_text,
            at=at,
            tool_outputs=list(tool_outputs or []),
            message_refs=list(message_refs or []),
            speaker=speaker,
        )
        items = extract_items(
            event,
            code_aware=config.code_aware_extraction_enabled,
            id_factory=new_item_id,
            config=config.extraction,
        )
        store = self.store(scope)
        stored = store.add(items)
        promoted: list[MemoryItem] = []
        if config.promotion_enabled and stored:
            promoted = store.auto_promote(config.promotion_min_confidence, stored)
        return RecordedTurn(stored, promoted)

    def add_flushed_facts(
        self,
        scope: str,
        bullets: list[str],
        *,
        at: float,
        session_key: str,
        tz: tzinfo | None = None,
    ) -> int:
        """Facts the compaction flush found: into the daily note and the durable layers."""
        items: list[MemoryItem] = []
        for bullet in bullets:
            procedural = bullet.lower().startswith(_PROCEDURE_MARK)
            text = bullet[len(_PROCEDURE_MARK) :].strip() if procedural else bullet.strip()
            if not text:
                continue
            items.append(
                MemoryItem(
                    id=new_item_id(),
                    layer=Layer.PROCEDURAL if procedural else Layer.SEMANTIC,
                    type=ItemType.FIX if procedural else ItemType.PROJECT_FACT,
                    title=text[:80],
                    content=text,
                    scope=scope,
                    created_at=at,
                    updated_at=at,
                    tags=["flush"],
                    references=[f"session:{session_key}"],
                    source="compaction",
                    confidence=FLUSH_CONFIDENCE,
                    salience=0.6,
                )
            )
        if not items:
            return 0
        notes = "\n".join(f"- {item.content}" for item in items)
        append_daily_note(
            self.paths(scope).directory,
            "(facts kept from a compacted conversation)",
            notes,
            at=at,
            tz=tz,
        )
        return len(self.store(scope).add(items))

    # ------------------------------------------------------------------- read

    def build_pack(
        self, scope: str, text: str, *, now: float, config: MemoryConfig, tz: tzinfo
    ) -> MemoryPack:
        store, index = self._scope(scope)
        return build_pack(
            store.items,
            index,
            memory_query(text, scope, now, config),
            config.ranking,
            decay_enabled=config.decay_enabled,
            decay_days=config.decay_days,
            tz=tz,
        )

    def search(
        self, scope: str, text: str, *, config: MemoryConfig, tz: tzinfo, limit: int = 10
    ) -> list[tuple[MemoryItem, float]]:
        """Items of every layer ranked by BM25 relevance (0..1), best first.

        Unlike the pack, nothing is deduplicated or budgeted: the memory tool must see
        the durable copy of a fact as well as the episode it came from, to update it.
        """
        store, index = self._scope(scope)
        query_terms = terms(text)
        if not query_terms:
            return []
        hits = index.top(query_terms, max(limit, 1))
        base = index.base_score(query_terms)
        best = max(hits.values(), default=0.0) - base
        ranked = sorted(hits.items(), key=lambda hit: hit[1], reverse=True)
        found = []
        for item_id, score in ranked:
            item = store.items.get(item_id)
            if item is not None:
                found.append((item, (score - base) / best if best > 0 else 0.0))
        return found[:limit]

    def forget(self, scope: str, item_id: str) -> list[str]:
        """Forget an item and whatever would still tell the same thing; ids forgotten.

        Tombstoning the item also removes its promoted copies (same fingerprint). The turn
        it was said in still holds the text, so turns of the same messages, or containing
        the text, go too, and daily-note lines containing it are redacted.
        """
        store = self.store(scope)
        item = store.get(item_id)
        if item is None:
            return []
        needle = normalize_content(item.content.split(": ", 1)[-1])
        refs = {r for r in item.references if not r.startswith(("file:", "promotedFrom:"))}
        related = [
            other.id
            for other in store.items.values()
            if other.id != item_id
            and other.layer is Layer.EPISODIC
            and (
                (refs and refs.intersection(other.references))
                or needle in normalize_content(other.content)
            )
        ]
        forgotten = [item_id] if store.forget(item_id) else []
        forgotten += [other for other in related if store.forget(other)]
        if needle:
            redact_daily_notes(self.paths(scope).directory, needle)
        return forgotten

    def known_facts(self, scope: str, budget_tokens: int) -> str:
        """What the scope already holds durably, newest first, for the compaction flush."""
        store = self.store(scope)
        durable = [i for i in store.items.values() if i.layer is not Layer.EPISODIC]
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
        return read_memory_file(self.paths(scope).memory_file, budget_tokens)

    def operator_memory_text(self, budget_tokens: int) -> str:
        return read_memory_file(self.workspace / "memory" / "MEMORY.md", budget_tokens)

    def legacy_context_text(self, scope: str, now: datetime, config: MemoryConfig) -> str:
        return legacy_context(
            self.paths(scope).directory,
            now.date(),
            config.recent_days,
            config.legacy_context_budget_tokens,
        )

    def stats(self, scope: str) -> StoreStats:
        return self.store(scope).stats()

    def layer_counts(self, scope: str) -> dict[str, int]:
        return self.stats(scope).per_layer
