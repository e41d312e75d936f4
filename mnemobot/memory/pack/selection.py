"""The middle steps of a MemoryPack: score the candidates, then choose within the budgets.

`score_candidates`: relevance (BM25 within the query's hits, or what a turn borrows from
a matching neighbour) plus recency, salience, confidence and a type boost
(`memory.pack.scoring.combined_score`); durable items decay with age, never to zero, and a
fact a newer statement replaced keeps `superseded_weight` of its score. Best first.

`select_items` walks them best first: it skips an item its layer's topK has no room for,
or whose content a chosen item already covers (`Coverage`); it takes an item while the
running total stays within the soft budget, and past that only items scoring
`overflow_min_score` or more, up to the max budget. Turns of one conversation window
(`Ranking.episode_window_gap_minutes`, off by default) share one episodic slot.
`fill_past_top_k` then fills soft budget the topK limits left unused with the next
matching items: the limits keep a pack from being all one layer, not from using it.

Each is a function of its arguments (`Selection` is the walk's state, which the fill
extends); an item's price is the tokens of its rendered line (`pack_render`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from functools import lru_cache

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.base.tokens import estimate_item_tokens
from mnemobot.memory.pack.candidates import InContext, layer_top_k
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import Ranking
from mnemobot.memory.pack.render import SECTION_OF_LAYER, Focus, PackedItem, render_line
from mnemobot.memory.pack.scoring import (
    age_days,
    combined_score,
    decay_factor,
    recency_score,
    type_boost,
)
from mnemobot.memory.pack.stated_wants import asks_for_advice, states_own_want
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, normalize_content
from mnemobot.memory.text.terms import DUPLICATE_TERM_OVERLAP, terms

# The least `estimate_item_tokens` gives any item (max(20, chars/4 + 8)).
MIN_ITEM_TOKENS = estimate_item_tokens("")

# (score, relevance, item), as `score_candidates` ranks them.
ScoredItem = tuple[float, float, MemoryItem]


@dataclass(slots=True)
class Scored:
    """The candidates ranked best first, and those left out before scoring."""

    ranked: list[ScoredItem]
    # Items whose scope is not the query's: a store bug if ever non-zero.
    skipped_other_scope: int = 0
    skipped_expired: int = 0


def score_candidates(
    context: InContext,
    query: MemoryQuery,
    ranking: Ranking,
) -> Scored:
    """Every candidate's score, best first (ties: most recently updated, then by id)."""
    now = query.now
    query_tags = set(query.tags)
    date_ranges = query.date_ranges
    boost_of = {item_type: type_boost(item_type, ranking.type_boost) for item_type in ItemType}
    scored = Scored([])
    for item in context.items.values():
        if item.scope and query.scope and item.scope != query.scope:
            scored.skipped_other_scope += 1
            continue
        if _is_expired(item, now):
            scored.skipped_expired += 1
            continue
        relevance = context.relevance(item.id)
        decay = 1.0
        if item.layer is not Layer.EPISODIC:
            reinforced = max(item.updated_at, item.last_accessed_at or 0.0)
            decay = decay_factor(
                age_days(now, reinforced),
                ranking.decay_days,
                ranking.decay_enabled,
                ranking.decay_floor,
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
        scored.ranked.append((score, relevance, item))
    scored.ranked.sort(key=_best_first)
    if ranking.stated_want_boost and asks_for_advice(query.text):
        # What the person said they want fits a request for advice (`stated_wants`).
        _boost_stated_wants(scored.ranked, ranking.stated_want_boost)
        scored.ranked.sort(key=_best_first)
    return scored


def _best_first(entry: ScoredItem) -> tuple[float, float, str]:
    return (-entry[0], -entry[2].updated_at, entry[2].id)


# Only the best this many turns are read for a want: a boost of a few hundredths cannot
# lift one from further down into a pack of some fifteen items, and reading is the cost
# (about 0.2 ms a turn; 350 candidates took 60 ms a pack).
WANT_SCAN_TURNS = 64


def _boost_stated_wants(ranked: list[ScoredItem], boost: float) -> None:
    """Add `boost` to the score of each of the best `WANT_SCAN_TURNS` turns (of `ranked`,
    best first) in which the person says what they want; a turn's score has no decay, so
    the boost adds as a type boost does."""
    turns = 0
    for n, (score, relevance, item) in enumerate(ranked):
        if item.type is not ItemType.TURN:
            continue
        turns += 1
        if turns > WANT_SCAN_TURNS:
            break
        if states_own_want(item.content):
            ranked[n] = (score + boost, relevance, item)


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


@dataclass(slots=True)
class Selection:
    """The items chosen so far (in choosing order) and the walk's counts."""

    chosen: list[PackedItem]
    coverage: Coverage
    # Items taken and topK slots used, per layer (a conversation window uses one slot).
    taken: dict[Layer, int] = field(default_factory=lambda: dict.fromkeys(Layer, 0))
    slots: dict[Layer, int] = field(default_factory=lambda: dict.fromkeys(Layer, 0))
    total_tokens: int = 0
    dropped_by_budget: int = 0
    skipped_duplicates: int = 0
    filled_past_top_k: int = 0

    def take(
        self, score: float, relevance: float, item: MemoryItem, line: str, tokens: int
    ) -> None:
        if item.type is not ItemType.TURN and item.type is not ItemType.DIGEST:
            self._drop_turns_said_by(item)
        self.chosen.append(
            PackedItem(item, score, tokens, SECTION_OF_LAYER[item.layer], line, relevance)
        )
        self.coverage.add(item)
        self.taken[item.layer] += 1
        self.total_tokens += tokens

    def _drop_turns_said_by(self, fact: MemoryItem) -> None:
        """A short turn chosen before the fact extracted from it gives way to the fact when
        it says nothing the fact does not (no reply in it: the bot's answer stays in view),
        and the fact says when, and that it is current."""
        said = _term_set(_said(fact))
        if not said:
            return
        for packed in [
            packed
            for packed in self.chosen
            if packed.item.type is ItemType.TURN
            and packed.item.created_at == fact.created_at
            and len(packed.item.content) <= _SHORT_STATEMENT_CHARS
            and "\nAssistant:" not in packed.item.content
            and _term_set(_said(packed.item)) <= said
        ]:
            self.chosen.remove(packed)
            self.total_tokens -= packed.tokens
            self.taken[packed.item.layer] -= 1
            self.slots[packed.item.layer] = max(0, self.slots[packed.item.layer] - 1)


def select_items(
    ranked: Iterable[ScoredItem],
    window_of: dict[str, int],
    query: MemoryQuery,
    ranking: Ranking,
    tz: tzinfo,
    focus: Focus | None = None,
) -> Selection:
    """The best items within the topK limits and the budgets (see the module docstring);
    with `focus`, a long item is priced and shown as its passage."""
    top_k = layer_top_k(query)
    selection = Selection([], Coverage(DUPLICATE_TERM_OVERLAP))
    slots = selection.slots
    # Turns a window's open slot still has room for.
    window_room: dict[int, int] = {}
    for score, relevance, item in ranked:
        window = window_of.get(item.id)
        joins = window is not None and window_room.get(window, 0) > 0
        # A day's digest is placed by the pack itself, past the limits (`memory.notes.digests`).
        digest = item.type is ItemType.DIGEST
        if not joins and not digest and slots[item.layer] >= top_k[item.layer]:
            continue
        total = selection.total_tokens
        # No item costs less than MIN_ITEM_TOKENS: once even that cannot fit, skip the
        # rendering and coverage work (the scored tail can be hundreds of items).
        if total + MIN_ITEM_TOKENS > query.max_budget_tokens or (
            total + MIN_ITEM_TOKENS > query.soft_budget_tokens
            and score < ranking.overflow_min_score
        ):
            selection.dropped_by_budget += 1
            continue
        if selection.coverage.covers(item):
            selection.skipped_duplicates += 1
            continue
        line = render_line(item, tz=tz, focus=focus)
        tokens = estimate_item_tokens(line)
        within_soft = total + tokens <= query.soft_budget_tokens
        overflow_ok = score >= ranking.overflow_min_score
        if not (within_soft or (overflow_ok and total + tokens <= query.max_budget_tokens)):
            selection.dropped_by_budget += 1
            continue
        selection.take(score, relevance, item, line, tokens)
        if digest:
            continue
        if joins:
            window_room[window] -= 1  # type: ignore[index]
        else:
            slots[item.layer] += 1
            if window is not None:
                window_room[window] = ranking.episode_window_max_turns - 1
    return selection


def fill_past_top_k(
    selection: Selection,
    ranked: Iterable[ScoredItem],
    query: MemoryQuery,
    ranking: Ranking,
    tz: tzinfo,
    focus: Focus | None = None,
) -> None:
    """Fill the soft budget the topK limits left with the next matching items, best first
    (`Ranking.fill_min_relevance` or more); extends `selection`."""
    soft = query.soft_budget_tokens
    if selection.total_tokens + MIN_ITEM_TOKENS > soft:
        return
    chosen_ids = {packed.item.id for packed in selection.chosen}
    for score, relevance, item in ranked:
        if selection.total_tokens + MIN_ITEM_TOKENS > soft:
            break
        if relevance <= 0 or relevance < ranking.fill_min_relevance or item.id in chosen_ids:
            continue
        # The rendered line is longer than what it shows: skip what cannot fit unrendered.
        shown = item.content if focus is None else item.content[: 2 * focus.limit]
        if selection.total_tokens + estimate_item_tokens(shown) > soft:
            continue
        if selection.coverage.covers(item):
            continue
        line = render_line(item, tz=tz, focus=focus)
        tokens = estimate_item_tokens(line)
        if selection.total_tokens + tokens > soft:
            continue
        selection.take(score, relevance, item, line, tokens)
        selection.filled_past_top_k += 1


class Coverage:
    """What the chosen items already say, to skip candidates that would repeat it.

    Beside exact repeats (same fingerprint, an episode holding the fact's text), a
    durable fact is covered by a chosen one of near-equal terms (the same fact in other
    words), and a turn by the facts extracted from it when its user's words add nothing
    to them. A fact is never covered by a turn: a short turn chosen first ("I moved to
    Kazan" as a recent episode) would otherwise hide the current fact it stated, while
    the fact it replaced shows, marked earlier. Terms are computed only for candidates
    that reach this check, a few dozen at most per pack.
    """

    def __init__(self, duplicate_overlap: float = 1.0) -> None:
        self.fingerprints: set[str] = set()
        # reference -> normalized texts of chosen episodes carrying it
        self.episode_texts: dict[str, list[str]] = {}
        self.duplicate_overlap = duplicate_overlap
        # terms of what each chosen fact or turn says; of the facts alone
        self.said_terms: list[frozenset[str]] = []
        self.said_exact: set[frozenset[str]] = set()
        self.fact_terms: list[frozenset[str]] = []
        self.fact_exact: set[frozenset[str]] = set()
        # time said -> terms of the chosen durable facts said then
        self.fact_terms_at: dict[float, set[str]] = {}

    def covers(self, item: MemoryItem) -> bool:
        if item.fingerprint in self.fingerprints:
            return True
        if self.said_terms and len(item.content) <= _SHORT_STATEMENT_CHARS:
            own = _term_set(_said(item))
            turn = item.type is ItemType.TURN
            if own and own in (self.said_exact if turn else self.fact_exact):
                return True
            # A turn is checked for an equal statement only (the common case, and cheap:
            # most candidates are turns); facts, fewer, for near-equal ones too.
            if not turn and own and any(self._same(own, chosen) for chosen in self.fact_terms):
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
        if item.type is ItemType.DIGEST:
            return  # it shows a few of its lines: the turns stay to be shown
        durable = item.layer is not Layer.EPISODIC
        if durable or len(item.content) <= _SHORT_STATEMENT_CHARS:
            said = _term_set(_said(item))
            self.said_terms.append(said)
            self.said_exact.add(said)
            if item.type is not ItemType.TURN:
                self.fact_terms.append(said)
                self.fact_exact.add(said)
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
