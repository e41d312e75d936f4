"""Turn items for the pack's pure-function tests: numbered, dated by day, with a ref."""

from __future__ import annotations

from mnemobot.memory.store.items import ItemType, Layer, MemoryItem

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
