"""Durable facts the bot states itself: the memory tool's, the compaction flush's, and the
slot facts of the update rules (`memory.write.facts`), all made here, one way.

Extraction reads episodes out of what was said, each with the confidence of the rule
that read it, and promotion makes the confident ones durable. These facts skip both
steps, so their confidence and salience are set by where they came from (`FactSource`);
the write path (`memory.write.write_path`) then treats them as it treats
a promoted fact: repeats merge, a newer statement of a slot replaces the older one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Literal

from mnemobot.memory.store.item_store import PROMOTION_TARGET, new_item_id
from mnemobot.memory.store.items import (
    REWRITE_SOURCE,
    REWRITER_TAG,
    SPEAKER_TAG,
    STANDING_TAG,
    TURN_TAG,
    ItemType,
    MemoryItem,
    rewriter_tag,
    speaker_tag,
)
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning

# "tool": the model saved it (memory tool); "compaction": the flush kept it from messages
# a compaction dropped; "slot": a statement of a single-valued thing ("I moved to
# Berlin") that extraction made no fact of; "standing": how a person asked to be
# answered (`memory.write.standing`), weighed as a slot fact.
FactSource = Literal["tool", "compaction", "slot", "standing"]

# Titles are a cut copy of the content, for lists and the CLI.
_TITLE_CHARS = 80
# Tag prefix naming where an item's words came from ("from:user", "from:tool").
_ORIGIN_TAG = "from:"
# Tags that say what memory made of an item, never the model's to give (`model_tags`).
_MEMORYS_OWN_TAGS = frozenset({STANDING_TAG, TURN_TAG, "request"})

# Longest text one memory item holds: the memory tool refuses a longer one (the model is
# told to save a summary), and a longer compaction fact is cut. Not measured; about a
# page, far past any fact, short of a pasted document (documents are chunked instead).
MAX_ITEM_CHARS = 4_000

# Confidence and salience (ranking inputs) of a fact the model saves with the memory
# tool: it was asked to, or judged it worth keeping, so it ranks above what rules
# extracted (at most 0.85). Not measured; chosen by that order.
TOOL_CONFIDENCE = 0.9
TOOL_SALIENCE = 0.7
# Of a fact the compaction flush keeps: the model read it out of messages it was told
# to summarize, so as sure as an explicit statement (0.8) and above promotion. Not
# measured.
FLUSH_CONFIDENCE = 0.8
FLUSH_SALIENCE = 0.6


def fact_weights(
    source: FactSource, extraction: ExtractionTuning = DEFAULT_EXTRACTION
) -> tuple[float, float]:
    """(confidence, salience) of a fact from `source`."""
    if source == "tool":
        return TOOL_CONFIDENCE, TOOL_SALIENCE
    if source == "compaction":
        return FLUSH_CONFIDENCE, FLUSH_SALIENCE
    return extraction.slot_fact_confidence, extraction.slot_fact_salience


def new_fact(
    content: str,
    *,
    item_type: ItemType,
    scope: str,
    at: float,
    source: FactSource,
    extraction: ExtractionTuning = DEFAULT_EXTRACTION,
    speaker: str | None = None,
    tags: Sequence[str] = (),
    references: Sequence[str] = (),
    id_factory: Callable[[], str] = new_item_id,
) -> MemoryItem:
    """A durable item (semantic, or procedural for a how-to) said by `speaker`, if named."""
    confidence, salience = fact_weights(source, extraction)
    all_tags = [*tags, speaker_tag(speaker)] if speaker else list(tags)
    return MemoryItem(
        id=id_factory(),
        layer=PROMOTION_TARGET[item_type],
        type=item_type,
        title=content[:_TITLE_CHARS],
        content=content,
        scope=scope,
        created_at=at,
        updated_at=at,
        tags=list(dict.fromkeys(all_tags)),
        references=list(dict.fromkeys(references)),
        source=source,
        confidence=confidence,
        salience=salience,
    )


def rest_of_fact(
    fact: MemoryItem,
    content: str,
    *,
    at: float,
    dropped_tags: Collection[str] = (),
    id_factory: Callable[[], str] = new_item_id,
) -> MemoryItem:
    """What else `fact` said, as a fact of its own, once a part of it was replaced ("Ich
    heiße Greta" of "Ich heiße Greta und wohne in Berlin" after a move): said when and by
    whom `fact` was, from the same words (its references), without `dropped_tags`."""
    return replace(
        fact,
        id=id_factory(),
        title=content[:_TITLE_CHARS],
        content=content,
        updated_at=at,
        tags=[tag for tag in fact.tags if tag not in dropped_tags],
        references=list(fact.references),
        fingerprint="",
        valid_to=None,
        superseded_by=None,
    )


def rewritten_fact(
    fact: MemoryItem,
    content: str,
    *,
    at: float,
    tags: Sequence[str] | None,
    rewriter: str | None,
    references: Sequence[str],
) -> MemoryItem:
    """`fact` in the memory tool's new words, under its own id: dated `at`, the assistant's
    rewrite at `rewriter`'s request (never what the fact's person said), from the message
    that asked for it (`references`). Its speaker tag stays: it is still that person's
    fact; the value it had is kept apart, marked earlier (`write_path.rewrite_fact`)."""
    given = fact.tags if tags is None else model_tags(tags)
    # Its words come from the tool now, whatever they came from before ("from:user").
    kept = [tag for tag in given if not tag.startswith((REWRITER_TAG, _ORIGIN_TAG))]
    kept.append(_ORIGIN_TAG + "tool")
    if tags is not None:
        # Whose fact it is is not the model's to change by giving other tags, nor whether
        # it is how its person asked to be answered (every request carries it still).
        kept += [tag for tag in fact.tags if tag.startswith(SPEAKER_TAG) or tag == STANDING_TAG]
    if rewriter:
        kept.append(rewriter_tag(rewriter))
    return replace(
        fact,
        title=content[:_TITLE_CHARS],
        content=content,
        created_at=at,
        updated_at=max(at, fact.updated_at),
        tags=list(dict.fromkeys(kept)),
        references=list(dict.fromkeys(references)),
        source=REWRITE_SOURCE,
        fingerprint="",
        mentions=1,
    )


def model_tags(tags: Sequence[str]) -> list[str]:
    """The memory tool's `tags` less those only memory itself gives: whose words a fact is
    ("speaker:boris"), at whose request it was rewritten, where its words came from, and
    whether every request carries it ("standing", "request", "turn"). The model reads
    strangers' text; with them, Clara's words became Boris's standing preference."""
    return [
        tag
        for tag in tags
        if not tag.startswith((SPEAKER_TAG, REWRITER_TAG, _ORIGIN_TAG))
        and tag not in _MEMORYS_OWN_TAGS
    ]


def retagged(fact: MemoryItem, tags: Sequence[str]) -> list[str]:
    """The memory tool's `tags` for `fact` whose words stay: whose fact it is, where its
    words came from (a person, a rewrite at someone's request) and whether it is how its
    person asked to be answered are not the model's to change by giving other tags."""
    given = model_tags(tags)
    own = [
        tag
        for tag in fact.tags
        if tag.startswith((SPEAKER_TAG, REWRITER_TAG, _ORIGIN_TAG)) or tag == STANDING_TAG
    ]
    return list(dict.fromkeys([*given, *own]))


def earlier_copy(fact: MemoryItem, *, id_factory: Callable[[], str] = new_item_id) -> MemoryItem:
    """`fact` as it was, under an id of its own: the value a rewrite replaced, kept (with
    who said it, when, and from which message) to be marked earlier."""
    return replace(fact, id=id_factory())
