"""Recall: what a scope remembers, as the pack for a message, a search, an item, the
known facts and the memory files' texts.

The bot (ContextBuilding), `mnemobot memory pack` and `mnemobot eval` build the very
same pack here. Every method runs under the scope's lock (see `scopes`); forgotten texts
not yet erased from the files are hidden from what is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from functools import partial
from typing import Any

from mnemobot.base.tokens import estimate_tokens
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.notes.daily_notes import RECENT_NOTES_DAYS, legacy_context, read_memory_file
from mnemobot.memory.notes.digests import is_span_question, matching_digests
from mnemobot.memory.pack.build import MemoryPack, build_pack
from mnemobot.memory.pack.passages import message_text
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.pack.request_overlap import RequestOverlap
from mnemobot.memory.pack.states import latest_value
from mnemobot.memory.services.scopes import LoadedScope, ScopeRuntime
from mnemobot.memory.services.vectors import MemoryVectors
from mnemobot.memory.store.item_store import ScopeItemStore, StoreStats
from mnemobot.memory.store.item_vectors import QueryVector
from mnemobot.memory.store.items import Layer, MemoryItem
from mnemobot.memory.text.dates import find_dates
from mnemobot.memory.text.terms import terms
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.memory.write.standing import current_standing
from mnemobot.memory.write.standing_block import StandingBlock, carried_standing, render_standing


def memory_query(
    text: str,
    scope: str,
    now: float,
    config: MemoryConfig,
    *,
    tz: tzinfo | None = None,
    request_messages: Sequence[Mapping[str, Any]] | None = None,
    ranking: Ranking = DEFAULT_RANKING,
    recent_context: bool = True,
) -> MemoryQuery:
    """The query for `text`: with the days it names (read in `tz`) and, given the
    messages the request sends, what they already carry. Without `recent_context` only
    what matches the text is a candidate: neither the newest episodes nor everything of a
    day the text names ("I am planning the week today" is not a question about today),
    nor (`MemoryRecall.build_pack`) the turns around a matching one."""
    query = MemoryQuery.for_config(text, scope, now, config, ranking)
    if recent_context:
        when = datetime.fromtimestamp(now, tz) if tz else None
        spans = find_dates(text, when, config.date_languages) if when else []
        query.date_ranges = tuple((span.start, span.end) for span in spans)
    else:
        query.working_top_k = 0
    if request_messages:
        query.carried = RequestOverlap.of_messages(request_messages).carries
    return query


@dataclass(slots=True)
class SearchHits:
    """Items found, best first, with their relevance (0..1); and those stating an older
    value of what the search names than a newer statement found beside them, with when
    that was stated (`memory.pack.states.latest_value`, as the pack marks them)."""

    found: list[tuple[MemoryItem, float]] = field(default_factory=list)
    updated: dict[str, float] = field(default_factory=dict)


def ranked_search(
    loaded: LoadedScope, text: str, *, limit: int, replaced_weight: float = 1.0
) -> list[tuple[MemoryItem, float]]:
    """Items of the loaded scope ranked by BM25 relevance (0..1), best first; an item a
    newer statement replaced counts `replaced_weight` of its relevance (the pack's
    `superseded_weight`), so the current value comes before the one it replaced."""
    return marked_search(loaded, text, limit=limit, replaced_weight=replaced_weight).found


def marked_search(
    loaded: LoadedScope, text: str, *, limit: int, replaced_weight: float = 1.0
) -> SearchHits:
    """`ranked_search`, with the older statements of a value or state that changed (a
    newer one among the hits says so) marked, and counted as replaced."""
    query_terms = terms(text)
    if not query_terms:
        return SearchHits()
    # Twice the hits: a replaced item moved down makes room for one below the limit.
    wanted = max(limit, 1) * (2 if replaced_weight < 1.0 else 1)
    hits = loaded.index.top(query_terms, wanted)
    base = loaded.index.base_score(query_terms)
    best = max(hits.values(), default=0.0) - base
    found = [
        (item, (score - base) / best if best > 0 else 0.0)
        for item_id, score in hits.items()
        if (item := loaded.store.items.get(item_id)) is not None
    ]
    weights = {term: loaded.index.idf(term) for term in query_terms}
    updated = latest_value([item for item, _ in found], weights).earlier
    found = [
        (item, relevance * (replaced_weight if item.is_superseded or item.id in updated else 1.0))
        for item, relevance in found
    ]
    found.sort(key=lambda hit: hit[1], reverse=True)
    kept = found[:limit]
    shown = {item.id for item, _ in kept}
    return SearchHits(kept, {i: at for i, at in updated.items() if i in shown})


class MemoryRecall:
    def __init__(
        self, scopes: ScopeRuntime, vectors: MemoryVectors, ranking: Ranking = DEFAULT_RANKING
    ) -> None:
        """`ranking`: the pack's tuning (the bot's; an eval or a test passes another)."""
        self.scopes = scopes
        self.vectors = vectors
        self.ranking = ranking

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
        recent_context: bool = True,
        standing: StandingBlock | None = None,
    ) -> MemoryPack:
        """The pack for `text`; episodes of `request_messages` (what the request to the
        model sends beside it) are left out, and so are the standing preferences the
        request carries (`standing`; by default the block `standing_block` renders). Dates
        in `text` are read in `tz`. `recent_context`: see `memory_query`.

        `query_vector` (embeddings on): the message's vector, fused with the word match
        when the scope has vectors of the same model; the diagnostics say when not."""
        # Read before the scope's lock: the date parser is the slow part of a query.
        query = memory_query(
            text,
            scope,
            now,
            config,
            tz=tz,
            request_messages=request_messages,
            ranking=self.ranking,
            recent_context=recent_context,
        )
        with self.scopes.loaded(scope) as loaded:
            in_force = current_standing(loaded.store)
            if standing is None:
                standing = render_standing(in_force, config.standing_budget_tokens, tz)
            query.carried = carried_standing(standing, query.carried)
            shown = {item.id for item in standing.items}
            query.held_back_standing = tuple(i for i in in_force if i.id not in shown)
            query.standing_said_in = said_in(loaded.store, query.held_back_standing)
            dense, meaning = self.vectors.search(scope, loaded, config, query_vector)
            pack = build_pack(
                loaded.store.items,
                loaded.index,
                query,
                self.ranking,
                tz=tz,
                # A statement's pack: what it matches, not the turns around that.
                turns_around=loaded.store.timeline.around if recent_context else None,
                dense=dense,
                digests=partial(matching_digests, loaded.store) if is_span_question(text) else None,
            )
        pack.diagnostics.meaning = meaning
        if query_vector is not None:
            pack.diagnostics.embed_ms = query_vector.embed_ms
        return pack

    def search(
        self, scope: str, text: str, *, config: MemoryConfig, tz: tzinfo, limit: int = 10
    ) -> list[tuple[MemoryItem, float]]:
        """Items of every layer ranked by BM25 relevance (0..1), best first; a replaced
        value after the current one.

        Unlike the pack, nothing is deduplicated or budgeted: the memory tool must see
        the durable copy of a fact as well as the episode it came from, to update it.
        """
        return self.marked_search(scope, text, limit=limit).found

    def marked_search(self, scope: str, text: str, *, limit: int = 10) -> SearchHits:
        """`search`, with the hits stating an older value of what it names (a newer
        statement among the hits) marked, as the pack marks them."""
        with self.scopes.loaded(scope) as loaded:
            return marked_search(
                loaded, text, limit=limit, replaced_weight=self.ranking.superseded_weight
            )

    def get(self, scope: str, item_id: str) -> MemoryItem | None:
        """The scope's item of that id (None: unknown, or of another scope)."""
        with self.scopes.loaded(scope) as loaded:
            return loaded.store.get(item_id)

    def message_text(self, scope: str, ref: str) -> str | None:
        """What memory holds of the message `ref` ("tg:42", as an excerpt in a pack names
        it): its turn's pieces in order; None when no item carries the ref."""
        with self.scopes.loaded(scope) as loaded:
            return message_text(loaded.store.items.values(), ref)

    def standing_block(self, scope: str, tz: tzinfo, budget_tokens: int) -> StandingBlock:
        """The standing preferences every request of the chat carries
        (`memory.write.standing`)."""
        with self.scopes.loaded(scope) as loaded:
            return render_standing(current_standing(loaded.store), budget_tokens, tz)

    def known_facts(self, scope: str, budget_tokens: int) -> str:
        """What the scope already holds durably, newest first, for the compaction flush."""
        forgotten = ForgottenTexts.pending(self.scopes.paths(scope))
        with self.scopes.loaded(scope) as loaded:
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
        paths = self.scopes.paths(scope)
        text = read_memory_file(paths.memory_file, budget_tokens)
        return ForgottenTexts.pending(paths).keep_lines(text)

    def operator_memory_text(self, budget_tokens: int) -> str:
        return read_memory_file(self.scopes.workspace / "memory" / "MEMORY.md", budget_tokens)

    def legacy_context_text(
        self, scope: str, now: datetime, config: MemoryConfig, *, long_term: bool = True
    ) -> str:
        """The recent daily notes; with `long_term`, MEMORY.md above them."""
        paths = self.scopes.paths(scope)
        text = legacy_context(
            paths.directory,
            now.date(),
            RECENT_NOTES_DAYS,
            config.legacy_context_budget_tokens,
            long_term=long_term,
        )
        return ForgottenTexts.pending(paths).keep_lines(text)

    def stats(self, scope: str) -> StoreStats:
        with self.scopes.loaded(scope) as loaded:
            return loaded.store.stats()

    def layer_counts(self, scope: str) -> dict[str, int]:
        return self.stats(scope).per_layer


# A standing item is written at its turn's time; a millisecond holds float rounding.
SAME_TIME = 0.001


def said_in(store: ScopeItemStore, standing: Sequence[MemoryItem]) -> dict[str, str]:
    """The turn each standing item was said in (id -> turn id): at its time, with its
    message."""
    found: dict[str, str] = {}
    for item in standing:
        refs = set(item.references)
        for turn in store.timeline.between(item.created_at, item.created_at + SAME_TIME):
            if refs & set(turn.references):
                found[item.id] = turn.id
                break
    return found
