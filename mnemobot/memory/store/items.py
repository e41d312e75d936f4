"""The memory data model: items and the turn event handed to the write path."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from mnemobot.base.clock import to_iso


class Layer(StrEnum):
    EPISODIC = "EPISODIC"
    SEMANTIC = "SEMANTIC"
    PROCEDURAL = "PROCEDURAL"


class ItemType(StrEnum):
    DECISION = "DECISION"
    CONSTRAINT = "CONSTRAINT"
    FAILURE = "FAILURE"
    FIX = "FIX"
    PREFERENCE = "PREFERENCE"
    PROJECT_FACT = "PROJECT_FACT"
    TASK_STATE = "TASK_STATE"
    COMMAND_RESULT = "COMMAND_RESULT"
    # The record of one whole conversation turn (what was said, by whom, when).
    TURN = "TURN"
    # What a day's messages were about, one line each (`memory.notes.digests`).
    DIGEST = "DIGEST"


# Every turn item also carries this tag: it is part of the text an item is found by, and
# files written before TURN existed mark their turns (typed TASK_STATE) with it alone.
TURN_TAG = "turn"
# A standing preference: how a person asked to be answered (`memory.write.standing`).
STANDING_TAG = "standing"
# Tag prefix naming who said a turn or a fact ("speaker:anna").
SPEAKER_TAG = "speaker:"
# The source of a fact the memory tool rewrote, and the tag prefix naming at whose request
# ("rewritten-by:anna"): its speaker tag still names whose fact it is.
REWRITE_SOURCE = "rewrite"
REWRITER_TAG = "rewritten-by:"
# Tag of the turn items of a forwarded message: the author's words, passed on by the user.
FORWARDED_TAG = "forwarded"


def speaker_tag(speaker: str) -> str:
    """The tag naming `speaker` ("Anna Lee" -> "speaker:anna-lee")."""
    return SPEAKER_TAG + "-".join(speaker.lower().split())


def rewriter_tag(name: str) -> str:
    """The tag naming at whose request a fact was rewritten ("rewritten-by:anna-lee")."""
    return REWRITER_TAG + "-".join(name.lower().split())


# How a fact came to be, in the words a pack and consolidation show: the model's own
# writing is "noted", never "said", so neither a reader nor the model takes it for the
# user's words (a small model's flush invents things).
_NOTED_BY_SOURCE = {
    "compaction": "noted from the conversation",
    "tool": "noted by the assistant",
}


def how_stated(source: str, speaker: str | None = None) -> str:
    """`said` for what people said (a turn, a slot statement, a promoted episode), else
    how the model noted it; the memory tool's, with whose words it noted (`speaker`, a
    speaker tag): in a group one member may note something about another, which must not
    read as the assistant's own knowledge. A rewrite is the assistant's words at someone's
    request (`speaker`, a rewriter tag), never what the fact's person said."""
    if source == REWRITE_SOURCE:
        if speaker is not None and speaker.startswith(REWRITER_TAG):
            return f"rewritten by the assistant at {speaker.removeprefix(REWRITER_TAG)}'s request"
        return "rewritten by the assistant"
    how = _NOTED_BY_SOURCE.get(source, "said")
    if source == "tool" and speaker is not None and speaker.startswith(SPEAKER_TAG):
        return f"{how} from what {speaker.removeprefix(SPEAKER_TAG)} said"
    return how


def how_item_stated(item: MemoryItem) -> str:
    """`how_stated` of an item, with the tag that names whose words or request it was."""
    if item.source == REWRITE_SOURCE:
        return how_stated(item.source, _tagged(item, REWRITER_TAG))
    return how_stated(item.source, speaker_of(item))


def speaker_of(item: MemoryItem) -> str | None:
    """The speaker tag of an item, if it has one."""
    return _tagged(item, SPEAKER_TAG)


def _tagged(item: MemoryItem, prefix: str) -> str | None:
    for tag in item.tags:
        if tag.startswith(prefix):
            return tag
    return None


_SPACES = re.compile(r"\s+")


