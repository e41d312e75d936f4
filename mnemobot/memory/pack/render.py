"""How a MemoryPack reads: its sections and one Markdown line per item.

The last step of `pack.build_pack`, and the price of each item in the others: an item's
token cost is that of the line it renders as.

A long item shows only its passage the question is about (`memory.pack.passages`, given the
query's term weights as a `Focus`): "…" where it was cut, and the message refs the whole
text is under ("excerpt of tg:42"), which the `memory` tool's `read` takes. A turn of a
user message and the reply to it shows the passage of each; a reply the question does
not touch, only its beginning. An item stating an older value of what the question asks
about ("€25 a month" before "€40") is marked "earlier: updated DATE" (`memory.pack.figures`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from enum import StrEnum

from mnemobot.memory.notes.digests import shown_digest, shown_refs
from mnemobot.memory.pack.passages import CUT_MARK, passage, weight_in
from mnemobot.memory.store.items import (
    ItemType,
    Layer,
    MemoryItem,
    how_item_stated,
    said_order,
)
from mnemobot.memory.text.inert_markdown import inert_markdown

# Characters of a long item a line shows: the passage around what the question matched.
# On BEAM's development chats (100K, 11-20; messages of 270 to 3,800 characters) at the
# default budget: see docs/measured.md.
PASSAGE_CHARS = 400
# Of a reply the question does not touch, its beginning only (what it was about).
REPLY_HEAD_CHARS = 160


class PackSection(StrEnum):
    RECENT_EPISODES = "Recent episodes"
    RELEVANT_FACTS = "Relevant facts"
    APPLICABLE_PROCEDURES = "Applicable procedures"


SECTION_OF_LAYER: dict[Layer, PackSection] = {
    Layer.EPISODIC: PackSection.RECENT_EPISODES,
    Layer.SEMANTIC: PackSection.RELEVANT_FACTS,
    Layer.PROCEDURAL: PackSection.APPLICABLE_PROCEDURES,
}


@dataclass(frozen=True, slots=True)
class PackedItem:
    item: MemoryItem
    score: float
    tokens: int
    section: PackSection
    # The Markdown line the item renders as (what `tokens` was estimated from).
    line: str
    # BM25 relevance within the query's hits, 0..1; 0 for a recent-context item.
    relevance: float = 0.0
    # Why it was a candidate (`pack.CHOICE_REASONS`): "words", "meaning", "date",
    # "neighbour", "recent"; for a person asking why the bot brought it up.
    reasons: tuple[str, ...] = ()

    @property
    def references(self) -> list[str]:
        """The refs of what the line shows: a digest's, of its lines shown."""
        if self.item.type is ItemType.DIGEST:
            return shown_refs(self.line)
        return list(self.item.references)


@dataclass(frozen=True, slots=True)
class Focus:
    """What the query looks for: its search terms with their weights (idf), and how much
    of a long item a line shows."""

    weights: Mapping[str, float]
    limit: int = PASSAGE_CHARS
    # Items stating an older value of the figure the question asks about, and when the
    # newer statement was made (`memory.pack.figures`): shown as earlier.
    updated: Mapping[str, float] = field(default_factory=dict)
    # The lines of each day's digest a question spanning the history gets, by digest id
    # (`memory.notes.digests.pick_lines`).
    digest_lines: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


# The reply part of a turn's text (`extraction.build`: "User: ...\nAssistant: ...").
_REPLY_PART = "\nAssistant: "
# A speaker's label at the start of a text ("Anna: ", "User (continued): ").
_LABEL = re.compile(r"^([^\n:]{1,64}): ")
# References that name no message (a file, a session, the episode a fact came from).
_NOT_MESSAGE_REF = re.compile(r"^(?:file:|session:|promotedFrom:)")


def message_refs(item: MemoryItem) -> list[str]:
    """The refs of the messages an item was said in ("tg:42")."""
    return [ref for ref in item.references if not _NOT_MESSAGE_REF.match(ref)]


def _excerpt(label: str, body: str, focus: Focus, limit: int, head_only: bool) -> tuple[str, bool]:
    """`label: body` with the body cut to its passage; and whether it was cut."""
    chosen = passage(body, {} if head_only else focus.weights, limit)
    # Blank lines of a cut text only cost tokens.
    text = chosen.text
    if chosen.cut_before:
        text = f"{CUT_MARK} {text}"
    if chosen.cut_after:
        text = f"{text} {CUT_MARK}"
    return (f"{label}: {text}" if label else text), chosen.is_cut


