"""The MemoryPack: the memory items chosen for one turn, within a token budget, as Markdown.

`build_pack` turns a scope's items (the store's `id -> MemoryItem` dict) and the BM25
index over the same ids into a pack, in four steps, each a function of its own module:

1. Candidates (`pack_candidates`): the best BM25 hits of the query's terms
   (`text_terms.search_terms`), the items written on days the query names, or else the
   `working_top_k` newest episodes the request does not carry; then the turns around
   each matching turn, which borrow part of its relevance; episodes the request carries
   left out.
2. Scores (`pack_selection.score_candidates`): relevance plus recency, salience,
   confidence and a type boost (`memory.pack.scoring`); durable items decay with age but
   never to zero, and a fact a newer statement replaced keeps `superseded_weight`. The
   newest statement of a figure or a state the question asks about goes first
   (`memory.pack.figures`, `memory.pack.states`), also when only the words of the
   person's first statement of it find it (`memory.pack.value_thread`).
3. Selection (`pack_selection.select_items`, `fill_past_top_k`): best first, within
   the per-layer topK and the soft budget (past it only high scorers, up to the max
   budget), skipping what a chosen item already says; soft budget the topK limits left
   is filled with the next matching items.
   A question spanning the history ("in what order did I...", "summarize...") gets the
   digests of the days holding its terms first (`memory.notes.digests`), within
   `DIGEST_SHARE`.
4. Rendering (`pack_render`): `# Memory` with `## Recent episodes` (oldest first, each
   line dated), `## Relevant facts`, `## Applicable procedures`; empty sections are
   left out and an empty pack renders as "".

Neither building nor rendering changes any item (no access-time bumps): a caller that
wants to record access does so itself.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, tzinfo
from typing import Any

from mnemobot.base.tokens import CHARS_PER_TOKEN
from mnemobot.memory.notes.digests import DigestSearch, is_span_question, pick_lines
from mnemobot.memory.pack.candidates import (
    Candidates,
    InContext,
    find_candidates,
    in_context,
    layer_top_k,
)
from mnemobot.memory.pack.figures import FIGURE_CANDIDATES
from mnemobot.memory.pack.fusion import DenseSearch
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.pack.render import (
    SECTION_OF_LAYER,
    Focus,
    PackedItem,
    PackSection,
    render_line,
    render_pack,
)
from mnemobot.memory.pack.restated import restated_among, said_in
from mnemobot.memory.pack.selection import (
    MIN_ITEM_TOKENS,
    ScoredItem,
    date_boost,
    fill_past_top_k,
    score_candidates,
    select_items,
)
from mnemobot.memory.pack.states import latest_value
from mnemobot.memory.pack.turn_neighbours import TurnsAround
from mnemobot.memory.pack.value_thread import ValueThread, value_thread
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.items import STANDING_TAG, Layer, MemoryItem
from mnemobot.memory.text.terms import search_terms

# The share of the soft budget a question spanning the history gives the days' digests
# (its best-matching turns follow, past the soft budget only as high scorers), and how
# many days (best BM25 first) it reads line by line. BEAM development chats at 1800
# tokens, overall recall at a share of 0.3 / 0.5 / 0.65 / 0.8 / 1.0: 100K 0.658 / 0.684 /
# 0.693 / 0.700 / 0.708, 500K `--assistant-replies` 0.635 (0.5) / 0.647 / 0.654; event
# ordering and summarization rise with it, nothing else moves (docs/measured.md).
DIGEST_SHARE = 1.0
DIGEST_CANDIDATES = 60

__all__ = [
    "CHOICE_REASONS",
    "MIN_ITEM_TOKENS",
    "SECTION_OF_LAYER",
    "MemoryPack",
    "PackDiagnostics",
    "PackSection",
    "PackedItem",
    "build_pack",
    "date_boost",
    "render_line",
    "render_pack",
]


# Why an item was a candidate, as `PackedItem.reasons` names it: its words matched the
# query's; its meaning was among the nearest (embeddings); it was written on a day the
# query names; it is a turn next to a matching turn (the question a matching answer
# replies to); it is one of the newest episodes, taken when nothing else matched; it says
# a newer value of what the query asks about than another candidate (put first).
CHOICE_REASONS = ("words", "meaning", "date", "neighbour", "recent", "update")


def choice_reasons(
    item: MemoryItem,
    found: Candidates,
    context: InContext,
    date_ranges: Sequence[tuple[float, float]],
    by_meaning: frozenset[str],
    updates: frozenset[str] = frozenset(),
) -> tuple[str, ...]:
    """The `CHOICE_REASONS` that made `item` a candidate, in that order."""
    reasons = []
    if item.id in found.hits:
        reasons.append("words")
    if item.id in by_meaning:
        reasons.append("meaning")
    if any(start <= item.created_at < end for start, end in date_ranges):
        reasons.append("date")
    if context.lent.get(item.id, 0.0) > 0:
        reasons.append("neighbour")
    if item.id in found.unmatched_recent:
        reasons.append("recent")
    if item.id in updates:
        reasons.append("update")
    return tuple(reasons)


@dataclass(slots=True)
class PackDiagnostics:
    candidates_per_layer: dict[str, int]
    chosen_per_layer: dict[str, int]
    dropped_by_budget: int
    build_ms: float
    # Set by the caller when it fell back to the legacy daily notes.
    legacy_fallback_used: bool
    total_tokens: int
    soft_budget_tokens: int
    max_budget_tokens: int
    query_terms: list[str] = field(default_factory=list)
    skipped_duplicates: int = 0
    skipped_expired: int = 0
    # Items whose scope is not the query's: a store bug if ever non-zero.
    skipped_other_scope: int = 0
    # Episodic topK slots used (a conversation window of several turns uses one).
    episodic_slots: int = 0
    # Candidates left out because the request already carries them (its messages).
    skipped_in_request: int = 0
    # Candidates found by a day the query names rather than by its words.
    date_candidates: int = 0
    # Turns brought in as the turns around a matching turn.
    turns_around_hits: int = 0
    # Items taken past the topK limits to fill the soft budget.
    filled_past_top_k: int = 0
    # Meaning (embeddings): "off", "used", or why this turn went without it (the server
    # did not answer in time, was unreachable, no vectors yet...).
    meaning: str = "off"
    # Candidates found by meaning alone (no query word, no named day).
    meaning_candidates: int = 0
    # Milliseconds the reply waited for the message's vector: the embedding's time, or
    # the wait before giving up on a failing server (0 when none was asked for).
    embed_ms: float = 0.0

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "candidatesPerLayer": dict(self.candidates_per_layer),
            "chosenPerLayer": dict(self.chosen_per_layer),
            "droppedByBudget": self.dropped_by_budget,
            "buildMs": round(self.build_ms, 3),
            "legacyFallbackUsed": self.legacy_fallback_used,
            "totalTokens": self.total_tokens,
            "softBudgetTokens": self.soft_budget_tokens,
            "maxBudgetTokens": self.max_budget_tokens,
            "queryTerms": list(self.query_terms),
            "skippedDuplicates": self.skipped_duplicates,
            "skippedExpired": self.skipped_expired,
            "skippedOtherScope": self.skipped_other_scope,
            "episodicSlots": self.episodic_slots,
            "skippedInRequest": self.skipped_in_request,
            "dateCandidates": self.date_candidates,
            "turnsAroundHits": self.turns_around_hits,
            "filledPastTopK": self.filled_past_top_k,
            "meaning": self.meaning,
            "meaningCandidates": self.meaning_candidates,
            "embedMs": round(self.embed_ms, 3),
        }


@dataclass(slots=True)
class MemoryPack:
    # In selection order (best score first); `rendered` orders episodes by time.
    items: list[PackedItem]
    diagnostics: PackDiagnostics
    rendered: str

    @property
    def is_empty(self) -> bool:
        return not self.items

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "items": [
                {
                    "id": packed.item.id,
                    "layer": packed.item.layer.value,
                    "type": packed.item.type.value,
                    "section": packed.section.value,
                    "score": round(packed.score, 6),
                    "tokens": packed.tokens,
                    "reasons": list(packed.reasons),
                    "references": packed.references,
                    "title": packed.item.title,
                    "content": packed.item.content,
                }
                for packed in self.items
            ],
            "diagnostics": self.diagnostics.to_json_dict(),
            "rendered": self.rendered,
        }


def first(ranked: list[ScoredItem], item_ids: list[str]) -> list[ScoredItem]:
    """`ranked` with the entries of `item_ids` moved to the front in that order, at the
    best score."""
    if not ranked:
        return ranked
    top = ranked[0][0]
    by_id = {entry[2].id: entry for entry in ranked}
    front = [(max(top, by_id[i][0]), by_id[i][1], by_id[i][2]) for i in item_ids if i in by_id]
    moved = set(item_ids)
    return front + [entry for entry in ranked if entry[2].id not in moved]


def standing_matches(
    ranked: list[ScoredItem], most: int, fit: Mapping[str, float] | None = None
) -> list[str]:
    """The ids of the best `most` standing preferences in force that matched the query,
    best first: by how well they fit it (`Candidates.standing_fit`) where known, else in
    the ranking's order."""
    found = [
        item.id
        for _, relevance, item in ranked
        if relevance > 0 and STANDING_TAG in item.tags and not item.is_superseded
    ]
    if fit:
        found.sort(key=lambda item_id: -fit.get(item_id, 0.0))
    return found[:most]