def normalize_content(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def fingerprint(item_type: ItemType, content: str) -> str:
    digest = hashlib.sha1(f"{item_type.value}\n{normalize_content(content)}".encode())
    return digest.hexdigest()[:20]


# A speaker's label is at most this long ("Ada Lovelace: ..."); a longer text before the
# first ": " is part of what was said.
_LABEL_CHARS = 64
_CLOSING = " .!?…。！？"


def split_label(content: str) -> tuple[str | None, str]:
    """A statement's speaker label and what was said: "Ada: I prefer tea" -> ("Ada",
    "I prefer tea"); (None, content) when it has none."""
    who, sep, what = content.partition(": ")
    if sep and who and "\n" not in who and len(who) <= _LABEL_CHARS:
        return who, what
    return None, content


def statement_of(content: str) -> str:
    """What was said, to compare: without the speaker's label, case, spacing or the
    closing punctuation. The same words kept as a standing preference, a fact, or by
    another member read the same here; who said them is the caller's to compare."""
    return normalize_content(split_label(content)[1]).rstrip(_CLOSING)


def statement_fingerprint(content: str) -> str:
    """A hash of `statement_of(content)`, whatever kind of item holds it ("" for none):
    a forgotten item's, kept in its tombstone, keeps the same words out as any kind."""
    statement = statement_of(content)
    if not statement:
        return ""
    return hashlib.sha1(f"statement\n{statement}".encode()).hexdigest()[:20]


@dataclass(slots=True)
class MemoryItem:
    """One remembered thing. Times are UTC epoch seconds in memory, ISO-8601 on disk.

    `title` reads as a str, but an item loaded from disk whose title is the start of its
    content (most are: a title is a cut copy of the content's first line) holds a small
    int instead, and the title is cut from `content` when read (see `_title_code`). So
    `content` is never reassigned on an item (`dataclasses.replace` makes a new one, with
    the title as a str); nothing in the package does.
    """

    id: str
    layer: Layer
    type: ItemType
    title: str
    content: str
    scope: str
    created_at: float
    updated_at: float
    tags: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    source: str = "turn"
    confidence: float = 0.65
    salience: float = 0.5
    ttl_days: float | None = None
    last_accessed_at: float | None = None
    fingerprint: str = ""
    # Set when a newer statement replaced this one ("I moved to Berlin" after "I live in
    # Paris"): the time it stopped being true and the id of the item that replaced it.
    # The item is kept (the past is still worth knowing) but never shown as current.
    valid_to: float | None = None
    superseded_by: str | None = None
    # How many times the same fact was stated (near-duplicates collapsed into this item).
    mentions: int = 1

    @property
    def is_superseded(self) -> bool:
        return self.valid_to is not None or self.superseded_by is not None

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = fingerprint(self.type, self.content)

    def to_json_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "id": self.id,
            "layer": self.layer.value,
            "type": self.type.value,
            "title": self.title,
            "content": self.content,
            "scope": self.scope,
            "tags": self.tags,
            "references": self.references,
            "source": self.source,
            "confidence": round(self.confidence, 4),
            "salience": round(self.salience, 4),
            "ttlDays": self.ttl_days,
            "createdAt": to_iso(self.created_at),
            "updatedAt": to_iso(self.updated_at),
            "lastAccessedAt": (
                to_iso(self.last_accessed_at) if self.last_accessed_at is not None else None
            ),
            "fingerprint": self.fingerprint,
        }
        # Written only when set: most items never change, and old files lack the keys.
        if self.valid_to is not None:
            record["validTo"] = to_iso(self.valid_to)
        if self.superseded_by is not None:
            record["supersededBy"] = self.superseded_by
        if self.mentions != 1:
            record["mentions"] = self.mentions
        return record

    @classmethod
    def from_json_dict(cls, record: dict[str, Any]) -> MemoryItem:
        """Build from a stored line; raises KeyError/ValueError/TypeError on a bad one.

        Written for speed (a 100k-item load spends most of its time here): positional
        arguments, C-level checks, and `fromisoformat`, which reads the trailing "Z" itself.
        """
        get = record.get
        content = record["content"]
        if type(content) is not str:
            raise TypeError("content must be a string")
        created = record["createdAt"]
        updated = get("updatedAt") or created
        created_at = _from_iso(created).timestamp()
        accessed = get("lastAccessedAt")
        ttl_days = get("ttlDays")
        item_type = _TYPES[record["type"]]
        tags = _strings(get("tags"))
        if item_type is _TASK_STATE and TURN_TAG in tags:
            # A turn written before turns had their own type. Its stored fingerprint is
            # kept, so tombstones and promoted copies that name it still match.
            item_type = ItemType.TURN
        item = cls(
            str(record["id"]),
            _LAYERS[record["layer"]],
            item_type,
            _title_code(get("title", ""), content),
            content,
            str(get("scope", "")),
            created_at,
            # Most items were never updated: the same float, parsed once and shared.
            created_at if updated == created else _from_iso(updated).timestamp(),
            tags,
            _strings(get("references")),
            str(get("source", "turn")),
            float(get("confidence", 0.65)),
            float(get("salience", 0.5)),
            float(ttl_days) if ttl_days is not None else None,
            _from_iso(accessed).timestamp() if accessed else None,
            str(get("fingerprint") or ""),
        )
        # Most lines carry none of these (only replaced or repeated facts do).
        if "validTo" in record or "supersededBy" in record or "mentions" in record:
            item.valid_to, item.superseded_by, item.mentions = _history(record)
        return item


