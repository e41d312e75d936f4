"""What a turn carries besides its text: images for the model, and what memory keeps of
forwarded messages and documents (`TurnContext.media`).

A channel that understands photos, voice notes and files (Telegram) renders them into the
turn's text (a transcript, a description, a document's head) and hands the rest here:
the images themselves, for a model that accepts them, and the parts memory must not take
as the user's own words.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemobot.memory.items import DocumentText, ForwardedText


@dataclass(frozen=True, slots=True)
class ImageInput:
    """An image for the model, as a `data:` URL (the OpenAI image part's form)."""

    data_url: str
    # The file's name in the chat's folder, for a note when the model cannot see it.
    name: str


@dataclass(frozen=True, slots=True)
class TurnMedia:
    images: tuple[ImageInput, ...] = ()
    # What memory keeps as the user's own words, when the turn's text holds more (the
    # forwarded messages and documents below): None means the turn's text.
    own_text: str | None = None
    forwarded: tuple[ForwardedText, ...] = ()
    documents: tuple[DocumentText, ...] = ()
    # Tags for the turn's memory items ("voice", "photo", "document", "forwarded").
    tags: tuple[str, ...] = ()


NO_MEDIA = TurnMedia()
