"""Reading a Telegram Desktop chat export (`result.json`), checked whole before use.

The export is `{"name", "type", "id", "messages": [...]}`; a message is
`{"id", "type": "message", "date": "YYYY-MM-DDTHH:MM:SS", "date_unixtime", "from",
"from_id", "text": str | [str | {"type", "text"}], ...}`, and `"type": "service"` marks
joins, pins and the like (skipped). A forward carries `"forwarded_from"`: its original
author's name (null when Telegram Desktop had none, e.g. a deleted account); `from` is then
whoever passed it on, and the words are the original author's, never theirs.
`read_export` checks every message before returning, so an import never starts on a file
it cannot finish; a problem is one line naming the file, where in it, and what is wrong
("result.json: messages[17].date: not a date"). It reads the file as a stream
(`export_stream`), holding one message at a time and the ids seen; `ChatExport.messages()`
reads it again for the import, one message at a time (a pipe, which can be read once, is
kept in memory up to the budget).

The file is UTF-8, as Telegram Desktop writes it; a byte order mark in front (an editor
such as Windows Notepad saves one) is skipped. A file is hostile input like any other: at
most `MAX_EXPORT_BYTES` are read (a larger file, or an endless one like a pipe or
/dev/zero, is refused after that much), nesting stops at 1024 levels, every field
has its type checked, and a date must be one a message can have: after 1970 and not in the
future (the memory store files an episode under its day; a date past year 9999 cannot be
filed at all, and one in the future would stay the newest thing said forever). One
message holds at most `export_stream.MAX_MESSAGE_VALUES` values, and a file changed while
it is read (replaced, or rewritten in place) stops the read with one line saying so.

The module is one concept past 400 lines: the file's checks, its budget and its two reads
share the reader's state (what was read, the file's identity), and split apart each part
would reach into the others.
"""

from __future__ import annotations

import io
import math
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from stat import S_ISREG
from typing import Any, BinaryIO, Protocol

from mnemobot.bot.channels.telegram.export_senders import ExportSenders
from mnemobot.bot.channels.telegram.export_stream import (
    MAX_DEPTH,
    MAX_MESSAGE_VALUES,
    NoMessages,
    NotAChat,
    NotJSON,
    NotUTF8,
    TooDeep,
    TooLarge,
    chat_messages,
)

# What one import reads. Parsed whole (before the stream), an export took 7-9 times its
# size in memory (115 MB, 200k messages: 820 MB peak RSS); read as a stream it holds one
# message and the ids seen (about 85 bytes a message), and the budget bounds the time of a
# read (two of 53 MB, 300k messages: 2-3 s) and a pipe's bytes. A longer chat is exported
# in parts (Telegram Desktop asks for a date range) and each part imported: re-imports
# skip what is there.
MAX_EXPORT_BYTES = 64 * 1024 * 1024
# A message "in the future" by less than this is a clock that runs a little ahead.
FUTURE_SLACK_SECONDS = 86_400
# A Telegram name is at most 64 + 64 characters; a chat's title at most 128.
MAX_NAME_CHARS = 256
# Telegram numbers a supergroup's or a channel's messages once, for everyone: an exported
# id there is the id the live bot saw, and the import gives it the same ref (`tg:<id>`), so
# what the bot already remembers is not imported twice. A private chat's and a basic
# group's numbers are each account's own (the exporting person's message 42 is not the
# bot's message 42): their messages get refs of their own, which no live message shares;
# otherwise an import after months of live use skipped messages as "already there", and an
# edit of the bot's message 42 revised what was imported of another message.
SHARED_NUMBERING_TYPES = frozenset(
    {"private_supergroup", "public_supergroup", "private_channel", "public_channel"}
)
LIVE_REF_PREFIX = "tg:"
EXPORT_REF_PREFIX = "tg-export:"
# Telegram's limit for a message's text (and a Premium caption) is 4096 UTF-16 units; twice
# that leaves room for other tools' exports. The write path is linear in a message's length
# (a 1.2 MB message took 17 s to import): one long "message" must not take an hour.
MAX_TEXT_CHARS = 8192
# Names of authors an export keeps to tell `--assistant` NAME is one of them (a group of
# more is rare; a hostile file could name a new author in every message).
MAX_AUTHORS_KEPT = 10_000
# Who a forward's words are when the export names nobody: as the live bot says it.
UNNAMED_FORWARD_AUTHOR = "someone"
_UTF8_BOM = b"\xef\xbb\xbf"