# A title held in memory as an int: (n << 2) | end means content[:n] + _TITLE_ENDS[end].
# At 100k Russian items the titles were 22 MB of the 316 MB peak (2 bytes a character);
# the ints are shared, from this table, up to titles of 1023 characters.
_TITLE_ENDS = ("", "…", " …")
_TITLE_CODES = tuple(range(4096))
# The slot itself (its descriptor), under the property set below.
_TITLE_SLOT: Any = vars(MemoryItem)["title"]


def said_order(item: MemoryItem) -> tuple[float, int, str]:
    """Where an item stands in its scope's timeline: its time, then the number of the
    first message it names. Telegram dates messages in whole seconds and numbers them in
    the order they came, so a burst of one second (in a group, a long text the app sent
    as several messages) keeps its order; the id (random) only breaks what is left."""
    return (item.created_at, _message_number(item.references), item.id)


# Refs ending in a Telegram message number: the bot's own, an earlier bot's of the chat
# (`tg-bot<id>:<n>`), an import's.
_NUMBERED_REFS = ("tg:", "tg-bot", "tg-export:")


def _message_number(references: list[str]) -> int:
    numbers = [
        int(tail)
        for ref in references
        if ref.startswith(_NUMBERED_REFS) and (tail := ref.rsplit(":", 1)[-1]).isdigit()
    ]
    return min(numbers, default=0)


def _title_code(title: Any, content: str) -> Any:
    """`title` as a code when `content` starts with it (bar `cut_text`'s ellipsis)."""
    if type(title) is not str:
        return str(title)
    if content.startswith(title):
        code = len(title) << 2
    elif title.endswith("…") and content.startswith(title[:-1]):
        code = (len(title) - 1) << 2 | 1
    elif title.endswith(" …") and content.startswith(title[:-2]):
        code = (len(title) - 2) << 2 | 2
    else:
        return title
    return _TITLE_CODES[code] if code < len(_TITLE_CODES) else title


def _title(item: MemoryItem) -> str:
    stored = _TITLE_SLOT.__get__(item, MemoryItem)
    if type(stored) is str:
        return stored
    return item.content[: stored >> 2] + _TITLE_ENDS[stored & 3]


# Every read of `item.title` (the dataclass's own __eq__, __repr__, `replace` included)
# decodes; a write stores what it is given, at the slot's C speed.
MemoryItem.title = property(_title, _TITLE_SLOT.__set__)  # type: ignore[misc,assignment]

_LAYERS = {layer.value: layer for layer in Layer}
_TYPES = {item_type.value: item_type for item_type in ItemType}
_TASK_STATE = ItemType.TASK_STATE
_from_iso = datetime.fromisoformat


def _history(record: dict[str, Any]) -> tuple[float | None, str | None, int]:
    """validTo, supersededBy, mentions of a stored line (only lines that have them)."""
    valid_to = record.get("validTo")
    superseded_by = record.get("supersededBy")
    return (
        _from_iso(valid_to).timestamp() if valid_to else None,
        str(superseded_by) if superseded_by else None,
        max(1, int(record.get("mentions") or 1)),
    )


def _strings(values: Any) -> list[str]:
    if not values:
        return []
    if type(values) is not list:
        raise TypeError("expected a list")
    try:
        # str.join checks every element is a str, in C.
        "".join(values)
    except TypeError:
        return [str(value) for value in values]
    return values


@dataclass(frozen=True, slots=True)
class ForwardedText:
    """A message the user passed on (a Telegram forward): said by `author`, at `said_at`
    (epoch seconds, when known). Remembered as the author's words at that date, never as
    the user's own: Alice's "I live in Paris" does not move the user to Paris."""

    author: str
    text: str
    said_at: float | None = None
    # The id of the message that carried it (e.g. "tg:42").
    ref: str | None = None


@dataclass(frozen=True, slots=True)
class DocumentText:
    """The text of a file the user sent (a PDF, a text file), kept under `name` in the
    chat's files: remembered in chunks, each found by its own words."""

    name: str
    text: str
    ref: str | None = None


@dataclass(slots=True)
class TurnMemoryEvent:
    """A finalized turn, handed from the pipeline to the memory write path."""

    scope: str
    chat_key: str
    user_text: str
    assistant_text: str
    at: float
    tool_outputs: list[str] = field(default_factory=list)
    # What the turn's failed tool calls told the model ("error: invalid arguments: ..."):
    # the bot's own trouble, not the user's; the answer repeating one is no failure of theirs.
    tool_errors: list[str] = field(default_factory=list)
    # Ids of the messages this turn came from (Telegram message ids, LoCoMo dia_ids, ...).
    message_refs: list[str] = field(default_factory=list)
    # Who said the user text, when known (a group member, a LoCoMo speaker).
    speaker: str | None = None
    # The speaker is the only person of the scope (a private chat with its own memory):
    # their facts said under another name (a renamed Telegram user) are theirs too.
    sole_speaker: bool = False
    # Added to the turn's items ("voice", "photo", "forwarded"): part of what they are
    # found by.
    tags: list[str] = field(default_factory=list)
