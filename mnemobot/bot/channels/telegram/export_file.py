"""Reading a Telegram Desktop chat export (`result.json`), checked whole before use.

The export is `{"name", "type", "id", "messages": [...]}`; a message is
`{"id", "type": "message", "date": "YYYY-MM-DDTHH:MM:SS", "date_unixtime", "from",
"from_id", "text": str | [str | {"type", "text"}], ...}`, and `"type": "service"` marks
joins, pins and the like (skipped). `read_export` checks every message before returning
any, so an import never starts on a file it cannot finish; a problem is one line naming
the file, where in it, and what is wrong ("result.json: messages[17].date: not a date").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

import orjson


class ExportError(ValueError):
    """A file that is not a usable chat export; the message says where and why."""


@dataclass(frozen=True, slots=True)
class ExportedMessage:
    id: int
    at: float
    author: str
    text: str

    @property
    def ref(self) -> str:
        """The message ref the live bot gives a Telegram message (`tg:<id>`)."""
        return f"tg:{self.id}"


@dataclass(frozen=True, slots=True)
class ChatExport:
    name: str
    # Messages with text, in the file's order; service messages and media without a
    # caption are left out.
    messages: list[ExportedMessage]
    skipped: int


def read_export(path: Path, tz: tzinfo) -> ChatExport:
    """The export at `path`; `tz` reads a `date` that has no `date_unixtime` beside it
    (Telegram Desktop writes local time)."""
    where = path.name
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ExportError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError as exc:
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
    for index, record in enumerate(raw):
        at = f"{where}: messages[{index}]"
        message = _message(record, at, tz)
        if message is None:
            skipped += 1
            continue
        if message.id in seen:
            raise ExportError(f"{at}.id: {message.id} appears twice")
        seen.add(message.id)
        messages.append(message)
    name = data.get("name")
    return ChatExport(str(name) if name is not None else path.stem, messages, skipped)


def _message(record: Any, at: str, tz: tzinfo) -> ExportedMessage | None:
    if not isinstance(record, dict):
        raise ExportError(f"{at}: not an object")
    kind = record.get("type")
    if not isinstance(kind, str):
        raise ExportError(f'{at}.type: missing (expected "message" or "service")')
    message_id = record.get("id")
    if not isinstance(message_id, int) or isinstance(message_id, bool):
        raise ExportError(f"{at}.id: not a whole number")
    when = _when(record, at, tz)
    if kind != "message":
        return None
    text = _text(record.get("text", ""), f"{at}.text")
    author = record.get("from")
    if author is not None and not isinstance(author, str):
        raise ExportError(f"{at}.from: not a name")
    if not text.strip():
        return None  # a photo or sticker without a caption: nothing said to remember
    # A deleted account has no name; its id still tells its messages apart.
    name = author or str(record.get("from_id") or "Deleted Account")
    return ExportedMessage(message_id, when, name, text)


def _when(record: dict[str, Any], at: str, tz: tzinfo) -> float:
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
        return (local if local.tzinfo else local.replace(tzinfo=tz)).timestamp()
    try:
        return float(int(unix))
    except (TypeError, ValueError):
        raise ExportError(f"{at}.date_unixtime: not a number ({unix!r})") from None


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
