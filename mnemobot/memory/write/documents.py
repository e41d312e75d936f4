"""A document sent in a chat, as memory items: one per chunk, each found by its own words.

A lease, a manual or a page of notes is not something the user said: its sentences are
never read as the user's statements (no facts, no slot updates). Each chunk is an episode
of the day the file arrived, tagged with the file's name, so "what notice period does my
lease say?" finds the chunk that says it, and its neighbours come along as context.
"""

from __future__ import annotations

from collections.abc import Callable

from mnemobot.memory.store.items import DocumentText, ItemType, Layer, MemoryItem, speaker_tag
from mnemobot.memory.write.extraction.chunks import split_long_text
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning

DOCUMENT_TAG = "document"
# A document is remembered in pieces of at most this many characters (cut at paragraph,
# line or sentence ends), each found by its own words. Not measured; a turn item's size
# (`ExtractionTuning.turn_user_chars`), so a piece ranks like a message.
DOCUMENT_CHUNK_CHARS = 1_200


def document_items(
    document: DocumentText,
    *,
    scope: str,
    at: float,
    id_factory: Callable[[], str],
    extraction: ExtractionTuning = DEFAULT_EXTRACTION,
    speaker: str | None = None,
) -> list[MemoryItem]:
    """The chunks of `document` as episodic items (below promotion: a document is data)."""
    chunks = split_long_text(document.text, DOCUMENT_CHUNK_CHARS)
    tags = [DOCUMENT_TAG, f"file:{document.name}"]
    if speaker:
        # Who sent it ("the PDF Anna sent"); the text is not theirs, so no facts follow.
        tags.append(speaker_tag(speaker))
    references = [f"file:{document.name}"]
    if document.ref:
        references.insert(0, document.ref)
    items = []
    for number, chunk in enumerate(chunks, 1):
        label = (
            f"{document.name} (part {number} of {len(chunks)})"
            if len(chunks) > 1
            else document.name
        )
        items.append(
            MemoryItem(
                id=id_factory(),
                layer=Layer.EPISODIC,
                type=ItemType.TURN,
                title=label,
                content=f"{label}: {chunk}",
                scope=scope,
                created_at=at,
                updated_at=at,
                tags=list(tags),
                references=list(references),
                source=DOCUMENT_TAG,
                confidence=extraction.turn_confidence,
                salience=extraction.turn_salience,
            )
        )
    return items
