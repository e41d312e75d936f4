"""A Telegram job's messages read for its turn: files fetched, kept and made into text.

Runs when the chat's turn starts (inside the typing indicator), never where updates are
read. Each message of the job (one, or a batch: forwards, an album) becomes lines of the
turn's text, in order:

- typed text and captions as they are;
- a voice note, audio file or video note: its transcript, marked `[voice 0:42]` for the
  model (memory keeps the words, the turn's items tagged "voice");
- a photo: `[photo received/photo-12.jpg: <one line the model wrote about it>]`, and the
  image itself for a model that takes images;
- a document: its name and the start of its text; the whole text is saved beside it for
  the files tool, and memory keeps it in chunks;
- a forward: `[forwarded from Alice, 2026-11-20 14:03]` and what it carried, read as
  above (its text, a transcript, a photo's description, a sticker), all remembered as
  Alice's words at her date, never the user's;
- a sticker, location, poll...: a short line (`inbound.rendering_of`).

Every file is kept in the chat's files folder (`files/<scope>/received/`, named by
`received_files`), also when it could not be read, so sending it again (or reading it with
the files tool) works; what failed gets one line for the user. `/retry` reads the chat's
last such message again, from the kept file (fetched again when it could not be fetched
at all), as a turn of its own; the message waits for it in the chat's session
(`retry_unread`), so a restart keeps it.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from telegram import Bot
from telegram.error import TelegramError

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.counts import counted
from mnemobot.bot.channels.base import ChannelHost, PreparedTurn
from mnemobot.bot.channels.lanes import LaneJob, MessageJob
from mnemobot.bot.channels.telegram.inbound import (
    SPOKEN_KINDS,
    FileRef,
    Inbound,
    clock_text,
)
from mnemobot.bot.channels.telegram.received_files import (
    RECEIVED_FOLDER,
    kept_file,
    received_file_name,
)
from mnemobot.bot.channels.telegram.retry_unread import RETRY, RetryRequest, UnreadNotes
from mnemobot.bot.channels.telegram.retry_unread import retry_job as retry_job  # for channel.py
from mnemobot.bot.channels.telegram.spoken_lines import (
    heard_note,
    no_words_line,
    undecodable_line,
)
from mnemobot.bot.i18n import N_, Words, words_for
from mnemobot.bot.media.document_text import UnreadableDocument, is_readable
from mnemobot.bot.media.transcription import TranscriptionError
from mnemobot.bot.tools.clock_tool import chat_zone_name
from mnemobot.bot.tools.files_tool import SHARED_FOLDER, shared_received_folder
from mnemobot.bot.turn.commands import NOTHING_TO_RETRY
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.zones import local_time
from mnemobot.memory.store.items import DocumentText, ForwardedText
from mnemobot.memory.store.scope_paths import validate_scope_key
from mnemobot.systems.core.turn_media import (
    ImageInput,
    MessagePart,
    TurnMedia,
    own_words,
    turn_text,
)

log = logging.getLogger(__name__)

# In the model's lines as they are; the user's lines translate them (`_Turn.kind`).
KIND_NAMES = {
    "voice": N_("voice note"),
    "audio": N_("audio file"),
    "video_note": N_("video note"),
    "photo": N_("photo"),
    "document": N_("file"),
    "video": N_("video"),
}
# An image file larger than this is kept but not sent to the model (sent inline, base64
# makes it a third larger). Not measured; twice a large phone photo.
MAX_IMAGE_BYTES = 10_000_000
# The start of a document's text the model gets with the message; it reads the rest with
# the files tool. Not measured; about 1,000 tokens, enough to say what the file is.
DOCUMENT_HEAD_CHARS = 4_000


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def when_text(epoch: float | None, zone: str | None) -> str:
    """A forward's date as the chat reads it (`zone`: an IANA name, None: the machine's)."""
    if epoch is None:
        return ""
    return local_time(epoch, zone).strftime("%Y-%m-%d %H:%M")


@dataclass(slots=True)
class _Turn:
    """What the job's messages add up to, built message by message; `words`: the
    reader's, for the lines the bot itself says; `sender_language`: their Telegram
    `language_code`, which `words` may have no catalog for."""

    words: Words
    sender_language: str | None = None
    parts: list[MessagePart] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    reply_notes: list[str] = field(default_factory=list)
    images: list[ImageInput] = field(default_factory=list)
    forwarded: list[ForwardedText] = field(default_factory=list)
    documents: list[DocumentText] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    # Messages whose file could not be fetched or heard: for /retry.
    unread: list[Inbound] = field(default_factory=list)
    # Kinds of file this turn did read (a voice note sent again after a failure).
    read_kinds: set[str] = field(default_factory=set)
    # Lines of files nobody could read, sent without a caption (by their part's index):
    # alone, the notices say all there is and no turn is made; beside other messages,
    # the model is told of them, or it would deny a file the user just sent.
    quiet: dict[int, str] = field(default_factory=dict)

    def tag(self, tag: str) -> None:
        if tag not in self.tags:
            self.tags.append(tag)

    def notice(self, message: str, /, **values: object) -> None:
        """A line for the user in their language (`message` marked with N_)."""
        self.notices.append(self.words.gettext(message, **values))

    def kind(self, kind: str) -> str:
        """A kind's name in the user's lines ("your voice note": the translations carry
        the possessive where their grammar needs it with the noun)."""
        return self.words.gettext(kind)


class TelegramMediaTurns:
    def __init__(self, bot: Bot, host: ChannelHost) -> None:
        self.bot = bot
        self.host = host

    def folder(self, job: LaneJob, config: RuntimeConfig) -> Path:
        if config.files.shared:
            return self.host.paths.files / SHARED_FOLDER
        scope = self.host.assistant.scope_for(job.chat, config)
        return self.host.paths.files / validate_scope_key(scope)

    def received_folder(self, job: LaneJob, config: RuntimeConfig) -> str:
        """Where in `folder` the chat's received files go: `received/`, or in a folder
        every chat shares the chat's own (`shared_received_folder`)."""
        if not config.files.shared:
            return RECEIVED_FOLDER
        return shared_received_folder(self.host.assistant.scope_for(job.chat, config))

    async def prepare(self, job: MessageJob) -> PreparedTurn:
        parts = [part for part in job.parts if isinstance(part, (Inbound, RetryRequest))]
        if not parts:
            return PreparedTurn(job.text)
        config = self.host.runtime.current()
        if any(isinstance(part, RetryRequest) or part.file is not None for part in parts):
            self.host.media.prewarm(config)  # starts while the file downloads
        # Dates are shown in the chat's own zone when it set one, as its turns read the time.
        zone = chat_zone_name(self.host.assistant.session(job.chat).metadata, config)
        turn = _Turn(words_for(job.chat.language), job.chat.language)
        unread = UnreadNotes(self.host.assistant, job.chat)
        for part in parts:
            inbound = await unread.waiting() if part is RETRY else part
            if isinstance(inbound, Inbound):
                await self._read(inbound, job, config, zone, turn)
            else:
                turn.notice(NOTHING_TO_RETRY)
        await unread.settle(turn.unread[-1] if turn.unread else None, turn.read_kinds)
        if turn_text(turn.parts).strip():
            for index, line in turn.quiet.items():
                turn.parts[index] = replace(turn.parts[index], before=line)
        text = turn_text(turn.parts)
        own = own_words(turn.parts)
        return PreparedTurn(
            text=text,
            media=TurnMedia(
                images=tuple(turn.images),
                own_text=None if own == text else own,
                forwarded=tuple(turn.forwarded),
                documents=tuple(turn.documents),
                tags=tuple(turn.tags),
                parts=tuple(turn.parts),
            ),
            notices=tuple(turn.notices),
            reply_notes=tuple(turn.reply_notes),
        )

    async def _read(
        self, inbound: Inbound, job: LaneJob, config: RuntimeConfig, zone: str | None, turn: _Turn
    ) -> None:
        ref = f"tg:{inbound.message_id}"
        if inbound.file is not None:
            unread = len(turn.unread)
            try:
                part = await self._file_part(inbound, inbound.file, job, config, turn)
            except Exception as exc:
                # Whatever reading one file did, the turn's other messages are answered.
                kind = KIND_NAMES.get(inbound.file.kind, "file")
                log.error("could not read a %s in %s: %s", kind, job.chat.key, exc)
                turn.notice(N_("I kept your {kind} but could not read it."), kind=turn.kind(kind))
                part = _unread(f"[{kind}, unreadable]", inbound.text.strip(), turn)
            if len(turn.unread) == unread:
                turn.read_kinds.add(inbound.file.kind)
        else:
            part = MessagePart(ref, inbound.text, before=inbound.rendering or "")
        part = replace(part, ref=ref)
        forward = inbound.forward
        if forward is not None:
            said = when_text(forward.said_at, zone)
            header = f"[forwarded from {forward.author}{', ' + said if said else ''}]"
            part = replace(part, header=header)
            turn.tag("forwarded")
            # All of it is the author's: a transcript, a photo's description, a sticker.
            words = part.words()
            if words.strip():
                turn.forwarded.append(ForwardedText(forward.author, words, forward.said_at, ref))
        turn.parts.append(part)

    async def _file_part(
        self, inbound: Inbound, file: FileRef, job: LaneJob, config: RuntimeConfig, turn: _Turn
    ) -> MessagePart:
        """The part of a message with a file, its caption as `text` (the ref is the caller's)."""
        kind = KIND_NAMES.get(file.kind, "file")
        caption = inbound.text.strip()
        limit = config.media.max_download_bytes
        if file.size is not None and file.size > limit:
            line = turn.words.gettext(
                N_(
                    "Your {kind} is {size}; Telegram lets bots download files up to {limit}, "
                    "so I could not fetch it."
                ),
                kind=turn.kind(kind),
                size=megabytes(file.size),
                limit=megabytes(limit),
            )
            if caption:
                # One line: Chinese runs its sentences on without a space.
                space = "" if turn.words.language == "zh" else " "
                line += space + turn.words.gettext(N_("I read its caption."))
            turn.notices.append(line)
            return _unread(f"[{kind}, {megabytes(file.size)}, too large to fetch]", caption, turn)
        name = received_file_name(inbound, file)
        shown = f"{self.received_folder(job, config)}/{name}"
        folder = self.folder(job, config)
        data = await kept_file(folder, inbound.kept)
        if data is None:
            data = await self._download(file, kind, turn)
            if data is None:
                turn.unread.append(inbound)
                return _unread(f"[{kind}, could not be fetched]", caption, turn)
            try:
                await asyncio.to_thread(write_atomic, folder / shown, data)
                inbound = replace(inbound, kept=shown)
            except OSError as exc:
                log.warning("could not keep a received file in %s: %s", job.chat.key, exc)
                shown = f"{name} (not kept: the bot's storage is failing)"
        if file.kind in SPOKEN_KINDS:
            # The length shown is the recording's own, never only what the message claims;
            # it also sets how long the note may take to transcribe.
            measuring = asyncio.ensure_future(self.host.media.audio_seconds(data, config))
            try:
                heard = await self._spoken(
                    data, name, shown, file, measuring, caption, config, turn
                )
                if heard is None:
                    turn.unread.append(inbound)
                    length = _length(await measuring)
                    return _unread(
                        f"[{kind}{length}, not transcribed, kept as {shown}]", caption, turn
                    )
            finally:
                measuring.cancel()
            return heard
        if file.kind == "photo" or (file.mime_type or "").startswith("image/"):
            return await self._image(data, shown, file, caption, config, turn)
        if file.kind == "document":
            return await self._document(data, folder, shown, file, caption, config, turn)
        seconds = await self.host.media.audio_seconds(data, config)
        return MessagePart("", caption, before=f"[{kind}{_length(seconds)} kept as {shown}]")

    async def _download(self, file: FileRef, kind: str, turn: _Turn) -> bytes | None:
        try:
            remote = await self.bot.get_file(file.file_id)
            return bytes(await remote.download_as_bytearray())
        except (TelegramError, OSError) as exc:
            # Logged (the log filter redacts the token a download URL holds), never shown.
            log.warning("could not download a %s: %s: %s", kind, type(exc).__name__, exc)
            turn.notice(
                N_(
                    "I could not fetch your {kind} from Telegram just now; /retry fetches it again."
                ),
                kind=turn.kind(kind),
            )
            return None

    async def _spoken(
        self,
        data: bytes,
        name: str,
        shown: str,
        file: FileRef,
        measuring: asyncio.Future[float | None],
        caption: str,
        config: RuntimeConfig,
        turn: _Turn,
    ) -> MessagePart | None:
        """What was heard; None when the note could not be transcribed (said why).
        `measuring`: the recording's length from its packets, None if it cannot be known."""
        kind = KIND_NAMES[file.kind]
        # Its length first: a long note is given time in proportion to it.
        measured = await measuring
        try:
            transcript = await self.host.media.transcribe(data, name, config, measured)
        except TranscriptionError as exc:
            if exc.permanent:
                # The recording itself is bad: reading the kept file again would only fail
                # again, and the decoder's words (its error's name) say nothing to the sender.
                log.info("a %s could not be decoded (kept as %s): %s", kind, shown, exc)
                turn.notices.append(undecodable_line(turn.words, kind))
                return None
            turn.notice(
                N_(
                    "I could not transcribe your {kind} ({reason}). It is kept as {shown}; "
                    "/retry reads it again, or type it."
                ),
                kind=turn.kind(kind),
                reason=exc.said(turn.words),
                shown=shown,
            )
            return None
        turn.tag("voice")
        # Else the length the speech server (or the local model) decoded.
        seconds = measured if measured is not None else transcript.duration
        length = _length(seconds)
        english_only = transcript.english_only
        if not transcript.text.split():
            turn.notices.append(
                no_words_line(turn.words, kind, length, shown, english_only=english_only)
            )
            return MessagePart("", caption)
        note = heard_note(
            turn.words,
            kind,
            length,
            seconds,
            transcript.text,
            english_only=english_only,
            sender_language=turn.sender_language,
            log_prob=transcript.log_prob,
        )
        if note is not None:
            turn.reply_notes.append(note)
        mark = "voice" if file.kind == "voice" else kind
        # The caption on a line of its own after what was said.
        return MessagePart("", caption, before=transcript.text, sep="\n", label=f"[{mark}{length}]")

    async def _image(
        self,
        data: bytes,
        shown: str,
        file: FileRef,
        caption: str,
        config: RuntimeConfig,
        turn: _Turn,
    ) -> MessagePart:
        turn.tag("photo")
        if len(data) > MAX_IMAGE_BYTES or config.llm.vision == "off":
            return MessagePart(
                "", caption, before=f"[photo kept as {shown}; the model cannot see it]"
            )
        mime = file.mime_type if (file.mime_type or "").startswith("image/") else "image/jpeg"
        url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
        turn.images.append(ImageInput(data_url=url, name=shown))
        description = await self.host.media.describe_image(url, caption, config)
        about = f": {description}" if description else ""
        return MessagePart("", caption, before=f"[photo {shown}{about}]")

    async def _document(
        self,
        data: bytes,
        folder: Path,
        shown: str,
        file: FileRef,
        caption: str,
        config: RuntimeConfig,
        turn: _Turn,
    ) -> MessagePart:
        original = file.name or PurePath(shown).name
        turn.tag("document")
        if not is_readable(original, file.mime_type):
            turn.notice(
                N_(
                    "I kept {name} as {shown}, but I can only read text files and PDFs, so I "
                    "did not read it."
                ),
                name=original,
                shown=shown,
            )
            return _unread(f"[file {shown} kept, not read]", caption, turn)
        kept = folder / shown if shown.startswith(f"{RECEIVED_FOLDER}/") else None
        try:
            extract = await self.host.media.read_document(
                data, kept, original, file.mime_type, config
            )
        except UnreadableDocument as exc:
            turn.notice(
                N_("I kept {name} as {shown}, but could not read it: {reason}."),
                name=original,
                shown=shown,
                reason=exc.said(turn.words),
            )
            return _unread(f"[file {shown} kept, unreadable]", caption, turn)
        text_file = f"{shown}.txt"
        try:
            await asyncio.to_thread(write_atomic, folder / text_file, extract.text.encode())
        except OSError as exc:
            log.warning("could not keep the text of %s: %s", original, exc)
            text_file = ""
        if extract.read_chars is not None:
            turn.notice(
                N_(
                    "{name} is long: I read its first {chars} characters; the whole file is "
                    "kept as {shown}."
                ),
                name=original,
                chars=turn.words.number(extract.read_chars),
                shown=shown,
            )
        elif extract.read_pages is not None and extract.pages is not None:
            turn.notice(
                N_(
                    "{name} is long: I read its first {read} of {total} pages; the whole file "
                    "is kept as {shown}."
                ),
                name=original,
                read=turn.words.number(extract.read_pages),
                total=turn.words.number(extract.pages),
                shown=shown,
            )
        head = extract.text[:DOCUMENT_HEAD_CHARS]
        pages = f", {counted(extract.pages, 'page')}" if extract.pages else ""
        rest = ""
        if len(extract.text) > len(head):
            where = f" in {text_file}" if text_file else ""
            rest = f"; the start follows, read the rest{where} with the files tool"
        header = f"[document {shown}{pages}, {len(extract.text):,} characters{rest}]"
        turn.documents.append(DocumentText(original, extract.text, f"file:{shown}"))
        # The caption leads; memory keeps the document's name, its text goes in as chunks.
        return MessagePart(
            "",
            caption,
            after=f"{header}\n{head}",
            sep="\n",
            remembered_after=f"[document {original}]",
        )


def _length(seconds: float | None) -> str:
    """0:42 (with its space), or nothing when the length is unknown."""
    return f" {clock_text(seconds)}" if seconds is not None else ""


def _unread(line: str, caption: str, turn: _Turn) -> MessagePart:
    """A file that could not be read: its line with a caption to answer; without one, the
    line is kept aside (`_Turn.quiet`)."""
    if not caption:
        turn.quiet[len(turn.parts)] = line
    return MessagePart("", caption, before=line if caption else "")
