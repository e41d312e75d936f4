"""A chat export's JSON read as a stream: one message object at a time, never the whole.

Parsed whole (orjson), a 53 MB export of 300,000 messages took 430 MB, and the import held
its messages to the end. Here ijson's `basic_parse` (yajl, in C) reads the file in blocks
and gives one event per value; the objects of `messages` are built here one at a time, so
what a read holds is one message and the block. Not ijson's `items()`: it keeps a path
string per level, quadratic in the nesting depth (10,000 levels took 250 MB, 100,000 more
than the machine had), and a hostile file nests as deep as it likes; here a file deeper
than `MAX_DEPTH` is refused when it gets there.

Only the shape is checked here (an object with a `messages` list, nesting, syntax,
encoding); what a message must hold is `export_file`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeAlias

import ijson

# orjson's limit, which the whole-file parse had; an export nests four levels.
MAX_DEPTH = 1024
# Values one message may hold. Telegram's longest message (4096 characters) has at most a
# few thousand formatting entities; a hostile file's one "message" of 60 MB of empty
# objects took 1.4 GB to build (review), where every message is bounded now: about 10 MB.
MAX_MESSAGE_VALUES = 100_000
_READ_BLOCK = 64 * 1024
# The top-level values kept (the chat's name, type and id); the rest is skipped unbuilt.
_KEPT_KEYS = frozenset({"name", "type", "id"})
_OPENS = frozenset({"start_map", "start_array"})
_CLOSES = frozenset({"end_map", "end_array"})
# Byte order marks of UTF-16 and UTF-32: a file saved as "Unicode" by an editor.
_WIDE_MARKS = (b"\xff\xfe", b"\xfe\xff")

Events: TypeAlias = Iterator[tuple[str, Any]]


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class NotJSON(ValueError):
    """Not JSON; the message is the parser's first line ("parse error: premature EOF")."""


class NotUTF8(ValueError):
    """Bytes that are not UTF-8."""


class TooDeep(ValueError):
    """Nested deeper than MAX_DEPTH."""


class TooLarge(ValueError):
    """A message of more than MAX_MESSAGE_VALUES values."""


class NotAChat(ValueError):
    """JSON, but not an object."""


class NoMessages(ValueError):
    """An object without one `messages` list."""


def chat_messages(source: Readable, top: dict[str, Any]) -> Iterator[Any]:
    """Each element of the `messages` list of the JSON object `source` holds, built, in
    order; once the file is read to its end without a fault, `top` holds its top-level
    `name` and `type` (those that are there and are not objects or lists)."""
    head = source.read(4)
    if head.startswith(_WIDE_MARKS) or b"\x00" in head:
        raise NotUTF8
    events = _checked(
        ijson.basic_parse(_Prefixed(head, source), use_float=True, buf_size=_READ_BLOCK)
    )
    event, _ = next(events, ("", None))
    if event != "start_map":
        raise NotAChat
    lists = 0
    for event, key in events:
        if event == "end_map":
            break
        event, value = next(events)
        if key == "messages":
            if event != "start_array" or lists:
                raise NoMessages
            lists += 1
            yield from _elements(events)
        elif event in _OPENS:
            _skip(events)
        elif key in _KEPT_KEYS:
            top[key] = value
    for _ in events:
        pass  # to the end: trailing bytes are a fault like any other
    if not lists:
        raise NoMessages


def _elements(events: Events) -> Iterator[Any]:
    """The values of a list open at depth 2 (in the top-level object), each built."""
    for event, value in events:
        if event == "end_array":
            return
        yield _built(event, value, events) if event in _OPENS else value


def _built(event: str, value: Any, events: Events) -> Any:
    """The object or list `event` opens (at depth 3), from the events after it."""
    root: Any = {} if event == "start_map" else []
    stack = [root]
    top = root
    key = None
    values = 0
    for event, value in events:
        if event == "map_key":
            key = value
            continue
        values += 1
        if values > MAX_MESSAGE_VALUES:
            raise TooLarge
        if event in _CLOSES:
            stack.pop()
            if not stack:
                return root
            top = stack[-1]
            continue
        if event in _OPENS:
            value = {} if event == "start_map" else []
        if type(top) is dict:
            top[key] = value
        else:
            top.append(value)
        if event in _OPENS:
            if len(stack) + 2 >= MAX_DEPTH:
                raise TooDeep
            stack.append(value)
            top = value
    raise NotJSON("parse error: premature EOF")


def _skip(events: Events) -> None:
    """Past the object or list just opened (at depth 2), building nothing."""
    depth = 1
    for event, _ in events:
        if event in _OPENS:
            depth += 1
            if depth + 1 >= MAX_DEPTH:
                raise TooDeep
        elif event in _CLOSES:
            depth -= 1
            if not depth:
                return


def _checked(events: Events) -> Events:
    """The parser's events, its faults told apart (it says all of them alike)."""
    try:
        yield from events
    except ijson.JSONError as exc:
        said = exc.args[0] if exc.args else ""
        line = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
        first = line.strip().splitlines()[0] if line.strip() else "not JSON"
        if "invalid bytes in UTF8 string" in first:
            raise NotUTF8 from None
        raise NotJSON(first) from None


class _Prefixed:
    """`source` with `head` (already read from it) in front, for the parser."""

    def __init__(self, head: bytes, source: Readable) -> None:
        self._head = head
        self._read: Callable[[int], bytes] = source.read

    def read(self, size: int = -1) -> bytes:
        if not self._head or size == 0:
            # ijson reads 0 bytes first, to tell bytes from text.
            return self._read(size)
        head, self._head = self._head, b""
        if size < 0:
            return head + self._read(-1)
        return head + self._read(max(0, size - len(head)))
