"""The MemoryPack: the memory items chosen for one turn, within a token budget, as Markdown.

`build_pack` turns a scope's items (the store's `id -> MemoryItem` dict) and the BM25
index over the same ids into a pack:

1. Candidates: every item a query term matches (BM25+, `memory.bm25`; `search_terms`),
   plus the `working_top_k` newest episodic items the request does not carry, as recent
   context: those among them that match nothing stay only when nothing else matches.
   Only the best `RankingConfig.candidate_pool` BM25 hits (all layers together) are
   scored further: a common query term can match most of a 100k-item store, and an item
   that hundreds of others outmatch would not make the pack. Per-layer topK picks from
   these. When the query names days (`MemoryQuery.date_ranges`), the items written on
   them are candidates too (and get `date_match_boost`) instead of the newest episodes.
   Episodes the request already carries (`MemoryQuery.carried`) are left out. Each
   matching conversation turn brings the `turns_around_hits` turns before
   and after it (the store's timeline, `memory.turn_timeline`), which borrow part of its
   relevance: the question a matching answer replies to, or the answer to a matching
   question, rarely shares a word with the query.
2. Score each candidate (`memory.scoring.combined_score`): relevance is BM25 scaled to
   0..1 within the query's hits, plus recency, salience, confidence and a type boost;
   durable items decay with age (never to zero), and a fact a newer statement replaced
   keeps `superseded_weight` of its score.
3. Walk candidates best first: skip an item its layer's topK has no room for, or whose
   content a chosen item already covers (same fingerprint, all of its references are
   chosen episodes whose text contains it, the same statement in other words, or a turn
   saying nothing beyond the facts extracted from it); take it while the running total stays within
   the soft budget, and past that only items scoring `overflow_min_score` or more, up to
   the max budget. Token cost = `estimate_item_tokens(rendered line)`. When the topK
   limits end the walk with soft budget left, the next matching items (best first) fill
   it past those limits (`fill_budget_past_top_k`): the limits keep a pack from being
   all one layer, not from using its budget.
   Optionally (`RankingConfig.episode_window_gap_minutes`, off by default), turns close
   in time form *windows*: the first turn of a window takes an episodic topK slot, and
   later matching turns of the same window join it without one (up to
   `episode_window_max_turns`), each still paying its own tokens.
4. Render under `# Memory`: `## Recent episodes` (oldest first, each line dated),
   `## Relevant facts`, `## Applicable procedures`; empty sections are left out and an
   empty pack renders as "".

The steps share the candidate walk and its state (coverage, windows, budgets), so they
stay in one module, longer than most.

Neither building nor rendering changes any item (no access-time bumps): a caller that
wants to record access does so itself.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from enum import StrEnum
from functools import lru_cache
from itertools import compress
from typing import Any

from mnemobot.config.runtime import RankingConfig
from mnemobot.memory.bm25 import BM25Index
from mnemobot.memory.clock import SECONDS_PER_DAY
from mnemobot.memory.inert_markdown import inert_markdown
from mnemobot.memory.item_store import PROMOTED_FROM_PREFIX
from mnemobot.memory.items import ItemType, Layer, MemoryItem, MemoryQuery, normalize_content
from mnemobot.memory.scoring import (
    age_days,
    combined_score,
    decay_factor,
    normalized_relevance,
    recency_score,
    type_boost,
)
from mnemobot.memory.text_terms import search_terms, terms
from mnemobot.memory.tokens import estimate_item_tokens
from mnemobot.memory.turn_neighbours import TurnsAround, turn_context, turns_around_hits

# The least `estimate_item_tokens` gives any item (max(20, chars/4 + 8)).
MIN_ITEM_TOKENS = estimate_item_tokens("")

# How far back from the newest end of the store's dict `working` context is looked for.
# The store keeps its dict in write order, so the newest episodes are at the end; durable
# items written since then are skipped over, up to this many entries.
_WORKING_SCAN_LIMIT = 5_000
# Named days up to a week long make their items candidates (`_dated_items`).
_NAMED_DAYS_SECONDS = 7 * SECONDS_PER_DAY


class PackSection(StrEnum):
    RECENT_EPISODES = "Recent episodes"
    RELEVANT_FACTS = "Relevant facts"
    APPLICABLE_PROCEDURES = "Applicable procedures"


SECTION_OF_LAYER: dict[Layer, PackSection] = {
    Layer.EPISODIC: PackSection.RECENT_EPISODES,
    Layer.SEMANTIC: PackSection.RELEVANT_FACTS,
    Layer.PROCEDURAL: PackSection.APPLICABLE_PROCEDURES,
}


@dataclass(frozen=True, slots=True)
class PackedItem:
    item: MemoryItem
    score: float
    tokens: int
    section: PackSection
    # The Markdown line the item renders as (what `tokens` was estimated from).
    line: str
    # BM25 relevance within the query's hits, 0..1; 0 for a recent-context item.
    relevance: float = 0.0


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
                    "references": list(packed.item.references),
                    "title": packed.item.title,
                    "content": packed.item.content,
                }
                for packed in self.items
            ],
            "diagnostics": self.diagnostics.to_json_dict(),
            "rendered": self.rendered,
        }


def _day(ts: float, tz: tzinfo) -> str:
    return datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d")


_TYPE_LABELS = {
    ItemType.DECISION: "Decision",
    ItemType.CONSTRAINT: "Constraint",
    ItemType.FAILURE: "Failure",
    ItemType.FIX: "Fix",
    ItemType.PREFERENCE: "Preference",
    ItemType.PROJECT_FACT: "Fact",
    ItemType.TASK_STATE: "Task",
    ItemType.COMMAND_RESULT: "Command",
    ItemType.TURN: "Turn",
}


def render_line(item: MemoryItem, *, tz: tzinfo = UTC) -> str:
    """One Markdown list line for an item; every line says when it was said.

    A conversation turn shows its text; any other item shows its kind, when it was said,
    and its content (titles are cut copies of the content, so showing both would pay for
    it twice). An item a newer statement replaced says so ("earlier, until DATE"), so the
    model never takes it for the current state. Multi-line content keeps its lines,
    indented as a list continuation.
    """
    # What people said is data: it may not open a heading or a code block of the prompt.
    content = inert_markdown(item.content.strip() or item.title.strip())
    text = content
    earlier = ""
    if item.valid_to is not None:
        earlier = f"earlier, until {_day(item.valid_to, tz)}"
    elif item.superseded_by is not None:
        earlier = "earlier, since replaced"
    if item.type is not ItemType.TURN:
        said = _day(item.created_at, tz)
        said = f"said {item.mentions} times since {said}" if item.mentions > 1 else f"said {said}"
        if earlier and item.layer is not Layer.EPISODIC:
            said = f"{said}; {earlier}"
        text = f"{_TYPE_LABELS[item.type]}: {text}"
        if item.layer is not Layer.EPISODIC:
            text = f"{_TYPE_LABELS[item.type]} ({said}): {content}"
    text = "\n  ".join(line.rstrip() for line in text.splitlines()) if "\n" in text else text
    if item.layer is Layer.EPISODIC:
        day = _day(item.created_at, tz)
        return f"- {day} ({earlier}): {text}" if earlier else f"- {day}: {text}"
    return f"- {text}"


def render_pack(packed: Sequence[PackedItem]) -> str:
    """Markdown under `# Memory`; episodes oldest first, facts and procedures best first."""
    if not packed:
        return ""
    by_section: dict[PackSection, list[PackedItem]] = {section: [] for section in PackSection}
    for entry in packed:
        by_section[entry.section].append(entry)
    by_section[PackSection.RECENT_EPISODES].sort(key=lambda p: (p.item.created_at, p.item.id))
    parts = ["# Memory"]
    for section in PackSection:
        entries = by_section[section]
        if entries:
            parts.append(f"## {section.value}\n" + "\n".join(p.line for p in entries))
    return "\n\n".join(parts) + "\n"


def _recent_episodes(
    items: Mapping[str, MemoryItem],
    count: int,
    carried: Callable[[MemoryItem], bool] | None = None,
) -> list[MemoryItem]:
    """The `count` newest episodic items the request does not carry (the newest are
    usually its own messages), looking only at the newest end of the store."""
    if count <= 0 or not items:
        return []
    try:
        newest_first: Iterable[str] = reversed(items)  # type: ignore[call-overload]
    except TypeError:
        newest_first = reversed(list(items))
    window: list[MemoryItem] = []
    # A few more than asked, so episodes written slightly out of time order still sort.
    wanted = count * 4
    for scanned, item_id in enumerate(newest_first):
        if scanned >= _WORKING_SCAN_LIMIT:
            break
        item = items[item_id]
        if item.layer is Layer.EPISODIC and (carried is None or not carried(item)):
            window.append(item)
            if len(window) >= wanted:
                break
    return heapq.nlargest(count, window, key=lambda it: (it.created_at, it.id))


class _Coverage:
    """What the chosen items already say, to skip candidates that would repeat it.

    Beside exact repeats (same fingerprint, an episode holding the fact's text), a
    durable fact is covered by a chosen one of near-equal terms (the same fact in other
    words), and a turn by the facts extracted from it when its user's words add nothing
    to them. Terms are computed only for candidates that reach this check, a few dozen
    at most per pack.
    """

    def __init__(self, duplicate_overlap: float = 1.0) -> None:
        self.fingerprints: set[str] = set()
        # reference -> normalized texts of chosen episodes carrying it
        self.episode_texts: dict[str, list[str]] = {}
        self.duplicate_overlap = duplicate_overlap
        # terms of what each chosen fact or turn says
        self.said_terms: list[frozenset[str]] = []
        self.said_exact: set[frozenset[str]] = set()
        # time said -> terms of the chosen durable facts said then
        self.fact_terms_at: dict[float, set[str]] = {}

    def covers(self, item: MemoryItem) -> bool:
        if item.fingerprint in self.fingerprints:
            return True
        if self.said_terms and len(item.content) <= _SHORT_STATEMENT_CHARS:
            own = _term_set(_said(item))
            if own and own in self.said_exact:
                return True
            turn = item.type is ItemType.TURN
            # A turn is checked for an equal statement only (the common case, and cheap:
            # most candidates are turns); facts, fewer, for near-equal ones too.
            if not turn and own and any(self._same(own, chosen) for chosen in self.said_terms):
                return True
            facts_then = self.fact_terms_at.get(item.created_at)
            if turn and facts_then is not None and own <= facts_then:
                return True
        if not item.references:
            return False
        text = normalize_content(item.content)
        return all(
            any(text in episode for episode in self.episode_texts.get(ref, ()))
            for ref in item.references
        )

    def _same(self, first: frozenset[str], second: frozenset[str]) -> bool:
        union = len(first | second)
        return bool(union) and len(first & second) / union >= self.duplicate_overlap

    def add(self, item: MemoryItem) -> None:
        self.fingerprints.add(item.fingerprint)
        durable = item.layer is not Layer.EPISODIC
        if durable or len(item.content) <= _SHORT_STATEMENT_CHARS:
            said = _term_set(_said(item))
            self.said_terms.append(said)
            self.said_exact.add(said)
        if durable:
            self.fact_terms_at.setdefault(item.created_at, set()).update(said)
            return
        text = normalize_content(item.content)
        for ref in (*item.references, item.id, PROMOTED_FROM_PREFIX + item.id):
            self.episode_texts.setdefault(ref, []).append(text)


# Repeats of one fact are short statements; a longer turn is not checked term by term,
# which keeps the check off most of a long conversation's candidates.
_SHORT_STATEMENT_CHARS = 240


@lru_cache(maxsize=16_384)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def _said(item: MemoryItem) -> str:
    """What the user said in a turn, or a fact's statement, without the speaker's name."""
    return item.content.split("\nAssistant:", 1)[0].split(": ", 1)[-1]


def _best_hits(hits: dict[str, float], count: int, items: Mapping[str, MemoryItem]) -> list[str]:
    """The ids of the `count` best-scoring hits; among equal scores, the most recent items.

    Runs in C-level passes (Counter, compress) where it can: a common query term can hit
    tens of thousands of items, and a per-hit Python loop would cost more than the query.
    """
    if len(hits) <= count:
        return list(hits)
    threshold = 0.0
    remaining = count
    for value, frequency in sorted(Counter(hits.values()).items(), reverse=True):
        threshold = value
        if frequency >= remaining:
            break
        remaining -= frequency
    above = list(compress(hits, map(threshold.__lt__, hits.values())))
    tied = list(compress(hits, map(threshold.__eq__, hits.values())))

    def recency(doc_id: str) -> tuple[float, str]:
        item = items.get(doc_id)
        return (item.updated_at if item is not None else float("-inf"), doc_id)

    return above + heapq.nlargest(count - len(above), tied, key=recency)


def _dated_items(
    items: Mapping[str, MemoryItem], ranges: Sequence[tuple[float, float]], limit: int
) -> list[MemoryItem]:
    """The `limit` newest items written within the ranges of a week or less (one pass over
    the store, only when the query names a day: about 5 ms at 100k items). A month or a
    year holds too much to be a candidate for being in it alone."""
    short = [(start, end) for start, end in ranges if end - start <= _NAMED_DAYS_SECONDS]
    if not short or limit <= 0:
        return []
    found = [
        item
        for item in items.values()
        if any(start <= item.created_at < end for start, end in short)
    ]
    return heapq.nlargest(limit, found, key=lambda it: (it.created_at, it.id))


def date_boost(created_at: float, ranges: Sequence[tuple[float, float]], boost: float) -> float:
    """`boost` for an item written on a named day, less for a wider range: a day named
    ("last Tuesday") says more than a month ("in March"), which holds thirty of them."""
    best = 0.0
    for start, end in ranges:
        if start <= created_at < end:
            days = max(1.0, (end - start) / SECONDS_PER_DAY)
            best = max(best, boost / days**0.5)
    return best


def _is_expired(item: MemoryItem, now: float) -> bool:
    return item.ttl_days is not None and now > item.created_at + item.ttl_days * SECONDS_PER_DAY


def build_pack(
    items: Mapping[str, MemoryItem],
    index: BM25Index,
    query: MemoryQuery,
    ranking: RankingConfig,
    *,
    decay_enabled: bool,
    decay_days: float,
    tz: tzinfo = UTC,
    turns_around: TurnsAround | None = None,
) -> MemoryPack:
    """Choose, score and render the memory for one turn (see the module docstring).

    `items` is the store's dict and `index` holds the same ids; an id in one but not the
    other is ignored. `tz` sets the dates shown on episodes (UTC by default).
    `turns_around` (the store's timeline) finds the turns around a matching turn; without
    it only matching turns and recent episodes are candidates.
    """
    started = time.perf_counter()
    now = query.now
    top_k = {
        Layer.EPISODIC: query.episodic_top_k,
        Layer.SEMANTIC: query.semantic_top_k,
        Layer.PROCEDURAL: query.procedural_top_k,
    }
    query_terms = search_terms(query.text, index.document_frequency)
    # Only the best `candidate_pool` hits (and their ties) can become candidates; `top`
    # finds them without scoring every item a common term matches.
    hits = index.top(query_terms, ranking.candidate_pool) if query_terms else {}
    diagnostics = PackDiagnostics(
        candidates_per_layer={layer.value: 0 for layer in Layer},
        chosen_per_layer={layer.value: 0 for layer in Layer},
        dropped_by_budget=0,
        build_ms=0.0,
        legacy_fallback_used=False,
        total_tokens=0,
        soft_budget_tokens=query.soft_budget_tokens,
        max_budget_tokens=query.max_budget_tokens,
        query_terms=query_terms,
    )

    # 1. Candidates: the best BM25 hits (see `_best_hits`), plus recent episodes.
    candidates: dict[str, MemoryItem] = {}
    get_item = items.get
    for doc_id in _best_hits(hits, ranking.candidate_pool, items):
        item = get_item(doc_id)
        if item is not None and top_k[item.layer] > 0:
            candidates[doc_id] = item
            diagnostics.candidates_per_layer[item.layer.value] += 1
    dated = _dated_items(items, query.date_ranges, ranking.date_candidates)
    for item in dated:
        if item.id not in candidates and top_k[item.layer] > 0:
            candidates[item.id] = item
            diagnostics.candidates_per_layer[item.layer.value] += 1
            diagnostics.date_candidates += 1
    # A question about named days wants those days, not the latest turns.
    unmatched_recent: list[str] = []
    if top_k[Layer.EPISODIC] > 0 and not query.date_ranges:
        recent = _recent_episodes(items, query.working_top_k, query.carried)
        if hits:
            # A recent episode past the pool keeps the BM25 score it has (as with `scores`).
            hits.update(
                index.score_documents(query_terms, [i.id for i in recent if i.id not in hits])
            )
        for item in recent:
            if item.id not in hits:
                unmatched_recent.append(item.id)
                diagnostics.candidates_per_layer[Layer.EPISODIC.value] += 1
            candidates.setdefault(item.id, item)

    # 2. Score.
    base = index.base_score(query_terms) if hits else 0.0
    best = max(hits.values()) if hits else 0.0
    query_tags = set(query.tags)
    boosts = ranking.type_boost
    boost_of = {item_type: type_boost(item_type, boosts) for item_type in ItemType}
    scored: list[tuple[float, float, MemoryItem]] = []
    relevance_of = {
        doc_id: normalized_relevance(hits[doc_id], base, best)
        for doc_id in candidates
        if doc_id in hits
    }
    if turns_around is not None and ranking.turns_around_hits > 0 and relevance_of:
        around = turns_around_hits(candidates, relevance_of, turns_around, ranking)
        diagnostics.turns_around_hits = len(around)
        for neighbour, _ in around.values():
            candidates[neighbour.id] = neighbour
            diagnostics.candidates_per_layer[Layer.EPISODIC.value] += 1
    else:
        around = {}
    carried = query.carried
    if carried is not None:
        for doc_id in [doc_id for doc_id, item in candidates.items() if carried(item)]:
            del candidates[doc_id]
            diagnostics.skipped_in_request += 1
    date_ranges = query.date_ranges
    turns = turn_context(candidates.values(), relevance_of, ranking)
    lent = turns.lent
    for neighbour_id, (_, borrowed) in around.items():
        if borrowed > lent.get(neighbour_id, 0.0):
            lent[neighbour_id] = borrowed
    if unmatched_recent and any(doc_id in hits for doc_id in candidates):
        # Something the request does not carry matched: the recent turns that did not,
        # and are no matching turn's neighbour (the answer to a matching question), would
        # only fill the pack. (They stay when nothing matched: "where were we?")
        for doc_id in unmatched_recent:
            if lent.get(doc_id, 0.0) <= 0 and candidates.pop(doc_id, None) is not None:
                diagnostics.candidates_per_layer[Layer.EPISODIC.value] -= 1
    for item in candidates.values():
        if item.scope and query.scope and item.scope != query.scope:
            diagnostics.skipped_other_scope += 1
            continue
        if _is_expired(item, now):
            diagnostics.skipped_expired += 1
            continue
        relevance = max(relevance_of.get(item.id, 0.0), lent.get(item.id, 0.0))
        decay = 1.0
        if item.layer is not Layer.EPISODIC:
            reinforced = max(item.updated_at, item.last_accessed_at or 0.0)
            decay = decay_factor(
                age_days(now, reinforced), decay_days, decay_enabled, ranking.decay_floor
            )
            if item.valid_to is not None or item.superseded_by is not None:
                # Replaced by a newer statement: still worth knowing, never ahead of it.
                # (An episode keeps its rank: it is history, dated and marked "earlier".)
                decay *= ranking.superseded_weight
        boost = boost_of[item.type]
        if query_tags and not query_tags.isdisjoint(item.tags):
            boost += ranking.tag_match_boost
        if date_ranges:
            boost += date_boost(item.created_at, date_ranges, ranking.date_match_boost)
        score = combined_score(
            relevance,
            recency_score(age_days(now, item.updated_at), ranking.recency_half_life_days),
            item.salience,
            item.confidence,
            boost,
            decay=decay,
            ranking=ranking,
        )
        scored.append((score, relevance, item))
    scored.sort(key=lambda entry: (-entry[0], -entry[2].updated_at, entry[2].id))

    # 3. Select: per-layer topK (a conversation window takes one slot), coverage, budgets.
    chosen: list[PackedItem] = []
    taken = dict.fromkeys(Layer, 0)
    slots = dict.fromkeys(Layer, 0)
    window_of = turns.window_of
    # Turns a window's open slot still has room for.
    window_room: dict[int, int] = {}
    coverage = _Coverage(ranking.duplicate_term_overlap)
    total = 0
    for score, relevance, item in scored:
        window = window_of.get(item.id)
        joins = window is not None and window_room.get(window, 0) > 0
        if not joins and slots[item.layer] >= top_k[item.layer]:
            continue
        # No item costs less than MIN_ITEM_TOKENS: once even that cannot fit, skip the
        # rendering and coverage work (the scored tail can be hundreds of items).
        if total + MIN_ITEM_TOKENS > query.max_budget_tokens or (
            total + MIN_ITEM_TOKENS > query.soft_budget_tokens
            and score < ranking.overflow_min_score
        ):
            diagnostics.dropped_by_budget += 1
            continue
        if coverage.covers(item):
            diagnostics.skipped_duplicates += 1
            continue
        line = render_line(item, tz=tz)
        tokens = estimate_item_tokens(line)
        within_soft = total + tokens <= query.soft_budget_tokens
        overflow_ok = score >= ranking.overflow_min_score
        if not (within_soft or (overflow_ok and total + tokens <= query.max_budget_tokens)):
            diagnostics.dropped_by_budget += 1
            continue
        chosen.append(
            PackedItem(item, score, tokens, SECTION_OF_LAYER[item.layer], line, relevance)
        )
        coverage.add(item)
        taken[item.layer] += 1
        total += tokens
        if joins:
            window_room[window] -= 1  # type: ignore[index]
        else:
            slots[item.layer] += 1
            if window is not None:
                window_room[window] = ranking.episode_window_max_turns - 1

    if ranking.fill_budget_past_top_k and total + MIN_ITEM_TOKENS <= query.soft_budget_tokens:
        # The topK limits stopped the walk with budget left: go on with the next
        # matching items, best first, within the soft budget only.
        chosen_ids = {packed.item.id for packed in chosen}
        for score, relevance, item in scored:
            if total + MIN_ITEM_TOKENS > query.soft_budget_tokens:
                break
            if relevance <= 0 or relevance < ranking.fill_min_relevance or item.id in chosen_ids:
                continue
            # The rendered line is longer than the content: skip what cannot fit unrendered.
            if total + estimate_item_tokens(item.content) > query.soft_budget_tokens:
                continue
            if coverage.covers(item):
                continue
            line = render_line(item, tz=tz)
            tokens = estimate_item_tokens(line)
            if total + tokens > query.soft_budget_tokens:
                continue
            chosen.append(
                PackedItem(item, score, tokens, SECTION_OF_LAYER[item.layer], line, relevance)
            )
            coverage.add(item)
            taken[item.layer] += 1
            total += tokens
            diagnostics.filled_past_top_k += 1

    diagnostics.chosen_per_layer = {layer.value: taken[layer] for layer in Layer}
    diagnostics.episodic_slots = slots[Layer.EPISODIC]
    diagnostics.total_tokens = total
    rendered = render_pack(chosen)
    diagnostics.build_ms = (time.perf_counter() - started) * 1000.0
    return MemoryPack(items=chosen, diagnostics=diagnostics, rendered=rendered)