def with_digests(
    ranked: list[ScoredItem],
    find: DigestSearch | None,
    query_terms: list[str],
    query: MemoryQuery,
    focus: Focus,
) -> tuple[list[ScoredItem], Focus]:
    """For a question spanning the history, the digests of the days holding its terms
    first, in day order, each showing its best lines within `DIGEST_SHARE` of the soft
    budget; for any other, none."""
    if find is None or not query_terms or not is_span_question(query.text):
        return ranked, focus
    carried = query.carried
    chosen = [
        item
        for item in find(query_terms, DIGEST_CANDIDATES)
        if carried is None or not carried(item)
    ]
    share = int(DIGEST_SHARE * query.soft_budget_tokens * CHARS_PER_TOKEN)
    lines = pick_lines(chosen, focus.weights, share)
    if not lines:
        return ranked, focus
    top = ranked[0][0] if ranked else 1.0
    front = [(top, 1.0, item) for item in chosen if item.id in lines]
    return front + ranked, replace(focus, digest_lines=lines)


def admitted(
    thread: ValueThread, query: MemoryQuery, ranking: Ranking
) -> tuple[ValueThread, dict[str, ScoredItem]]:
    """The thread's statements the pack could hold (not expired, of the query's scope, of a
    layer it takes items of), each scored as a candidate at full relevance: an update it
    leaves out marks nothing earlier."""
    in_request = {item.id for item in thread.carried}
    if not thread.items and (thread.current is None or thread.current.id in in_request):
        return thread, {}
    top_k = layer_top_k(query)
    every = {item.id: item for item in [*thread.items, *filter(None, [thread.current])]}
    scored = score_candidates(InContext(every, dict.fromkeys(every, 1.0), {}, {}), query, ranking)
    kept = {entry[2].id: entry for entry in scored.ranked if top_k[entry[2].layer] > 0}
    current = thread.current
    if current is not None and current.id not in in_request and current.id not in kept:
        current = None
    return (
        ValueThread(
            [item for item in thread.items if item.id in kept],
            current,
            thread.anchor_id if current is not None else None,
            thread.carried,
        ),
        kept,
    )


