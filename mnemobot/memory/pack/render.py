"""How a MemoryPack reads: its sections and one Markdown line per item.

The last step of `pack.build_pack`, and the price of each item in the others: an item's
token cost is that of the line it renders as.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from enum import StrEnum

from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, how_stated
from mnemobot.memory.text.inert_markdown import inert_markdown


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
}


def render_line(item: MemoryItem, *, tz: tzinfo = UTC) -> str:
    """One Markdown list line for an item; every line says when it was said.

    A conversation turn shows its text; any other item shows its kind, when it was said
    (or noted, when the model wrote it: `items.how_stated`), and its content (titles
    are cut copies of the content, so showing both would pay for it twice). An item a
    newer statement replaced says so ("earlier, until DATE"), so the model never takes it
    for the current state. Multi-line content keeps its lines, indented as a list
    continuation.
    """
    # What people said is data: it may not open a heading or a code block of the prompt.
    content = inert_markdown(item.content.strip() or item.title.strip())
    text = content
    earlier = ""
    if item.valid_to is not None:
        earlier = f"earlier, until {_day(item.valid_to, tz)}"
    elif item.superseded_by is not None:
        earlier = "earlier, since replaced"
    if item.type is not ItemType.TURN:
        said, how = _day(item.created_at, tz), how_stated(item.source)
        said = f"{how} {item.mentions} times since {said}" if item.mentions > 1 else f"{how} {said}"
        if earlier and item.layer is not Layer.EPISODIC:
            said = f"{said}; {earlier}"
        text = f"{_TYPE_LABELS[item.type]}: {text}"
        if item.layer is not Layer.EPISODIC:
            text = f"{_TYPE_LABELS[item.type]} ({said}): {content}"
    text = "\n  ".join(line.rstrip() for line in text.splitlines()) if "\n" in text else text
    if item.layer is Layer.EPISODIC:
        day = _day(item.created_at, tz)
        return f"- {day} ({earlier}): {text}" if earlier else f"- {day}: {text}"
    return f"- {text}"


def render_pack(packed: Sequence[PackedItem]) -> str:
    """Markdown under `# Memory`; episodes oldest first, facts and procedures best first."""
    if not packed:
        return ""
    by_section: dict[PackSection, list[PackedItem]] = {section: [] for section in PackSection}
    for entry in packed:
        by_section[entry.section].append(entry)
    by_section[PackSection.RECENT_EPISODES].sort(key=lambda p: (p.item.created_at, p.item.id))
    parts = ["# Memory"]
    for section in PackSection:
        entries = by_section[section]
        if entries:
            parts.append(f"## {section.value}\n" + "\n".join(p.line for p in entries))
    return "\n\n".join(parts) + "\n"
