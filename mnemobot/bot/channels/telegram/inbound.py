"""What a Telegram message carries, read from the update alone (pure, no downloads).

A message is typed text, a caption with a file (a voice note, a photo, a document...), or
something with no file to fetch (a sticker, a location, a poll) rendered as a short line
(`[sticker 😀]`, `[location 52.52, 13.40]`). A forward carries who said it and when. The
files themselves are fetched when the chat's turn starts (see `media_turn`), never in the
path that reads updates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from telegram import (
    Message,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
    PhotoSize,
)

from mnemobot.bot.channels.telegram.split import utf16_len

# Kinds of file whose sound becomes the turn's text.
SPOKEN_KINDS = frozenset({"voice", "audio", "video_note"})
# Of the sizes Telegram offers for a photo, the largest whose longer side is at most this
# many pixels is fetched: bigger costs more image tokens for little gain. Not measured;
# the size Telegram's own apps send (1280 px).
PHOTO_MAX_SIDE = 1280

# Telegram's apps cut a pasted text longer than one message (4096 UTF-16 units) into
# several messages sent at once. A piece this close to the limit is most likely followed
# by the rest, which must be the same turn: answering the first half alone wastes a model
# call and a reply on half a question.
CUT_PIECE_UTF16 = 3800


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file of the message, as the Bot API describes it (fetched later with getFile)."""

    kind: str  # voice, audio, video_note, photo, document, video, animation
    file_id: str
    size: int | None = None
    name: str | None = None
    mime_type: str | None = None
    duration: float | None = None


@dataclass(frozen=True, slots=True)
class Forward:
    author: str
    # Epoch seconds of the original message.
    said_at: float | None


@dataclass(frozen=True, slots=True)
class Inbound:
    """One Telegram message, as the turn will read it."""

    message_id: int
    # What the user typed: the text, or the caption of a file ("" when none).
    text: str = ""
    # A short line for what has no file to fetch (sticker, location, poll...).
    rendering: str | None = None
    file: FileRef | None = None
    forward: Forward | None = None
    media_group_id: str | None = None
    # The file as kept in the chat's folder once fetched (read from there by /retry).
    kept: str | None = None

    @property
    def says_something(self) -> bool:
        return bool(self.text.strip() or self.rendering or self.file)

    @property
    def comes_with_more(self) -> bool:
        """Whether more messages of one batch are likely on their way: a forward (batches
        are forwarded at once), a photo of an album, or a piece of a long paste."""
        return (
            self.forward is not None
            or self.media_group_id is not None
            or utf16_len(self.text) >= CUT_PIECE_UTF16
        )


def inbound_to_json(inbound: Inbound) -> dict[str, Any]:
    """The message as kept in a session (the note /retry reads again after a restart)."""
    return asdict(inbound)


def inbound_from_json(data: dict[str, Any]) -> Inbound:
    file = data.get("file")
    forward = data.get("forward")
    return Inbound(
        message_id=int(data["message_id"]),
        text=str(data.get("text") or ""),
        rendering=data.get("rendering"),
        file=FileRef(**file) if isinstance(file, dict) else None,
        forward=Forward(**forward) if isinstance(forward, dict) else None,
        media_group_id=data.get("media_group_id"),
        kept=data.get("kept"),
    )


def clock_text(seconds: float | None) -> str:
    """0:42, 12:05, 1:02:03."""
    total = max(0, round(seconds or 0))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def _seconds(media: object) -> float | None:
    """A voice note's (audio's, video's) duration in seconds. Read from PTB's stored value:
    its `duration` property warns that it will become a timedelta one day."""
    value = getattr(media, "_duration", None)
    if value is None:
        return None
    total = getattr(value, "total_seconds", None)
    return float(total()) if callable(total) else float(value)


def photo_size_for(sizes: tuple[PhotoSize, ...], max_side: int) -> PhotoSize:
    """The largest size whose longer side is at most `max_side` (else the smallest)."""
    fitting = [s for s in sizes if max(s.width, s.height) <= max_side]
    if fitting:
        return max(fitting, key=lambda s: s.width * s.height)
    return min(sizes, key=lambda s: s.width * s.height)


