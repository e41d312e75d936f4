"""Durable facts the bot states itself: the memory tool's, the compaction flush's, and the
slot facts of the update rules (`memory.write.facts`), all made here, one way.

Extraction reads episodes out of what was said, each with the confidence of the rule
that read it, and promotion makes the confident ones durable. These facts skip both
steps, so their confidence and salience come from the runtime config by where they came
from (`FactSource`); the write path (`memory.write.write_path`) then treats them as it treats
a promoted fact: repeats merge, a newer statement of a slot replaces the older one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.store.item_store import PROMOTION_TARGET, new_item_id
from mnemobot.memory.store.items import ItemType, MemoryItem, speaker_tag

# "tool": the model saved it (memory tool); "compaction": the flush kept it from messages
# a compaction dropped; "slot": a statement of a single-valued thing ("I moved to
# Berlin") that extraction made no fact of.
FactSource = Literal["tool", "compaction", "slot"]

# Titles are a cut copy of the content, for lists and the CLI.
_TITLE_CHARS = 80


def fact_weights(source: FactSource, config: MemoryConfig) -> tuple[float, float]:
    """(confidence, salience) of a fact from `source`."""
    if source == "tool":
        return config.tool_confidence, config.tool_salience
    if source == "compaction":
        return config.flush_confidence, config.flush_salience
    return config.extraction.slot_fact_confidence, config.extraction.slot_fact_salience


def new_fact(
    content: str,
    *,
    item_type: ItemType,
    scope: str,
    at: float,
    source: FactSource,
    config: MemoryConfig,
    speaker: str | None = None,
    tags: Sequence[str] = (),
    references: Sequence[str] = (),
    id_factory: Callable[[], str] = new_item_id,
) -> MemoryItem:
    """A durable item (semantic, or procedural for a how-to) said by `speaker`, if named."""
    confidence, salience = fact_weights(source, config)
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
