"""Reading a Telegram Desktop chat export (`result.json`), checked whole before use.

The export is `{"name", "type", "id", "messages": [...]}`; a message is
`{"id", "type": "message", "date": "YYYY-MM-DDTHH:MM:SS", "date_unixtime", "from",
"from_id", "text": str | [str | {"type", "text"}], ...}`, and `"type": "service"` marks
joins, pins and the like (skipped). A forward carries `"forwarded_from"`: its original
author's name (null when Telegram Desktop had none, e.g. a deleted account); `from` is then
whoever passed it on, and the words are the original author's, never theirs.
`read_export` checks every message before returning any, so an import never starts on a
file it cannot finish; a problem is one line naming the file, where in it, and what is
wrong ("result.json: messages[17].date: not a date").

The file is UTF-8, as Telegram Desktop writes it; a byte order mark in front (an editor
such as Windows Notepad saves one) is skipped. A file is hostile input like any other: at
most `MAX_EXPORT_BYTES` are read (a larger file, or an endless one like a pipe or
/dev/zero, is refused after that much), nesting stops at orjson's depth limit, every field
has its type checked, and a date must be one a message can have: after 1970 and not in the
future (the memory store files an episode under its day; a date past year 9999 cannot be
filed at all, and one in the future would stay the newest thing said forever).
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import orjson

# Parsed whole, an export takes 7-9 times its size in memory (`/usr/bin/time -v` around
# `read_export`, on a busy 2-core machine: as Telegram Desktop writes them, 115 MB, 200k
# messages: 820 MB peak RSS, 18 s; 63 MB, 115k messages: 478 MB, 12 s; the worst case, 63 MB
# of 740k bare service messages: 567 MB, 13 s). A longer chat is exported in parts (Telegram
# Desktop asks for a date range) and each part imported: re-imports skip what is there.
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
    name: str
    # Messages with text, in the file's order; service messages and media without a
    # caption are left out.
    messages: list[ExportedMessage]
    skipped: int
    # In a chat with a bot (Telegram Desktop's `bot_chat`), the name its messages carry:
    # the other side of the chat is the bot, whose `from_id` is the chat's own id.
    bot: str | None = None


def read_export(path: Path, tz: tzinfo, *, now: float | None = None) -> ChatExport:
    """The export at `path`; `tz` reads a `date` that has no `date_unixtime` beside it
    (Telegram Desktop writes local time); `now` (default: the clock) bounds its dates."""
    where = path.name
    try:
        data = orjson.loads(_without_bom(_read_bounded(path)))
    except OSError as exc:
        raise ExportError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError as exc:
        if exc.msg.startswith("str is not valid UTF-8"):
            # orjson says so of any byte that is not UTF-8 (a file saved as Latin-1 or
            # UTF-16), in words of its own.
            raise ExportError(
                f"{where}: not UTF-8 text (saved in another encoding); export the chat "
                "again from Telegram Desktop as JSON, or save the file as UTF-8"
            ) from None
        if str(exc).startswith("depth limit exceeded"):
            # orjson stops at 1024 levels; an export has four.
            raise ExportError(
                f"{where}: not a chat export (nested over 1024 levels deep)"
            ) from None
        raise ExportError(f"{where}: not JSON ({exc}); export the chat as JSON") from None
    if not isinstance(data, dict):
        raise ExportError(f"{where}: not a chat export (expected an object with 'messages')")
    raw = data.get("messages")
    if not isinstance(raw, list):
        raise ExportError(
            f"{where}: no 'messages' list; export a single chat as JSON (result.json)"
        )
    messages: list[ExportedMessage] = []
    skipped = 0
    seen: set[int] = set()
    latest = (time.time() if now is None else now) + FUTURE_SLACK_SECONDS
    chat_type = data.get("type")
    shared = isinstance(chat_type, str) and chat_type in SHARED_NUMBERING_TYPES
    chat_id = data.get("id")
    bot_from_id = f"user{chat_id}" if chat_type == "bot_chat" and type(chat_id) is int else None
    from_bot: list[int] = []  # where the bot's messages are in `messages`
    for index, record in enumerate(raw):
        at = f"{where}: messages[{index}]"
        message = _message(record, at, tz, latest, shared)
        if message is None:
            skipped += 1
            continue
        if message.id in seen:
            raise ExportError(f"{at}.id: {message.id} appears twice")
        seen.add(message.id)
        messages.append(message)
        if bot_from_id is not None and record.get("from_id") == bot_from_id:
            from_bot.append(len(messages) - 1)
    name = data.get("name")
    # Printed in the import's one line: a name, not a page.
    shown_name = name[:MAX_NAME_CHARS] if isinstance(name, str) and name.strip() else path.stem
    return ChatExport(shown_name, messages, skipped, _bot_named_alone(messages, from_bot))


def _bot_named_alone(messages: list[ExportedMessage], from_bot: list[int]) -> str | None:
    """The name of the bot's messages (at `from_bot` in `messages`), one no one else's
    messages carry: the import tells the assistant's messages by their name, and a person
    may call themselves as the bot is called (or the bot may have been renamed)."""
    if not from_bot:
        return None
    name = messages[from_bot[0]].author
    bots = set(from_bot)
    others = {m.author for i, m in enumerate(messages) if i not in bots}
    if name not in others and all(messages[i].author == name for i in from_bot):
        return name
    own = f"{name} (bot)"
    while own in others:
        own += "'"
    for i in from_bot:
        messages[i] = replace(messages[i], author=own)
    return own


def _without_bom(data: bytes) -> bytes | memoryview:
    """The bytes after a UTF-8 byte order mark (orjson refuses one), not copied: the copy
    of a file at the budget would hold it twice."""
    return memoryview(data)[len(_UTF8_BOM) :] if data.startswith(_UTF8_BOM) else data


def _read_bounded(path: Path) -> bytes:
    """The file's bytes; an ExportError past MAX_EXPORT_BYTES, told by its size when it
    has one (a regular file) and after reading one byte more otherwise (a pipe)."""
    data = b""
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size <= MAX_EXPORT_BYTES:
            data = file.read(MAX_EXPORT_BYTES + 1)
    if size > MAX_EXPORT_BYTES or len(data) > MAX_EXPORT_BYTES:
        # A pipe's size is 0: how much more it held is not read to find out.
        shown = f"{size / 2**20:.0f} MB, " if size > MAX_EXPORT_BYTES else ""
        raise ExportError(
            f"{path.name}: {shown}more than an import reads at once "
            f"({MAX_EXPORT_BYTES // 2**20} MB); export the chat in parts (Telegram Desktop: "
            "Export chat history, From and To dates) and import each"
        )
    return data


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
