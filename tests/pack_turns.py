"""Turn items for the pack's pure-function tests: numbered, dated by day, with a ref."""

from __future__ import annotations

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.build import MemoryPack, build_pack
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.text.terms import terms

DAY = 86_400.0
START = 1_700_000_000.0


def turn_item(number: int, said: str, content: str, day: float) -> MemoryItem:
    """Turn `number` of day `day` (its seconds are its number), titled by what was `said`."""
    at = START + day * DAY + number
    return MemoryItem(
        id=f"t{number:03d}",
        layer=Layer.EPISODIC,
        type=ItemType.TURN,
        title=said[:80],
        content=content,
        scope="s",
        created_at=at,
        updated_at=at,
        tags=["turn"],
        references=[f"tg:{number}"],
    )


def pack_over(items: list[MemoryItem], question: str, soft: int) -> MemoryPack:
    """The pack of `items` (indexed as the store indexes them) for `question`, asked on
    day 100 with a soft and max budget of `soft` tokens."""
    index = BM25Index()
    for item in items:
        index.add(item.id, terms(indexed_text(item)))
    config = MemoryConfig(soft_prompt_budget_tokens=soft, max_prompt_budget_tokens=soft)
    query = MemoryQuery.for_config(question, "s", START + 100 * DAY, config)
    return build_pack({item.id: item for item in items}, index, query)