def focused_content(content: str, focus: Focus) -> tuple[str, bool]:
    """The part of `content` a line shows for `focus`, and whether anything was cut."""
    if len(content) <= focus.limit:
        return content, False
    reply_at = content.find(_REPLY_PART)
    asked, reply = (content, "") if reply_at < 0 else (content[:reply_at], content[reply_at:])
    parts: list[str] = []
    cut = False
    for index, part in enumerate(p for p in (asked, reply.lstrip("\n")) if p):
        label_match = _LABEL.match(part)
        label = label_match.group(1) if label_match else ""
        body = part[label_match.end() :] if label_match else part
        is_reply = index > 0
        touched = not is_reply or weight_in(body, focus.weights) > 0
        limit = focus.limit if touched else REPLY_HEAD_CHARS
        text, part_cut = _excerpt(label, body, focus, limit, head_only=not touched)
        parts.append(text)
        cut = cut or part_cut
    return "\n".join(parts), cut


def _day(ts: float, tz: tzinfo) -> str:
    return datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d")


_TYPE_LABELS = {
    ItemType.DECISION: "Decision",
    ItemType.CONSTRAINT: "Constraint",
    ItemType.FAILURE: "Failure",
    ItemType.FIX: "Fix",
    ItemType.PREFERENCE: "Preference",
    ItemType.PROJECT_FACT: "Fact",
    ItemType.TASK_STATE: "Task",
    ItemType.COMMAND_RESULT: "Command",
    ItemType.TURN: "Turn",
    ItemType.DIGEST: "Digest",
}


def render_line(item: MemoryItem, *, tz: tzinfo = UTC, focus: Focus | None = None) -> str:
    """One Markdown list line for an item; every line says when it was said.

    A conversation turn shows its text; any other item shows its kind, when it was said
    (or noted, when the model wrote it: `items.how_stated`), and its content (titles
    are cut copies of the content, so showing both would pay for it twice). An item a
    newer statement replaced says so ("earlier, until DATE"), so the model never takes it
    for the current state. Multi-line content keeps its lines, indented as a list
    continuation. With `focus`, a long item shows its passage and names the messages the
    rest is in.
    """
    content = item.content.strip() or item.title.strip()
    cut = False
    if item.type is ItemType.DIGEST:
        # Its lines name their messages themselves.
        if focus is not None:
            content = shown_digest(content, focus.digest_lines.get(item.id, ()))
    elif focus is not None:
        content, cut = focused_content(content, focus)
    # What people said is data: it may not open a heading or a code block of the prompt.
    content = inert_markdown(content)
    text = content
    earlier = ""
    if item.valid_to is not None:
        earlier = f"earlier, until {_day(item.valid_to, tz)}"
    elif item.superseded_by is not None:
        earlier = "earlier, since replaced"
    elif focus is not None and item.id in focus.updated:
        earlier = f"earlier: updated {_day(focus.updated[item.id], tz)}"
    excerpt = ""
    if cut:
        refs = message_refs(item)
        excerpt = f"excerpt of {', '.join(refs)}" if refs else "excerpt"
    if item.type is ItemType.DIGEST:
        pass
    elif item.type is not ItemType.TURN:
        said, how = _day(item.created_at, tz), how_item_stated(item)
        said = f"{how} {item.mentions} times since {said}" if item.mentions > 1 else f"{how} {said}"
        if earlier and item.layer is not Layer.EPISODIC:
            said = f"{said}; {earlier}"
        if excerpt and item.layer is not Layer.EPISODIC:
            said = f"{said}; {excerpt}"
        text = f"{_TYPE_LABELS[item.type]}: {text}"
        if item.layer is not Layer.EPISODIC:
            text = f"{_TYPE_LABELS[item.type]} ({said}): {content}"
    text = "\n  ".join(line.rstrip() for line in text.splitlines()) if "\n" in text else text
    if item.layer is Layer.EPISODIC:
        notes = ", ".join(note for note in (earlier, excerpt) if note)
        day = _day(item.created_at, tz)
        return f"- {day} ({notes}): {text}" if notes else f"- {day}: {text}"
    return f"- {text}"


def render_pack(packed: Sequence[PackedItem]) -> str:
    """Markdown under `# Memory`; episodes oldest first, facts and procedures best first."""
    if not packed:
        return ""
    by_section: dict[PackSection, list[PackedItem]] = {section: [] for section in PackSection}
    for entry in packed:
        by_section[entry.section].append(entry)
    by_section[PackSection.RECENT_EPISODES].sort(key=lambda p: said_order(p.item))
    parts = ["# Memory"]
    for section in PackSection:
        entries = by_section[section]
        if entries:
            parts.append(f"## {section.value}\n" + "\n".join(p.line for p in entries))
    return "\n\n".join(parts) + "\n"
