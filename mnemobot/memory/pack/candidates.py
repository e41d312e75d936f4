"""The first step of a MemoryPack: which items may go into it, and how relevant each is.

`find_candidates` takes the best BM25 hits of the query (`Ranking.candidate_pool`,
all layers together: a common term can match most of a 100k-item store, and an item
that hundreds of others outmatch would not make the pack), the items written on the days
the query names (`MemoryQuery.date_ranges`), and otherwise the newest episodes the
request does not carry (recent context).

`in_context` then completes them: each matching conversation turn brings the turns
before and after it (the store's timeline), which borrow part of its relevance (the
question a matching answer replies to rarely shares a word with the query); episodes the
request already carries are left out; and recent episodes that match nothing are kept
only when nothing else matches ("where were we?").

Both are pure functions of their arguments (the store's dict and index are only read).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.memory.pack.figures import REPLY_PART
from mnemobot.memory.pack.fusion import DenseSearch, fused_relevance, min_max, reciprocal_rank
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.ranking import Ranking
from mnemobot.memory.pack.scoring import normalized_relevance
from mnemobot.memory.pack.turn_neighbours import TurnsAround, turn_context, turns_around_hits
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.items import Layer, MemoryItem
from mnemobot.memory.text.terms import languages, terms_in

# How far back from the newest end of the store's dict `working` context is looked for.
# The store keeps its dict in write order, so the newest episodes are at the end; durable
# items written since then are skipped over, up to this many entries.
_WORKING_SCAN_LIMIT = 5_000
# Named days up to a week long make their items candidates (`_dated_items`).
_NAMED_DAYS_SECONDS = 7 * SECONDS_PER_DAY


def layer_top_k(query: MemoryQuery) -> dict[Layer, int]:
    """The most items (or conversation windows) of each layer the query wants."""
    return {
        Layer.EPISODIC: query.episodic_top_k,
        Layer.SEMANTIC: query.semantic_top_k,
        Layer.PROCEDURAL: query.procedural_top_k,
    }


@dataclass(slots=True)
class Candidates:
    """What `find_candidates` found."""

    # id -> item, in the order found (best hits, then named days, then recent episodes).
    items: dict[str, MemoryItem]
    # BM25 score of every matching id (the pool's, and the recent episodes' own).
    hits: dict[str, float]
    # Recent episodes that match no query term.
    unmatched_recent: list[str] = field(default_factory=list)
    # Counted per layer value as found, for the pack's diagnostics.
    per_layer: dict[str, int] = field(default_factory=dict)
    # Found by a day the query names rather than by its words.
    dated: int = 0
    # The items closest in meaning (embeddings on), best first; and how many of them
    # only meaning found (no query word, no named day).
    dense_hits: list[str] = field(default_factory=list)
    by_meaning_only: int = 0
    # Standing preferences the block had no room for that share words with the query (or
    # the message they were said in does): how well each fits it, their words' score and
    # that of the best matching turn said near them.
    standing_fit: dict[str, float] = field(default_factory=dict)


def find_candidates(
    items: Mapping[str, MemoryItem],
    index: BM25Index,
    query: MemoryQuery,
    query_terms: list[str],
    ranking: Ranking,
    dense: DenseSearch | None = None,
) -> Candidates:
    """The items a pack for `query` chooses from (see the module docstring); with `dense`,
    the `Ranking.dense_candidates` items closest in meaning too."""
    top_k = layer_top_k(query)
    # Only the best `candidate_pool` hits (and their ties) can become candidates; `top`
    # finds them without scoring every item a common term matches.
    hits = index.top(query_terms, ranking.candidate_pool) if query_terms else {}
    found = Candidates(items={}, hits=hits, per_layer={layer.value: 0 for layer in Layer})
    candidates = found.items
    get_item = items.get
    for doc_id in _best_hits(hits, ranking.candidate_pool, items):
        item = get_item(doc_id)
        if item is not None and top_k[item.layer] > 0:
            candidates[doc_id] = item
            found.per_layer[item.layer.value] += 1
    if query.held_back_standing and query_terms and ranking.standing_first > 0:
        _add_held_back_standing(found, items, index, query, query_terms, ranking, top_k)
    if dense is not None and ranking.dense_candidates > 0:
        for doc_id, _ in dense.nearest(ranking.dense_candidates):
            item = get_item(doc_id)
            if item is None or top_k[item.layer] <= 0:
                continue
            found.dense_hits.append(doc_id)
            if doc_id not in candidates:
                candidates[doc_id] = item
                found.per_layer[item.layer.value] += 1
                found.by_meaning_only += 1
    for item in _dated_items(items, query.date_ranges, ranking.date_candidates):
        if item.id not in candidates and top_k[item.layer] > 0:
            candidates[item.id] = item
            found.per_layer[item.layer.value] += 1
            found.dated += 1
    # A question about named days wants those days, not the latest turns.
    if top_k[Layer.EPISODIC] > 0 and not query.date_ranges:
        recent = _recent_episodes(items, query.working_top_k, query.carried)
        if hits:
            # A recent episode past the pool keeps the BM25 score it has (as with `scores`).
            hits.update(
                index.score_documents(query_terms, [i.id for i in recent if i.id not in hits])
            )
        for item in recent:
            if item.id not in hits:
                found.unmatched_recent.append(item.id)
                found.per_layer[Layer.EPISODIC.value] += 1
            candidates.setdefault(item.id, item)
    return found


@dataclass(slots=True)
class InContext:
    """The candidates completed by `in_context`, with what each one's relevance is."""

    items: dict[str, MemoryItem]
    # Relevance 0..1 of the matching candidates: BM25 within the query's hits, fused with
    # meaning when embeddings are on (`memory.pack.fusion`).
    relevance_of: dict[str, float]
    # Relevance a turn borrows from a matching turn next to it.
    lent: dict[str, float]
    # Conversation window of each turn (`Ranking.episode_window_gap_minutes`).
    window_of: dict[str, int]
    # Per layer value: candidates added (+) and left out (-) here, for the diagnostics.
    per_layer_change: dict[str, int] = field(default_factory=dict)
    turns_around_hits: int = 0
    skipped_in_request: int = 0
    # Matching items left out because the request carries them: the newest word on a
    # value the question asks about may be among them (`memory.pack.figures`).
    carried: list[MemoryItem] = field(default_factory=list)

    def relevance(self, item_id: str) -> float:
        """What the item's score counts as relevance: its own, or what it borrows."""
        return max(self.relevance_of.get(item_id, 0.0), self.lent.get(item_id, 0.0))