class ExportError(ValueError):
    """A file that is not a usable chat export; the message says where and why."""


@dataclass(frozen=True, slots=True)
class ExportedMessage:
    id: int
    at: float
    author: str
    text: str
    # Whether the live bot knows the message by the same number (see
    # SHARED_NUMBERING_TYPES).
    shared_numbering: bool = False
    # A forward's original author: `text` is their words, which `author` passed on.
    forwarded_from: str | None = None

    @property
    def ref(self) -> str:
        """The message's ref: the one the live bot gives it (`tg:<id>`) where Telegram
        numbers messages for everyone, else one of the import's own (`tg-export:<id>`)."""
        return f"{LIVE_REF_PREFIX if self.shared_numbering else EXPORT_REF_PREFIX}{self.id}"

    @property
    def earlier_ref(self) -> str:
        """The ref imports before refs of their own gave a message (`tg:<id>`)."""
        return f"{LIVE_REF_PREFIX}{self.id}"


@dataclass(frozen=True, slots=True)
class ChatExport:
    """An export checked whole (`read_export`); `messages()` reads its messages again,
    one at a time."""

    name: str
    # Messages with text; service messages and media without a caption are left out.
    count: int
    skipped: int
    # Who wrote them: every name, or the first MAX_AUTHORS_KEPT when `all_authors` is False.
    authors: frozenset[str]
    all_authors: bool
    _reader: _Reader
    # In a chat with a bot (Telegram Desktop's `bot_chat`), the name its messages carry
    # (`ExportSenders.bot`), and the names they carry in the file.
    bot: str | None = None
    bot_names: frozenset[str] = frozenset()

    def messages(self) -> Iterator[ExportedMessage]:
        """The messages with text, in the file's order; an ExportError if the file
        changed since it was checked."""
        return (message for message in self._reader.messages() if message is not None)


def read_export(path: Path, tz: tzinfo, *, now: float | None = None) -> ChatExport:
    """The export at `path`, every message checked; `tz` reads a `date` that has no
    `date_unixtime` beside it (Telegram Desktop writes local time); `now` (default: the
    clock) bounds its dates. Holds one message at a time (and a pipe's bytes: it is read
    once)."""
    latest = (time.time() if now is None else now) + FUTURE_SLACK_SECONDS
    reader = _Reader(path, tz, latest)
    count = skipped = 0
    seen: set[int] = set()
    authors: set[str] = set()
    for index, message in enumerate(reader.messages()):
        if message is None:
            skipped += 1
            continue
        if message.id in seen:
            raise ExportError(f"{path.name}: messages[{index}].id: {message.id} appears twice")
        seen.add(message.id)
        count += 1
        if len(authors) < MAX_AUTHORS_KEPT:
            authors.add(message.author)
    name = reader.top.get("name")
    # Printed in the import's one line: a name, not a page.
    shown_name = name[:MAX_NAME_CHARS] if isinstance(name, str) and name.strip() else path.stem
    return ChatExport(
        shown_name,
        count,
        skipped,
        frozenset(authors),
        len(authors) < MAX_AUTHORS_KEPT,
        reader,
        reader.senders.bot(reader.top),
        reader.senders.bot_names,
    )


class _Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...