def build_pack(
    items: Mapping[str, MemoryItem],
    index: BM25Index,
    query: MemoryQuery,
    ranking: Ranking = DEFAULT_RANKING,
    *,
    tz: tzinfo = UTC,
    turns_around: TurnsAround | None = None,
    dense: DenseSearch | None = None,
    digests: DigestSearch | None = None,
) -> MemoryPack:
    """Choose, score and render the memory for one turn (see the module docstring).

    `items` is the store's dict and `index` holds the same ids; an id in one but not the
    other is ignored. `tz` sets the dates shown on episodes (UTC by default).
    `turns_around` (the store's timeline) finds the turns around a matching turn; without
    it only matching turns and recent episodes are candidates. `dense` (the message's
    vector against the scope's item vectors) adds meaning to the word match. `digests`
    finds the days' digests matching the query terms, which a question spanning the
    history gets first.
    """
    started = time.perf_counter()
    query_terms = search_terms(query.text, index.document_frequency)
    found = find_candidates(items, index, query, query_terms, ranking, dense)
    context = in_context(found, index, query, query_terms, ranking, turns_around, dense)
    scored = score_candidates(context, query, ranking)
    focus = Focus({term: index.idf(term) for term in query_terms})
    # Those the block carries were left out with the rest of what the request carries.
    scored.ranked = first(
        scored.ranked, standing_matches(scored.ranked, ranking.standing_first, found.standing_fit)
    )
    figure_items = [
        item for _, relevance, item in scored.ranked[:FIGURE_CANDIDATES] if relevance > 0
    ]
    # The person's later words on the value, found by their first statement's words.
    said = said_in(figure_items, focus.weights)
    thread, thread_scored = admitted(
        value_thread(figure_items, items, index, focus.weights, query.carried, said),
        query,
        ranking,
    )
    # With what the request carries: a value updated in the conversation marks the older
    # one in memory as earlier, though the update itself is not repeated in the pack.
    latest = latest_value(
        [*figure_items, *thread.items, *context.carried, *thread.carried], focus.weights
    )
    # The person's next statement of another value of it, though no word said it changed.
    # Not the thread's: they say the first statement's words by construction, and with no
    # word of change another trip "in 4 weeks" is no new value of this one "in 11 weeks".
    restated = restated_among(said, focus.weights)
    front = [item.id for item in latest.updates]
    earlier = dict(latest.earlier)
    if thread.current is not None and thread.current.id not in front:
        front.append(thread.current.id)
        if thread.anchor_id is not None:
            earlier.setdefault(thread.anchor_id, thread.current.created_at)
    if restated is not None and restated.id not in front:
        front.append(restated.id)
    ranked_ids = {entry[2].id for entry in scored.ranked}
    scored.ranked += [
        thread_scored[item.id]
        for item in thread.items
        if item.id in front and item.id not in ranked_ids
    ]
    if front:
        # The current value of what the question asks about goes first, then the updates
        # before it; older values of it are marked earlier.
        scored.ranked = first(scored.ranked, front)
        focus = Focus(focus.weights, updated=earlier)
    scored.ranked, focus = with_digests(scored.ranked, digests, query_terms, query, focus)
    selection = select_items(scored.ranked, context.window_of, query, ranking, tz, focus)
    if ranking.fill_budget_past_top_k:
        fill_past_top_k(selection, scored.ranked, query, ranking, tz, focus)
    by_meaning = frozenset(found.dense_hits)
    updates = frozenset(front)
    chosen = [
        replace(
            packed,
            reasons=choice_reasons(
                packed.item, found, context, query.date_ranges, by_meaning, updates
            ),
        )
        for packed in selection.chosen
    ]
    rendered = render_pack(chosen)
    candidates_per_layer = {
        layer: count + context.per_layer_change.get(layer, 0)
        for layer, count in found.per_layer.items()
    }
    diagnostics = PackDiagnostics(
        candidates_per_layer=candidates_per_layer,
        chosen_per_layer={layer.value: selection.taken[layer] for layer in Layer},
        dropped_by_budget=selection.dropped_by_budget,
        build_ms=(time.perf_counter() - started) * 1000.0,
        legacy_fallback_used=False,
        total_tokens=selection.total_tokens,
        soft_budget_tokens=query.soft_budget_tokens,
        max_budget_tokens=query.max_budget_tokens,
        query_terms=query_terms,
        skipped_duplicates=selection.skipped_duplicates,
        skipped_expired=scored.skipped_expired,
        skipped_other_scope=scored.skipped_other_scope,
        episodic_slots=selection.slots[Layer.EPISODIC],
        skipped_in_request=context.skipped_in_request,
        date_candidates=found.dated,
        turns_around_hits=context.turns_around_hits,
        filled_past_top_k=selection.filled_past_top_k,
        meaning="used" if dense is not None else "off",
        meaning_candidates=found.by_meaning_only,
    )
    return MemoryPack(items=chosen, diagnostics=diagnostics, rendered=rendered)
