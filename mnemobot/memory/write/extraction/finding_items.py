"""Building memory items from a turn's findings: the turn item and one item per finding."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath

from mnemobot.memory.store.items import (
    TURN_TAG,
    ItemType,
    Layer,
    MemoryItem,
    TurnMemoryEvent,
    fingerprint,
    speaker_tag,
)
from mnemobot.memory.write.extraction.chunks import split_long_text
from mnemobot.memory.write.extraction.code import split_code
from mnemobot.memory.write.extraction.extractor import MAX_SCAN_CHARS, TurnExtractor
from mnemobot.memory.write.extraction.finding import Finding
from mnemobot.memory.write.extraction.sentences import cut_text, one_line, split_sentences
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning
from mnemobot.memory.write.extraction.words import is_question, is_small_talk

# Titles are one short line: a cut copy of the content, for lists and the CLI. A display
# format, not a behaviour anyone tunes.
TITLE_CHARS = 80

# What the title of a derived item starts with, and the tag its turn gets.
_LABELS = {
    ItemType.PREFERENCE: "Preference",
    ItemType.PROJECT_FACT: "Fact",
    ItemType.DECISION: "Decision",
    ItemType.TASK_STATE: "Task",
    ItemType.CONSTRAINT: "Constraint",
    ItemType.FAILURE: "Failure",
    ItemType.FIX: "Fix",
    ItemType.COMMAND_RESULT: "Command",
}


def _basename(path: str) -> str:
    return PurePath(path.replace("\\", "/")).name


def extract_items(
    event: TurnMemoryEvent,
    *,
    code_aware: bool,
    id_factory: Callable[[], str],
    tuning: ExtractionTuning = DEFAULT_EXTRACTION,
) -> list[MemoryItem]:
    """The EPISODIC items of one turn: the turn itself, then what was derived from it.

    Every derived item is EPISODIC too; promotion moves the confident ones to the
    SEMANTIC/PROCEDURAL layers. Pure function of the event and the tuning (and the ids
    it is given).
    """
    user_text = event.user_text or ""
    assistant_text = event.assistant_text or ""
    if not user_text.strip() and not assistant_text.strip():
        return []
    speaker = (event.speaker or "").strip() or None
    found = TurnExtractor(event, code_aware=code_aware, tuning=tuning).run()

    derived: list[MemoryItem] = []
    seen: set[str] = set()
    for finding in found:
        if len(derived) >= tuning.max_derived_items:
            break
        item = _derived_item(event, finding, speaker, id_factory, tuning)
        if item.fingerprint in seen:
            continue
        seen.add(item.fingerprint)
        derived.append(item)

    items: list[MemoryItem] = []
    small_talk = is_small_talk(user_text[:MAX_SCAN_CHARS])
    if derived or not small_talk or (not user_text.strip() and assistant_text):
        items.extend(_turn_items(event, speaker, found, id_factory, tuning))
    items.extend(derived)
    return items


def _derived_item(
    event: TurnMemoryEvent,
    finding: Finding,
    speaker: str | None,
    id_factory: Callable[[], str],
    tuning: ExtractionTuning,
) -> MemoryItem:
    # A "sentence" without a stop can run for megabytes: no longer than a turn's piece.
    said = cut_text(finding.content or finding.sentence, tuning.turn_user_chars)
    body = f"{speaker}: {said}" if speaker and finding.origin == "user" else said
    label = _LABELS[finding.type]
    title_label = f"{label} ({speaker})" if speaker and finding.origin == "user" else label
    tags = list(finding.tags)
    if speaker and finding.origin == "user":
        tags.append(speaker_tag(speaker))
    tags.append(f"from:{finding.origin}")
    tags.extend(f"file:{_basename(path)}" for path in finding.paths)
    references = list(event.message_refs) + [f"file:{path}" for path in finding.paths]
    return MemoryItem(
        id=id_factory(),
        layer=Layer.EPISODIC,
        type=finding.type,
        title=f"{title_label}: {cut_text(one_line(said), TITLE_CHARS)}",
        content=body,
        scope=event.scope,
        created_at=event.at,
        updated_at=event.at,
        tags=list(dict.fromkeys(tags)),
        references=list(dict.fromkeys(references)),
        source=finding.origin,
        confidence=finding.confidence,
        salience=finding.salience,
        fingerprint=fingerprint(finding.type, body),
    )


def _turn_items(
    event: TurnMemoryEvent,
    speaker: str | None,
    found: list[Finding],
    id_factory: Callable[[], str],
    tuning: ExtractionTuning,
) -> list[MemoryItem]:
    """The turn's record: one item, or one per piece of a user message too long for one.

    Nothing the user said is cut: a message longer than `turn_user_chars` is split at
    paragraph, line or sentence ends, the first piece sharing its item with the reply and
    each later one an item of its own ("User (continued): ..."), with the same time, tags
    and message refs. Only the assistant's side is shortened (the reply is kept whole in
    the session and its log).
    """
    user_text = event.user_text.strip()
    assistant_text = event.assistant_text.strip()
    who = speaker or "User"
    pieces = split_long_text(user_text, tuning.turn_user_chars) if user_text else []
    parts: list[str] = []
    if pieces:
        parts.append(f"{who}: {pieces[0]}")
    if assistant_text:
        parts.append(f"Assistant: {cut_text(assistant_text, tuning.turn_assistant_chars)}")
    content = "\n".join(parts)

    lead_text = (user_text or assistant_text)[:MAX_SCAN_CHARS]
    first = split_sentences(split_code(lead_text)[0]) or [lead_text]
    title = cut_text(one_line(first[0]), TITLE_CHARS)
    if speaker and user_text:
        title = f"{speaker}: {title}"

    tags = [TURN_TAG]
    if speaker:
        tags.append(speaker_tag(speaker))
    tags.extend(event.tags)
    if "```" in user_text or "```" in assistant_text:
        tags.append("code")
    if user_text and any(is_question(s) for s in split_sentences(user_text[:MAX_SCAN_CHARS])):
        tags.append("question")
    tags.extend(_LABELS[f.type].lower() for f in found)
    paths = list(dict.fromkeys(path for f in found for path in f.paths))[:10]
    tags.extend(f"file:{_basename(path)}" for path in paths)
    tags = list(dict.fromkeys(tags))
    references = list(event.message_refs) + [f"file:{path}" for path in paths]
    salience = tuning.turn_with_findings_salience if found else tuning.turn_salience

    def item(text: str, item_title: str) -> MemoryItem:
        # At the turn confidence (below promotion) it stays episodic unless promoted by hand.
        return MemoryItem(
            id=id_factory(),
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title=item_title,
            content=text,
            scope=event.scope,
            created_at=event.at,
            updated_at=event.at,
            tags=list(tags),
            references=list(references),
            source="turn",
            confidence=tuning.turn_confidence,
            salience=salience,
        )

    items = [item(content, title)]
    for piece in pieces[1:]:
        piece_title = cut_text(one_line(piece), TITLE_CHARS)
        if speaker:
            piece_title = f"{speaker}: {piece_title}"
        items.append(item(f"{who} (continued): {piece}", piece_title))
    return items
