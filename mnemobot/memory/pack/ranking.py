"""How memory items are ranked into the MemoryPack: the pack's tuning constants.

Not settings: nobody running the bot should have to weigh BM25 against recency. Each
value says what chose it; "LoCoMo" means `mnemobot eval locomo` on the dev file (evidence
recall at the 1000 / 1800 / 3500-token budgets, docs/measured.md), each row there changing
one of these and nothing else. The pack's steps (`candidates`, `turn_neighbours`,
`selection`, `scoring`) read them from one `Ranking`, so an eval can try another
value (`WorkspaceMemory.open(ranking=...)`, `mnemobot eval locomo --tuning`) without a setting.

    score = decay * (relevance_weight * relevance + recency_weight * recency
                     + salience_weight * salience + confidence_weight * confidence
                     + type boost + tag boost + date boost)

Relevance (BM25 scaled to 0..1 within the query's candidates) carries most of the weight:
the other terms together cannot lift a half-as-relevant item over the best match, so for
a question the best-matching items win and the rest break near-ties.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class TypeBoosts:
    """Added to an item's score by its type: what must not be forgotten ranks a bit higher.

    Not measured: chosen by hand so that an order ("never push to main") and a stated
    preference beat an equally relevant episode, and all of them together stay below one
    tenth of the relevance weight (they only break near-ties).
    """

    constraint: float = 0.05
    preference: float = 0.04
    decision: float = 0.03
    fix: float = 0.03
    failure: float = 0.02
    project_fact: float = 0.02
    task_state: float = 0.01
    command_result: float = 0.0
    # The item recording a whole conversation turn.
    turn: float = 0.01
    # A day's digest: the pack places it itself, for questions over the history.
    digest: float = 0.0


@dataclass(frozen=True, slots=True)
class Ranking:
    """The tuning of one pack build; `DEFAULT_RANKING` is what the bot uses."""

    # -- how many items of each layer a pack holds before filling past them
    # Newest episodic items always shown as recent context. Not measured; chosen so a
    # question about "what we just said" has the last few turns.
    working_top_k: int = 6
    # Most episodic items (or conversation windows). Not measured (the design's value);
    # filling past topK (below) makes the budget, not this, the limit on LoCoMo.
    episodic_top_k: int = 8
    # Most semantic items (facts, preferences). LoCoMo: 0 gave 0.748 / 0.806 / 0.863,
    # about the same: facts earn no recall there but are what a chat with the bot asks for.
    semantic_top_k: int = 6
    # Most procedural items (how-tos, fixes). Not measured (the design's value).
    procedural_top_k: int = 4

    # -- the score
    # Weight of BM25 relevance (scaled to 0..1 within the query's candidates). Not
    # measured as a row of its own; chosen so that the other weights together (0.25 plus
    # boosts) cannot lift a half-as-relevant item over the best match.
    relevance_weight: float = 0.75
    # Weight of recency. LoCoMo: lower gave +0.008 at 1800, kept: it would tune the bot
    # to a data set whose questions come long after the conversation.
    recency_weight: float = 0.10
    # Weights of the item's salience and confidence; not measured, the rest of 1.0.
    salience_weight: float = 0.075
    confidence_weight: float = 0.075
    # Recency halves every this many days (age since the item was last updated). Not
    # measured; two weeks, so last week's talk ranks above last month's at equal relevance.
    recency_half_life_days: float = 14
    # Let unused durable items lose weight over time (`scoring.decay_factor`).
    decay_enabled: bool = True
    # Days in which the decay gap halves (the design's 30-day decay, which deleted items).
    decay_days: float = 30
    # Durable (semantic, procedural) items' decay falls from 1 toward this floor, never to
    # 0: an old fact ranks below a fresh one but is still found. Not measured; halfway.
    decay_floor: float = 0.5
    type_boost: TypeBoosts = field(default_factory=TypeBoosts)
    # Added when the item shares a tag with the query. Not measured; one type boost's size.
    tag_match_boost: float = 0.05
    # Added to an item written on a day the message names ("last Tuesday"): it outranks
    # a better word match from another day; a wider range gets less (divided by the square
    # root of its days: "in March", 0.09). LoCoMo: with this and date_candidates at 0,
    # 0.804 / 0.854 at 1800 / 3500 instead of 0.815 / 0.861.
    date_match_boost: float = 0.5
    # Score multiplier of a fact a newer statement replaced ("I moved to Berlin" after "I
    # live in Paris"): it still shows, marked "earlier", below the current one. Not
    # measured; halved, so the current fact ranks first at equal relevance.
    superseded_weight: float = 0.5

    # -- candidates
    # BM25 hits kept (best first, all layers together) before the full score is computed.
    # Not measured for recall (it fills the largest budget several times over); bounds
    # the scoring work per pack.
    candidate_pool: int = 256
    # Most items of the named days taken as candidates (newest first), matching or not.
    # See date_match_boost.
    date_candidates: int = 200
    # Each matching turn brings this many turns before and after it as candidates, sharing
    # its relevance (the question a matching answer replies to). LoCoMo: 0 gave 0.736 /
    # 0.790 / 0.838 against 0.744 / 0.806 / 0.856; one each side, 0.742 / 0.801 / 0.851.
    turns_around_hits: int = 2
    # Only the turns around this many best matching turns are brought. LoCoMo: 16, 64 or
    # all gave the same recall (0.744 / 0.806 / 0.856 at 64); 32 scores half the turns.
    turns_around_max_hits: int = 32
    # A turn further than this from the matching turn is another conversation. Not
    # measured; half an hour, like neighbour_gap_seconds.
    turns_around_max_gap_minutes: float = 30
    # A turn gets this share of the relevance of a matching turn right before or after it,
    # so an answer is found through its question. Not measured apart from the next one.
    neighbour_relevance_share: float = 0.5
    # The share instead when the matching turn right before asks a question (ends with
    # "?"). LoCoMo: 0.5 instead gave 0.729 / 0.794 / 0.854, -0.016 / -0.011 / -0.002.
    answer_relevance_share: float = 0.8
    # Most seconds between a turn and the neighbour it shares relevance with. LoCoMo at
    # 300 s between turns: 120 s (the old value) gave 0.674 / 0.752 / 0.811; a real reply
    # can take minutes.
    neighbour_gap_seconds: float = 1800

    # -- selection
    # Past the soft budget, only items scoring at least this are added (up to the max).
    # Not measured; about a full match with nothing else for it.
    overflow_min_score: float = 0.6
    # When the topK limits leave soft budget unused, fill it with the next matching items.
    # LoCoMo: without it 0.659 at every budget.
    fill_budget_past_top_k: bool = True
    # Standing preferences the chat's block had no room for (it carries the newest) that
    # share words with the question go first, at most this many: "always show each step
    # when I ask about distance formulas", said months ago, for "what is the distance
    # between these points?". BEAM development chats with their replies at 3M tokens:
    # 2 / 3 / 5 / 8 / 12 gave preference following 0.701 / 0.701 / 0.733 / 0.754 / 0.754
    # (docs/measured.md, "Wants said in passing"); a line is some 25 tokens.
    standing_first: int = 8
    # Of those, the ones said within this many minutes of one of the query's best
    # matching turns fit it by that turn's score too (its subject was being talked about
    # when they were said), and go first. Measured in docs/measured.md (standing
    # preferences in a chat of many subjects); 0 turns it off.
    standing_topic_window_minutes: float = 120
    # Added to a matching turn in which the person says what they want, like or chose,
    # when the message asks for advice (`stated_wants`). Measured in docs/measured.md
    # (wants said in passing); 0 turns it off.
    stated_want_boost: float = 0.05
    # Filling past topK takes only items at least this relevant (the best match is 1).
    # LoCoMo: 0 used 991 / 1787 / 3476 tokens for 0.755 / 0.815 / 0.863; 0.1 uses 981 /
    # 1722 / 3127 for the same recall (0.2: 966 / 1630 / 2649 for 0.754 / 0.812 / 0.851).
    fill_min_relevance: float = 0.1
    # Turns less than this many minutes apart share one episodic topK slot (a window of
    # the conversation); 0 turns windows off. LoCoMo: 30 gave 0.753 / 0.803 / 0.850,
    # +0.009 at 1000 but -0.002 / -0.006 above, so off.
    episode_window_gap_minutes: float = 0
    # At most this many turns in one window; a longer stretch opens another slot.
    episode_window_max_turns: int = 8

    # -- meaning (memory.embeddings on); LoCoMo figures in docs/embeddings.md
    # Share of an item's relevance that comes from its meaning; the rest is the word
    # match. LoCoMo 1800: 0.3 gave 0.821, 0.7 0.801, 1.0 (meaning only) 0.713, 0.5 0.826.
    dense_weight: float = 0.5
    # Items closest in meaning that join the candidates without a shared word ("my car"
    # finds "my old Skoda"). LoCoMo 1800: 16 or 32 gave the same 0.826 as 8; 0 gave 0.821.
    dense_candidates: int = 8
    # In a scope of more items than this, a 384-bit sign code of each vector ranks them
    # first and only this many best get their exact similarity. Not measured for recall;
    # bench memory-vectors: 2,048 rows rescored keep a 100k-item pack near 18 ms p95.
    # A bigger scope rescores more: at least one row in 128 (`vector_file`).
    dense_rescore: int = 2_048
    # How meaning and words combine: "weighted" (dense_weight) or "rrf" (reciprocal rank
    # fusion, which gave 0.797 against 0.826 at 1800).
    fusion: Literal["weighted", "rrf"] = "weighted"
    # The k of reciprocal rank fusion: 1 / (k + rank) per ranking; the usual 60.
    rrf_k: float = 60


DEFAULT_RANKING = Ranking()