class _Reader:
    """Reads the export's messages, checked, from the file (or, for a pipe, the bytes
    read from it the first time)."""

    def __init__(self, path: Path, tz: tzinfo, latest: float) -> None:
        self.path, self.tz, self.latest = path, tz, latest
        self.top: dict[str, Any] = {}
        # A regular file's identity when first read; a pipe's bytes.
        self._identity: tuple[int, int, int] | None = None
        self._bytes: bytes | None = None
        self.senders = ExportSenders()

    def messages(self) -> Iterator[ExportedMessage | None]:
        """Each message of the file in order (None: one without text), checked; the file's
        faults as ExportErrors, and a file changed since it was first read as that: one
        rewritten in place mid-read reads as broken JSON (review)."""
        try:
            yield from self._read_messages()
        except ExportError:
            if self._changed():
                raise _changed_error(self.path.name) from None
            raise
        if self._changed():
            raise _changed_error(self.path.name)

    def _changed(self) -> bool:
        if self._identity is None:
            return False
        try:
            stat = os.stat(self.path)
        except OSError:
            return True
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns) != self._identity

    def _read_messages(self) -> Iterator[ExportedMessage | None]:
        where = self.path.name
        try:
            with self._opened() as source:
                chat_type = self.top.get("type")
                shared = isinstance(chat_type, str) and chat_type in SHARED_NUMBERING_TYPES
                found: dict[str, Any] = {}
                index = -1
                for index, record in enumerate(chat_messages(source, found)):
                    message = _message(
                        record, f"{where}: messages[{index}]", self.tz, self.latest, shared
                    )
                    if message is not None:
                        author = self.senders.author(record.get("from_id"), message.author)
                        if author != message.author:
                            message = replace(message, author=author)
                    yield message
                self.top = found
        except OSError as exc:
            raise ExportError(f"{self.path}: cannot read it ({exc.strerror or exc})") from None
        except NotUTF8:
            raise ExportError(
                f"{where}: not UTF-8 text (saved in another encoding); export the chat "
                "again from Telegram Desktop as JSON, or save the file as UTF-8"
            ) from None
        except TooLarge:
            raise ExportError(
                f"{where}: messages[{index + 1}]: more than {MAX_MESSAGE_VALUES:,} values, no "
                "chat message; export the chat again from Telegram Desktop"
            ) from None
        except TooDeep:
            raise ExportError(
                f"{where}: not a chat export (nested over {MAX_DEPTH} levels deep)"
            ) from None
        except NotJSON as exc:
            raise ExportError(f"{where}: not JSON ({exc}); export the chat as JSON") from None
        except NotAChat:
            raise ExportError(
                f"{where}: not a chat export (expected an object with 'messages')"
            ) from None
        except NoMessages:
            raise ExportError(
                f"{where}: no 'messages' list; export a single chat as JSON (result.json)"
            ) from None

    @contextmanager
    def _opened(self) -> Iterator[_Source]:
        """The file's bytes after a byte order mark, read up to MAX_EXPORT_BYTES."""
        if self._bytes is not None:
            yield _after_bom(io.BytesIO(self._bytes))
            return
        with self.path.open("rb") as file:
            stat = os.fstat(file.fileno())
            if not S_ISREG(stat.st_mode):
                # A pipe is read once: its bytes are kept for the second reading.
                self._bytes = _read_bounded(file, self.path.name)
                yield _after_bom(io.BytesIO(self._bytes))
                return
            if stat.st_size > MAX_EXPORT_BYTES:
                raise _too_big(self.path.name, stat.st_size)
            identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            if self._identity is not None and identity != self._identity:
                raise _changed_error(self.path.name)
            self._identity = identity
            yield _after_bom(_Bounded(file, self.path.name))


def _changed_error(name: str) -> ExportError:
    return ExportError(
        f"{name}: changed while it was imported; run the import again "
        "(what was imported stays, nothing is imported twice)"
    )


def _after_bom(source: _Source) -> _Source:
    """`source` past a UTF-8 byte order mark, if it starts with one."""
    if source.read(len(_UTF8_BOM)) != _UTF8_BOM:
        source.seek(0)
    return source


class _Bounded:
    """A file read up to MAX_EXPORT_BYTES (one that grows while it is read included)."""

    def __init__(self, file: BinaryIO, name: str) -> None:
        self._file, self._name, self._read = file, name, 0

    def seek(self, offset: int, whence: int = 0) -> int:
        self._read = self._file.seek(offset, whence)
        return self._read

    def read(self, size: int = -1) -> bytes:
        left = MAX_EXPORT_BYTES + 1 - self._read
        data = self._file.read(left if size < 0 else min(size, left))
        self._read += len(data)
        if self._read > MAX_EXPORT_BYTES:
            raise _too_big(self._name, None)
        return data


def _read_bounded(file: BinaryIO, name: str) -> bytes:
    """A pipe's bytes, read up to MAX_EXPORT_BYTES and one byte more to tell (how much
    more it held is not read to find out)."""
    data = file.read(MAX_EXPORT_BYTES + 1)
    if len(data) > MAX_EXPORT_BYTES:
        raise _too_big(name, None)
    return data


def _too_big(name: str, size: int | None) -> ExportError:
    shown = f"{size / 2**20:.0f} MB, " if size is not None else ""
    return ExportError(
        f"{name}: {shown}more than an import reads at once "
        f"({MAX_EXPORT_BYTES // 2**20} MB); export the chat in parts (Telegram Desktop: "
        "Export chat history, From and To dates) and import each"
    )