def forward_of(message: Message) -> Forward | None:
    origin = message.forward_origin
    if origin is None:
        return None
    author = "someone"
    if isinstance(origin, MessageOriginUser):
        user = origin.sender_user
        author = " ".join(p for p in (user.first_name, user.last_name) if p) or (
            user.username or "someone"
        )
    elif isinstance(origin, MessageOriginHiddenUser):
        author = origin.sender_user_name
    elif isinstance(origin, MessageOriginChat):
        author = origin.author_signature or origin.sender_chat.title or "a group"
    elif isinstance(origin, MessageOriginChannel):
        title = origin.chat.title or "a channel"
        author = f"{origin.author_signature} ({title})" if origin.author_signature else title
    said_at = origin.date.timestamp() if origin.date is not None else None
    return Forward(author=author, said_at=said_at)


def file_of(message: Message, photo_max_side: int = PHOTO_MAX_SIDE) -> FileRef | None:
    if message.voice is not None:
        v = message.voice
        return FileRef("voice", v.file_id, v.file_size, None, v.mime_type, _seconds(v))
    if message.audio is not None:
        a = message.audio
        return FileRef("audio", a.file_id, a.file_size, a.file_name, a.mime_type, _seconds(a))
    if message.video_note is not None:
        n = message.video_note
        return FileRef("video_note", n.file_id, n.file_size, None, "video/mp4", _seconds(n))
    if message.photo:
        size = photo_size_for(tuple(message.photo), photo_max_side)
        return FileRef("photo", size.file_id, size.file_size, None, "image/jpeg")
    if message.document is not None:
        d = message.document
        return FileRef("document", d.file_id, d.file_size, d.file_name, d.mime_type)
    if message.video is not None:
        clip = message.video
        return FileRef(
            "video", clip.file_id, clip.file_size, clip.file_name, clip.mime_type, _seconds(clip)
        )
    return None


def rendering_of(message: Message) -> str | None:
    """A short text for what has no file worth fetching; None when the message has a file
    or only text."""
    if message.sticker is not None:
        emoji = message.sticker.emoji or ""
        return f"[sticker {emoji}]".replace(" ]", "]")
    if message.venue is not None:
        v = message.venue
        return (
            f"[venue {v.title}, {v.address} "
            f"({v.location.latitude:.5f}, {v.location.longitude:.5f})]"
        )
    if message.location is not None:
        loc = message.location
        live = " (live)" if loc.live_period else ""
        return f"[location {loc.latitude:.5f}, {loc.longitude:.5f}{live}]"
    if message.contact is not None:
        c = message.contact
        name = " ".join(p for p in (c.first_name, c.last_name) if p)
        return f"[contact {name}, {c.phone_number}]"
    if message.poll is not None:
        p = message.poll
        options = " / ".join(option.text for option in p.options)
        return f'[poll "{p.question}": {options}]'
    if message.dice is not None:
        return f"[dice {message.dice.emoji} {message.dice.value}]"
    if message.animation is not None:
        return "[GIF]"
    if message.game is not None:
        return f"[game {message.game.title}]"
    if message.story is not None:
        return "[a story]"
    if message.checklist is not None:
        tasks = "; ".join(task.text for task in message.checklist.tasks)
        return f"[checklist {message.checklist.title}: {tasks}]"
    return None


def inbound_for(
    message: Message, text: str | None, *, photo_max_side: int = PHOTO_MAX_SIDE
) -> Inbound:
    """`text`: the message's text or caption as the channel read it (bot mention removed)."""
    file = None if message.animation is not None else file_of(message, photo_max_side)
    rendering = rendering_of(message) if file is None else None
    if file is None and rendering is None and not (text or "").strip():
        attachment = message.effective_attachment
        if attachment is not None:
            rendering = f"[{type(attachment).__name__.lower()}]"
    return Inbound(
        message_id=message.message_id,
        text=text or "",
        rendering=rendering,
        file=file,
        forward=forward_of(message),
        media_group_id=message.media_group_id,
    )
