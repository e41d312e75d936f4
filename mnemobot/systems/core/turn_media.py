"""What a turn carries besides its text: images for the model, what memory keeps of
forwarded messages and documents, and the messages the text was made of
(`TurnMedia.parts`), so an edit of one changes only its own words.

A channel that understands photos, voice notes and files (Telegram) renders them into the
turn's text (a transcript, a description, a document's head) and hands the rest here:
the images themselves, for a model that accepts them, and the parts memory must not take
as the user's own words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mnemobot.memory.store.items import DocumentText, ForwardedText


@dataclass(frozen=True, slots=True)
class ImageInput:
    """An image for the model, as a `data:` URL (the OpenAI image part's form)."""

    data_url: str
    # The file's name in the chat's folder, for a note when the model cannot see it.
    name: str


@dataclass(frozen=True, slots=True)
class MessagePart:
    """One message of a turn, which may merge several (an album, a forwarded batch, lines
    typed in a row). `text` is what its sender typed (the text, or a file's caption), the
    only thing an edit of the message changes; `before` and `after` are what the bot read
    from the rest (a transcript, a photo's description, a document's head) and stay."""

    ref: str
    text: str = ""
    before: str = ""
    after: str = ""
    # Between the pieces: a caption goes on the line after a transcript.
    sep: str = " "
    # What memory keeps in place of `after`: a document's head is nobody's words.
    remembered_after: str | None = None
    # A forward's header ("[forwarded from Alice, 2026-11-20 14:03]"): the words are then
    # their author's, never the user's.
    header: str | None = None
    # How the bot came by the words (a transcript's "[voice 0:42]"): the model reads it in
    # front of them; memory keeps the words alone (the turn's items are tagged instead).
    label: str = ""

    def _joined(self, after: str) -> str:
        return self.sep.join(piece for piece in (self.before, self.text, after) if piece)

    def line(self) -> str:
        """The part as the turn's text shows it; "" when it says nothing."""
        body = self._joined(self.after)
        if self.label and body:
            body = f"{self.label} {body}"
        return f"{self.header} {body}" if self.header and body else body

    def words(self) -> str:
        """What its sender said, as memory keeps it (no header, no document head)."""
        return self._joined(self.after if self.remembered_after is None else self.remembered_after)

    def with_text(self, text: str) -> MessagePart:
        return replace(self, text=text)

    def to_json(self) -> dict[str, str]:
        data = {
            "ref": self.ref,
            "text": self.text,
            "before": self.before,
            "after": self.after,
            "sep": self.sep,
            "rememberedAfter": self.remembered_after,
            "header": self.header,
            "label": self.label,
        }
        # Only what differs from a plain typed message: the session file stays small.
        return {key: value for key, value in data.items() if value and value != " "}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MessagePart:
        return cls(
            ref=str(data["ref"]),
            text=str(data.get("text") or ""),
            before=str(data.get("before") or ""),
            after=str(data.get("after") or ""),
            sep=str(data.get("sep") or " "),
            remembered_after=_optional(data.get("rememberedAfter")),
            header=_optional(data.get("header")),
            label=str(data.get("label") or ""),
        )


def _optional(value: object) -> str | None:
    return str(value) if value else None


def turn_text(parts: Iterable[MessagePart]) -> str:
    """The turn's text: each message's line, in order, a blank line between."""
    return "\n\n".join(line for part in parts if (line := part.line()).strip())


def own_words(parts: Iterable[MessagePart]) -> str:
    """What memory keeps as the user's own words: all but forwards, without documents' heads."""
    return "\n\n".join(
        words for part in parts if part.header is None and (words := part.words()).strip()
    )


def parts_to_keep(parts: Sequence[MessagePart]) -> list[dict[str, str]] | None:
    """The parts a session message keeps for later edits; None when its text says it all
    (one typed message: an edit replaces the whole text)."""
    if not parts or (len(parts) == 1 and parts[0].line() == parts[0].text):
        return None
    return [part.to_json() for part in parts]


def kept_parts(value: object) -> list[MessagePart]:
    """The parts a session message kept (`parts_to_keep`); [] when none or unreadable."""
    if not isinstance(value, list):
        return []
    try:
        return [MessagePart.from_json(item) for item in value if isinstance(item, Mapping)]
    except KeyError:
        return []


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
    # The messages the turn's text was made of, in order (empty: the text is one message).
    parts: tuple[MessagePart, ...] = ()


NO_MEDIA = TurnMedia()