def in_context(
    found: Candidates,
    index: BM25Index,
    query: MemoryQuery,
    query_terms: list[str],
    ranking: Ranking,
    turns_around: TurnsAround | None,
    dense: DenseSearch | None = None,
) -> InContext:
    """`found` with the turns around its matching turns, without what the request carries,
    and without unmatched recent episodes once something matched."""
    hits = found.hits
    candidates = dict(found.items)
    base = index.base_score(query_terms) if hits else 0.0
    best = max(hits.values()) if hits else 0.0
    relevance_of = {
        doc_id: normalized_relevance(hits[doc_id], base, best)
        for doc_id in candidates
        if doc_id in hits
    }
    if dense is not None:
        relevance_of = _with_meaning(relevance_of, dense.similarities(candidates), ranking)
    episodic = Layer.EPISODIC.value
    context = InContext(
        candidates, relevance_of, lent={}, window_of={}, per_layer_change={episodic: 0}
    )
    around: dict[str, tuple[MemoryItem, float]] = {}
    if turns_around is not None and ranking.turns_around_hits > 0 and relevance_of:
        around = turns_around_hits(candidates, relevance_of, turns_around, ranking)
        context.turns_around_hits = len(around)
        for neighbour, _ in around.values():
            candidates[neighbour.id] = neighbour
            context.per_layer_change[episodic] += 1
    carried = query.carried
    if carried is not None:
        for doc_id in [doc_id for doc_id, item in candidates.items() if carried(item)]:
            if relevance_of.get(doc_id, 0.0) > 0:
                context.carried.append(candidates[doc_id])
            del candidates[doc_id]
            context.skipped_in_request += 1
    turns = turn_context(candidates.values(), relevance_of, ranking)
    context.window_of = turns.window_of
    lent = context.lent = turns.lent
    for neighbour_id, (_, borrowed) in around.items():
        if borrowed > lent.get(neighbour_id, 0.0):
            lent[neighbour_id] = borrowed
    if found.unmatched_recent and any(doc_id in hits for doc_id in candidates):
        # Something the request does not carry matched: the recent turns that did not,
        # and are no matching turn's neighbour (the answer to a matching question), would
        # only fill the pack. (They stay when nothing matched: "where were we?") A recent
        # turn that meaning found did match: "I drive a Skoda", told a minute ago, answers
        # "what colour is my car?" without a word in common.
        by_meaning = set(found.dense_hits)
        for doc_id in found.unmatched_recent:
            if doc_id in by_meaning or lent.get(doc_id, 0.0) > 0:
                continue
            if candidates.pop(doc_id, None) is not None:
                context.per_layer_change[episodic] -= 1
    return context


