"""How many of the messages an item was said in it names: a bounded few, whatever the repeats.

A message said again merges into the item that already holds its words, and the item is
appended to its file again (`memory.store.item_store`). Had it kept every ref, each repeat
would write a line longer than the last: a message repeated N times (a spammer, an export
of a bot's reminders) would cost N² on disk and in memory at the next load. So an item
keeps the refs of the first messages it was said in (what a pack, the memory tool's `read`
and `said_order` name) and of the latest ones; the others are counted in its `mentions`.

Refs that name no message (a file, a session, the episode a fact was promoted from) are
all kept: there are as many as there are distinct sources, not repeats, and forgetting
follows the `promotedFrom:` ones to the episodes a fact came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mnemobot.memory.store.items import ItemType, MemoryItem

# The first messages kept: the first is where something was said (a pack's "excerpt of",
# `said_order`); a few more keep a burst of one second in order and cover a turn made of
# several messages (an album, a long text split by the app) said once.
KEPT_FIRST_REFS = 4
# The latest messages kept: that it is still being said, and where.
KEPT_LATEST_REFS = 4
# Up to this many message refs an item keeps them all (a normal conversation's items hold
# one or two): a pack line's refs cost ~40 tokens at most, and a repeat's line stays short.
MAX_MESSAGE_REFS = KEPT_FIRST_REFS + KEPT_LATEST_REFS
_NOT_MESSAGE_REF = ("file:", "session:", "promotedFrom:")


def is_message_ref(ref: str) -> bool:
    return not ref.startswith(_NOT_MESSAGE_REF)


def messages_seen(item: MemoryItem) -> int:
    """How many messages the item is known to have been said in (at least one)."""
    return max(item.mentions, sum(map(is_message_ref, item.references)))


def merged_seen(existing: MemoryItem, incoming: MemoryItem, references: Sequence[str]) -> int:
    """The messages seen by `existing` merged with `incoming` (`references`: their union):
    those of `existing` and the messages only `incoming` names, or more if `incoming`
    counted more (an episode promoted again, with the repeats it has seen since)."""
    new = sum(map(is_message_ref, references)) - sum(map(is_message_ref, existing.references))
    return max(messages_seen(existing) + new, messages_seen(incoming))


def with_kept_refs(item: MemoryItem, seen: int | None = None) -> MemoryItem:
    """`item` naming at most `MAX_MESSAGE_REFS` messages: the first and the latest; the
    others counted in `mentions` (`seen`: the messages it was said in, if known better
    than its refs tell). An item within the bound is returned as it is, and so is a day's
    digest: it names the messages of the lines it shows (a bounded day of them, each
    line's a bounded few), is written once a day rather than once a repeat, and what
    reads its refs (is a request carrying it all?) needs them all."""
    if item.type is ItemType.DIGEST:
        return item
    message_refs = [ref for ref in item.references if is_message_ref(ref)]
    if len(message_refs) <= MAX_MESSAGE_REFS:
        return item
    kept = set(kept_message_refs(message_refs))
    references = [ref for ref in item.references if not is_message_ref(ref) or ref in kept]
    mentions = max(item.mentions, seen if seen is not None else len(message_refs))
    return replace(item, references=references, mentions=mentions)


def kept_message_refs(message_refs: Sequence[str]) -> list[str]:
    """The message refs kept of these, in order: all, or the first and the latest few."""
    if len(message_refs) <= MAX_MESSAGE_REFS:
        return list(message_refs)
    return [*message_refs[:KEPT_FIRST_REFS], *message_refs[-KEPT_LATEST_REFS:]]
