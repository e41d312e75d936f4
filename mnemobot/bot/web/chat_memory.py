"""What a chat's memory holds, as the page lists it: items by layer and type (paged,
searched on the server), current facts with their history, standing preferences.

Everything reads one snapshot of the scope's items, taken under the scope's lock (the
lock every turn and the memory tool take), in a worker thread.

A fact's history is what the write path records: a newer statement that replaces an older
one ("I moved to Berlin" after "I live in Paris") marks the older item `valid_to` (when it
stopped being true) and `superseded_by` (the item that replaced it); a durable fact names
the episode it was promoted from in its references (`promotedFrom:<id>`), and that episode
the message it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import tzinfo

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX
from mnemobot.memory.store.items import STANDING_TAG, ItemType, Layer, MemoryItem, said_order

# Hits of a search the page pages through (the best first); more would be read by nobody.
SEARCH_LIMIT = 1_000


def scope_items(memory: WorkspaceMemory, scope: str) -> list[MemoryItem]:
    """The scope's live items as they are now (blocking: loads a cold scope)."""
    with memory.scopes.lock(scope):
        return list(memory.scopes.store(scope).items.values())


def newest_first(items: Iterable[MemoryItem]) -> list[MemoryItem]:
    return sorted(items, key=said_order, reverse=True)


@dataclass(frozen=True, slots=True)
class ItemQuery:
    """The list's filters: a layer, a type, words to search for."""

    layer: Layer | None = None
    item_type: ItemType | None = None
    text: str = ""

    @classmethod
    def of(cls, query: Mapping[str, str]) -> ItemQuery:
        """From the page's `?layer=&type=&q=`; an unknown layer or type filters nothing."""
        layer = query.get("layer", "").upper()
        item_type = query.get("type", "").upper()
        return cls(
            Layer(layer) if layer in Layer.__members__ else None,
            ItemType(item_type) if item_type in ItemType.__members__ else None,
            query.get("q", "").strip(),
        )

    def keeps(self, item: MemoryItem) -> bool:
        return (self.layer is None or item.layer is self.layer) and (
            self.item_type is None or item.type is self.item_type
        )


def find_items(
    memory: WorkspaceMemory, scope: str, query: ItemQuery, config: MemoryConfig, tz: tzinfo
) -> list[MemoryItem]:
    """The items the list shows, in its order: newest first, or a search's best first.

    Words are searched as the memory tool searches (BM25 over the scope's index); words it
    cannot search by (none left after stop words) are looked for as written."""
    if not query.text:
        return [item for item in newest_first(scope_items(memory, scope)) if query.keeps(item)]
    hits = memory.recall.search(scope, query.text, config=config, tz=tz, limit=SEARCH_LIMIT)
    found = [item for item, _ in hits]
    if not found:
        needle = query.text.casefold()
        items = scope_items(memory, scope)
        found = newest_first(item for item in items if needle in item.content.casefold())
    return [item for item in found if query.keeps(item)]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a statement came from: the episode it was promoted from (if still kept), or
    the reference of the message it was said in."""

    ref: str
    episode: MemoryItem | None = None


@dataclass(frozen=True, slots=True)
class FactVersion:
    item: MemoryItem
    origins: list[Origin]


@dataclass(frozen=True, slots=True)
class FactHistory:
    current: FactVersion
    # The values it replaced, the most recently replaced first.
    earlier: list[FactVersion]


def _durable(item: MemoryItem) -> bool:
    return item.layer is not Layer.EPISODIC


def _standing(item: MemoryItem) -> bool:
    return item.type is ItemType.PREFERENCE and STANDING_TAG in item.tags


class FactBook:
    """A scope's durable facts and how they replaced one another."""

    def __init__(self, items: Iterable[MemoryItem]) -> None:
        self.by_id = {item.id: item for item in items}
        self.replaced: dict[str, list[MemoryItem]] = {}
        for item in self.by_id.values():
            if _durable(item) and item.superseded_by:
                self.replaced.setdefault(item.superseded_by, []).append(item)

    def current(self, *, preferences: bool, text: str = "") -> list[MemoryItem]:
        """Facts that hold now (standing preferences, or every other kind), newest first.

        Standing: how a person asked to be answered, carried in every request. A liking
        learned in passing ("I love sushi") is a preference too, but no rule for the
        answers: it is listed with the facts."""
        needle = text.casefold()
        found = [
            item
            for item in self.by_id.values()
            if _durable(item)
            and not item.is_superseded
            and _standing(item) == preferences
            and needle in item.content.casefold()
        ]
        return sorted(found, key=lambda item: (item.updated_at, item.id), reverse=True)

    def no_longer_current(self, text: str = "") -> list[MemoryItem]:
        """Facts a newer statement (or consolidation) marked earlier, latest change first."""
        needle = text.casefold()
        found = [
            item
            for item in self.by_id.values()
            if _durable(item) and item.is_superseded and needle in item.content.casefold()
        ]
        return sorted(found, key=lambda item: (item.valid_to or 0.0, item.id), reverse=True)

    def history(self, fact: MemoryItem) -> FactHistory:
        earlier: list[MemoryItem] = []
        seen = {fact.id}
        waiting = [fact.id]
        while waiting:
            for old in self.replaced.get(waiting.pop(), []):
                if old.id not in seen:
                    seen.add(old.id)
                    earlier.append(old)
                    waiting.append(old.id)
        earlier.sort(key=lambda item: (item.valid_to or 0.0, item.id), reverse=True)
        return FactHistory(self._version(fact), [self._version(old) for old in earlier])

    def _version(self, item: MemoryItem) -> FactVersion:
        origins = []
        for ref in item.references:
            if ref.startswith(PROMOTED_FROM_PREFIX):
                episode = self.by_id.get(ref[len(PROMOTED_FROM_PREFIX) :])
                origins.append(Origin(ref, episode))
            else:
                origins.append(Origin(ref))
        return FactVersion(item, origins)