def _add_held_back_standing(
    found: Candidates,
    items: Mapping[str, MemoryItem],
    index: BM25Index,
    query: MemoryQuery,
    query_terms: list[str],
    ranking: Ranking,
    top_k: Mapping[Layer, int],
) -> None:
    """The standing preferences the chat's block had no room for that the query may want,
    with how well each fits it (`Candidates.standing_fit`)."""
    # A standing preference says what it applies to in a few words ("when I ask about
    # distance formulas"): hundreds of turns outmatch it in a long chat's pool.
    # Or the message it was said in does: a preference said asking about laptops.
    # The person's words of that turn and the opening of the reply: a long reply's
    # words matched most questions (SAID_IN_REPLY_CHARS).
    held_back = {item.id: item for item in query.held_back_standing if item.id in items}
    scores = index.score_documents(query_terms, list(held_back))
    words = {
        doc_id: max(
            scores.get(doc_id, 0.0), _said_in_score(doc_id, query, items, index, query_terms)
        )
        for doc_id in held_back
    }
    # Of those, the ones said while the question's subject was talked about fit it best:
    # in months of chat about many things its best matching turns are where that was,
    # and a few words shared with the question alone ("help", "best", "schedule") fit a
    # hundred preferences as well as the one said then ("I prefer scheduling around 6:15
    # PM", said planning walks, for "when should I walk today?").
    # Up to twice its words' score, with the best match of all near it: never a strong
    # match of the preference's own words behind a weak one said near the subject.
    near = _best_turn_near(found, held_back.values(), ranking.standing_topic_window_minutes * 60)
    best = max(found.hits.values(), default=0.0)
    for doc_id, item in held_back.items():
        score = words[doc_id]
        if score <= 0 or top_k[item.layer] <= 0:
            continue
        found.standing_fit[doc_id] = score * (1 + (near.get(doc_id, 0.0) / best if best else 0))
        if doc_id not in found.items:
            found.hits[doc_id] = score
            found.items[doc_id] = item
            found.per_layer[item.layer.value] += 1


# Of the reply in a standing item's turn, its opening: it says what the reply is about
# (a request said on its own, "Always give numeric examples when I ask about
# eccentricity", is answered about ellipses), the rest matches any question. BEAM
# development chats with their replies (docs/measured.md, "A chat with a bot"): the whole
# reply gave preference following 0.649 at 3M tokens, none 0.701 but instruction
# following 0.719 -> 0.667; 400 characters 0.670 / 0.719, and at 1M 0.782 / 0.882
# (whole: 0.775 / 0.882); 200: 0.691 / 0.670 at 3M.
SAID_IN_REPLY_CHARS = 400


def _said_in_score(
    doc_id: str,
    query: MemoryQuery,
    items: Mapping[str, MemoryItem],
    index: BM25Index,
    query_terms: list[str],
) -> float:
    """How well the words the person said a standing item in match the query."""
    turn = items.get(query.standing_said_in.get(doc_id, ""))
    if turn is None:
        return 0.0
    said, _, reply = turn.content.partition(REPLY_PART)
    # In the languages the whole was indexed in: a part alone may be read as another
    # ("Prefiero respuestas cortas" beside an English reply was stemmed otherwise; review).
    part = f"{said} {reply[:SAID_IN_REPLY_CHARS]}"
    return index.score_terms(query_terms, terms_in(part, languages(indexed_text(turn))))


def _best_turn_near(
    found: Candidates, standing: Iterable[MemoryItem], window_seconds: float
) -> dict[str, float]:
    """Each standing item's best matching episode (of the pool's hits) said within
    `window_seconds` of it, as that episode's score; none for an item with none near.
    The message it was said in does not count: its words count already (`said_in`), and
    every preference is near itself."""
    if window_seconds <= 0:
        return {}
    episodes = sorted(
        (item.created_at, found.hits[doc_id], item.references)
        for doc_id, item in found.items.items()
        if item.layer is Layer.EPISODIC and doc_id in found.hits
    )
    times = [at for at, _, _ in episodes]
    near: dict[str, float] = {}
    for item in standing:
        own = set(item.references)
        start = bisect_left(times, item.created_at - window_seconds)
        end = bisect_right(times, item.created_at + window_seconds)
        scores = [score for _, score, refs in episodes[start:end] if own.isdisjoint(refs)]
        if scores:
            near[item.id] = max(scores)
    return near


def _with_meaning(
    words: dict[str, float], similarities: dict[str, float], ranking: Ranking
) -> dict[str, float]:
    """BM25 relevance and meaning as one relevance, by `Ranking.fusion`."""
    if not similarities:
        return words
    if ranking.fusion == "rrf":
        by_words = sorted(words, key=words.__getitem__, reverse=True)
        by_meaning = sorted(similarities, key=similarities.__getitem__, reverse=True)
        return reciprocal_rank([by_words, by_meaning], ranking.rrf_k)
    return fused_relevance(words, min_max(similarities), ranking.dense_weight)


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
        newest_first: Iterable[str] = reversed(items)  # type: ignore[arg-type]
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

    updated_at = getattr(items, "updated_at", None)
    if callable(updated_at):
        # An `ItemTable` knows the time without reading the item from its file.
        def recency(doc_id: str) -> tuple[float, str]:
            when = updated_at(doc_id)
            return (when if when is not None else float("-inf"), doc_id)

    else:

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
    created_within = getattr(items, "created_within", None)
    if callable(created_within):
        # An `ItemTable` finds them in its column of times, reading only those items.
        found: list[MemoryItem] = created_within(short)
    else:
        found = [
            item
            for item in items.values()
            if any(start <= item.created_at < end for start, end in short)
        ]
    return heapq.nlargest(limit, found, key=lambda it: (it.created_at, it.id))