def _message(
    record: Any, at: str, tz: tzinfo, latest: float, shared_numbering: bool
) -> ExportedMessage | None:
    if not isinstance(record, dict):
        raise ExportError(f"{at}: not an object")
    kind = record.get("type")
    if not isinstance(kind, str):
        raise ExportError(f'{at}.type: missing (expected "message" or "service")')
    message_id = record.get("id")
    if not isinstance(message_id, int) or isinstance(message_id, bool):
        raise ExportError(f"{at}.id: not a whole number")
    when = _when(record, at, tz, latest)
    if kind != "message":
        return None
    text = _text(record.get("text", ""), f"{at}.text")
    author = record.get("from")
    if author is not None and not isinstance(author, str):
        raise ExportError(f"{at}.from: not a name")
    if author is not None and len(author) > MAX_NAME_CHARS:
        raise ExportError(f"{at}.from: {len(author):,} characters, not a name")
    if len(text) > MAX_TEXT_CHARS:
        raise ExportError(
            f"{at}.text: {len(text):,} characters, more than an imported message may hold "
            f"({MAX_TEXT_CHARS:,}); correct or remove the message"
        )
    origin = _forwarded_from(record, at)
    if not text.strip():
        return None  # a photo or sticker without a caption: nothing said to remember
    # A deleted account has no name; its id still tells its messages apart.
    name = author or str(record.get("from_id") or "Deleted Account")
    return ExportedMessage(message_id, when, name, text, shared_numbering, origin)


def _forwarded_from(record: dict[str, Any], at: str) -> str | None:
    """A forward's original author (None: not a forward)."""
    if "forwarded_from" not in record:
        return None
    origin = record["forwarded_from"]
    if origin is not None and not isinstance(origin, str):
        raise ExportError(f"{at}.forwarded_from: not a name")
    if origin is not None and len(origin) > MAX_NAME_CHARS:
        raise ExportError(f"{at}.forwarded_from: {len(origin):,} characters, not a name")
    return origin if origin and origin.strip() else UNNAMED_FORWARD_AUTHOR


def _when(record: dict[str, Any], at: str, tz: tzinfo, latest: float) -> float:
    date = record.get("date")
    if not isinstance(date, str):
        raise ExportError(f"{at}.date: missing")
    try:
        local = datetime.fromisoformat(date)
    except ValueError:
        raise ExportError(
            f"{at}.date: not a date ({date!r}; expected YYYY-MM-DDTHH:MM:SS)"
        ) from None
    unix = record.get("date_unixtime")
    if unix is None:
        field, written = "date", date
        try:
            when = (local if local.tzinfo else local.replace(tzinfo=tz)).timestamp()
        except (OverflowError, ValueError, OSError):
            # Year 1 or 9999 moved past the calendar's end by the time zone.
            when = -math.inf if local.year < 1970 else math.inf
    else:
        field, written = "date_unixtime", str(unix)
        if isinstance(unix, bool) or not isinstance(unix, int | str) or not _WHOLE.match(str(unix)):
            raise ExportError(f"{at}.date_unixtime: not a number ({unix!r})")
        digits = written.strip()
        if len(digits.lstrip("-")) > 15:
            # Millions of years away (and maybe more digits than int() reads: 4300).
            when = -math.inf if digits.startswith("-") else math.inf
        else:
            when = float(int(digits))
    if when < 0:
        raise ExportError(f"{at}.{field}: {_shown(when, written)} is before 1970; {_FIX_DATE}")
    if when > latest:
        raise ExportError(f"{at}.{field}: {_shown(when, written)} is in the future; {_FIX_DATE}")
    return when


_WHOLE = re.compile(r"\s*-?[0-9]+\s*\Z", re.ASCII)
_FIX_DATE = "no message was sent then: correct the date or remove the message"


def _shown(when: float, written: str) -> str:
    """The time in UTC as a reader knows it, else as the file writes it."""
    try:
        return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, ValueError, OSError):
        return written[:40] + ("…" if len(written) > 40 else "")


def _text(value: Any, at: str) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise ExportError(f"{at}: not text (expected a string or a list of parts)")
    parts: list[str] = []
    for index, part in enumerate(value):
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        else:
            raise ExportError(f'{at}[{index}]: not a text part (a string or {{"text": ...}})')
    return "".join(parts)
