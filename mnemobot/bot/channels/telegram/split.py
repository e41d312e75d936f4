"""Split a rendered reply into Telegram-sized messages without breaking its HTML.

Lengths are UTF-16 code units of the HTML itself (markup included), which is stricter than
Telegram's count of visible text, so a chunk that fits here always fits there.

Why not a library: chatgpt-md-converter's ``split_html_for_telegram`` counts code points,
not UTF-16 units (3 of 13 long replies, those dense with emoji, gave a chunk Telegram
refuses as too long), refuses limits under 500 and took up to 280 ms per reply;
telegramify-markdown's ``split_entities`` splits text + entities, not HTML, and only at
line breaks, so a long paragraph is cut inside a word (401 words cut per 1,000 fuzzed
long replies, 23 here, all in runs with no space). Measured on the same replies as the
renderer (see ``markdown_html``).

Where a chunk ends: at the last paragraph break (blank line) if that keeps the chunk at
least half full, else the last line break, else the last space (same rule), else the
latest whitespace of any kind, else a hard cut between two characters (never inside an
entity such as ``&amp;`` nor a surrogate pair). The whole whitespace run at a cut is
dropped: Telegram trims a message's leading and trailing whitespace anyway and rejects a
whitespace-only one, so every chunk starts and ends with visible text. Tags open at a cut
are closed at the chunk's end and re-opened, with the same attributes, at the next
chunk's start; a tag with no text inside a chunk is left out of that chunk.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "MIN_LIMIT",
    "TELEGRAM_MESSAGE_LIMIT",
    "WHITESPACE",
    "TelegramChunk",
    "split_for_telegram",
    "split_plain_for_telegram",
    "utf16_len",
]

TELEGRAM_MESSAGE_LIMIT = 4096
# Small enough for captions and tests, big enough for a tag pair around one entity.
MIN_LIMIT = 16
# The whitespace a cut may drop: ASCII only, so nothing visible or meaningful is lost.
WHITESPACE = " \t\n\r\f\v"

_WS = r" \t\n\r\f\v"
_ENTITY = r"&(?:amp|lt|gt|quot|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});"
_HTML_TOKEN = re.compile(
    # A segment: text up to the next tag or line break, spaces inside it included. Whole
    # lines as one token keep the splitter fast; cuts inside are found only when needed.
    rf"(?P<segment>(?:[^<>&{_WS}]+|{_ENTITY})+(?:[ \t\r\f\v]+(?:[^<>&{_WS}]+|{_ENTITY})+)*)"
    r"|(?P<space>[ \t\n\r\f\v]+)"
    r"|(?P<tag><(?P<slash>/?)(?P<name>[A-Za-z][A-Za-z0-9-]*)(?:\s[^<>]*)?>)"
    r"|(?P<entity>&[A-Za-z][A-Za-z0-9]{1,31};)"
    r"|(?P<stray>[^<>& \t\n\r\f\v]|[<>&])"
)
_PLAIN_TOKEN = re.compile(
    r"(?P<segment>[^ \t\n\r\f\v]+(?:[ \t\r\f\v]+[^ \t\n\r\f\v]+)*)|(?P<space>[ \t\n\r\f\v]+)"
)
_ENTITY_TAIL = 12  # longer than any entity a segment holds

_OPEN, _CLOSE, _SPACE, _TEXT, _SEGMENT = range(5)
_PENDING, _EMITTED, _SUPPRESSED = range(3)
_PARAGRAPH, _LINE, _WORD = 2, 1, 0


@dataclass(frozen=True, slots=True)
class TelegramChunk:
    """One message: ``html`` for parse_mode=HTML, ``plain`` to send if Telegram rejects it."""

    html: str
    plain: str


def utf16_len(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units (a non-BMP emoji counts 2)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def split_for_telegram(html: str, limit: int = TELEGRAM_MESSAGE_LIMIT) -> list[TelegramChunk]:
    """Split Telegram HTML into chunks of at most ``limit`` UTF-16 units each."""
    _check_limit(limit)
    return _Splitter(_html_tokens(html), limit, is_html=True).run()


def split_plain_for_telegram(text: str, limit: int = TELEGRAM_MESSAGE_LIMIT) -> list[str]:
    """Split unformatted text the same way (no escaping: the text is sent as it is)."""
    _check_limit(limit)
    return [chunk.plain for chunk in _Splitter(_plain_tokens(text), limit, is_html=False).run()]


def _check_limit(limit: int) -> None:
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT} UTF-16 units, got {limit}")


# A token: (kind, html, plain, cost, name). A tag's name is the tag name; a space token's
# is its break rank: "2" a paragraph break (blank line), "1" a line break, "0" a space.
_Token = tuple[int, str, str, int, str]


def _html_tokens(html: str) -> list[_Token]:
    tokens: list[_Token] = []
    for match in _HTML_TOKEN.finditer(html):
        kind = match.lastgroup
        raw = match.group(0)
        if kind == "segment":
            plain = _unescape(raw) if "&" in raw else raw
            tokens.append((_SEGMENT, raw, plain, utf16_len(raw), ""))
        elif kind == "space":
            tokens.append((_SPACE, raw, raw, len(raw), _break_rank(raw)))
        elif kind == "tag":
            if raw.endswith("/>"):
                continue  # a void tag has no content to carry; Telegram knows none
            name = match.group("name").lower()
            if match.group("slash"):
                tokens.append((_CLOSE, raw, "", len(raw), name))
            else:
                tokens.append((_OPEN, raw, "", utf16_len(raw), name))
        elif kind == "entity":
            # A named entity Telegram does not know (&nbsp;): send its characters as numbers.
            plain = html_lib.unescape(raw)
            if plain == raw:
                tokens.append((_TEXT, "&amp;" + raw[1:], raw, len(raw) + 4, ""))
            else:
                tokens.extend(
                    (_TEXT, f"&#{ord(ch)};", ch, len(f"&#{ord(ch)};"), "") for ch in plain
                )
        else:
            escaped = html_lib.escape(raw, quote=False)
            tokens.append((_TEXT, escaped, raw, utf16_len(escaped), ""))
    return tokens


def _break_rank(space: str) -> str:
    newlines = space.count("\n")
    return "2" if newlines >= 2 else "1" if newlines else "0"


def _plain_tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    for match in _PLAIN_TOKEN.finditer(text):
        raw = match.group(0)
        if match.lastgroup == "segment":
            tokens.append((_SEGMENT, raw, raw, utf16_len(raw), ""))
        else:
            tokens.append((_SPACE, raw, raw, len(raw), _break_rank(raw)))
    return tokens


# An open element: (name, opening tag, its cost, closing tag's cost, state in this chunk).
_Open = tuple[str, str, int, int, int]


class _Cut(NamedTuple):
    """Where the chunk may end: just before a whitespace run (``offset`` > 0: inside the
    segment at ``token_index``, after its first ``offset`` characters)."""

    rank: int
    token_index: int
    offset: int
    html_len: int
    html_parts: int
    plain_parts: int
    stack: tuple[_Open, ...]


class _Splitter:
    def __init__(self, tokens: list[_Token], limit: int, *, is_html: bool) -> None:
        self._tokens = tokens
        self._limit = limit
        self._is_html = is_html
        self._chunks: list[TelegramChunk] = []
        self._stack: list[_Open] = []

    def run(self) -> list[TelegramChunk]:
        index = 0
        while index < len(self._tokens):
            index = self._fill_chunk(index)
        return self._chunks

    def _fill_chunk(self, index: int) -> int:
        """Build one chunk from ``index``; returns where the next chunk starts."""
        tokens = self._tokens
        limit = self._limit
        stack = self._stack = [(e[0], e[1], e[2], e[3], _PENDING) for e in self._stack]
        html_parts: list[str] = []
        plain_parts: list[str] = []
        html_len = 0
        emitted_close = 0  # closing tags owed for the tags this chunk has opened
        pending_open = sum(e[2] for e in stack)  # re-opened lazily, before the next text
        pending_close = sum(e[3] for e in stack)
        has_text = False
        cuts: dict[int, _Cut] = {}
        trailing: _Cut | None = None  # set while the chunk ends in a whitespace run
        in_space_run = False

        frozen_stack: tuple[_Open, ...] | None = None  # `stack` as a tuple, until it changes

        def flush_pending() -> None:
            nonlocal html_len, emitted_close, pending_open, pending_close, frozen_stack
            if pending_open:
                frozen_stack = None
                for position, entry in enumerate(stack):
                    if entry[4] == _PENDING:
                        html_parts.append(entry[1])
                        stack[position] = (*entry[:4], _EMITTED)
                html_len += pending_open
                emitted_close += pending_close
                pending_open = pending_close = 0

        while index < len(tokens):
            kind, token_html, token_plain, cost, name = tokens[index]
            if kind == _OPEN:
                stack.append((name, token_html, cost, len(name) + 3, _PENDING))
                frozen_stack = None
                pending_open += cost
                pending_close += len(name) + 3
                index += 1
                continue
            if kind == _CLOSE:
                position = _innermost(stack, name)
                frozen_stack = None
                while 0 <= position < len(stack):
                    entry = stack.pop()
                    if entry[4] == _EMITTED:
                        html_parts.append(f"</{entry[0]}>")
                        html_len += entry[3]
                        emitted_close -= entry[3]
                    elif entry[4] == _PENDING:
                        pending_open -= entry[2]
                        pending_close -= entry[3]
                index += 1
                continue
            if kind == _SPACE:
                if not has_text:
                    index += 1  # a chunk never starts with whitespace
                    continue
                if not in_space_run:  # the chunk may end here, before the whole run
                    in_space_run = True
                    if frozen_stack is None:
                        frozen_stack = tuple(stack)
                    trailing = _Cut(
                        int(name),
                        index,
                        0,
                        html_len,
                        len(html_parts),
                        len(plain_parts),
                        frozen_stack,
                    )
                    cuts[trailing.rank] = trailing
            room = limit - html_len - pending_open - emitted_close - pending_close
            if cost <= room:
                if pending_open:
                    flush_pending()
                html_parts.append(token_html)
                plain_parts.append(token_plain)
                html_len += cost
                if kind != _SPACE:
                    has_text = True
                    trailing = None
                    in_space_run = False
                index += 1
                continue

            # The token does not fit.
            end = _fitting_end(token_html, room, is_html=self._is_html) if kind == _SEGMENT else 0
            if not has_text and pending_open and not end:
                # Even a fresh chunk cannot hold the re-opened tags and this text (a long
                # link target, say): leave the costliest tag out of this chunk, and retry.
                position = max(
                    (p for p, e in enumerate(stack) if e[4] == _PENDING),
                    key=lambda p: stack[p][2] + stack[p][3],
                )
                entry = stack[position]
                stack[position] = (*entry[:4], _SUPPRESSED)
                frozen_stack = None
                pending_open -= entry[2]
                pending_close -= entry[3]
                continue
            if end:
                space = _last_space(token_html, end)
                if space > 0:
                    cuts[_WORD] = _Cut(
                        _WORD,
                        index,
                        space,
                        html_len + pending_open + utf16_len(token_html[:space]),
                        -1,
                        -1,
                        (),
                    )
            cut = _choose_cut(cuts, limit)
            if cut is not None and not cut.offset:
                self._emit(html_parts, plain_parts, cut.html_parts, cut.plain_parts, cut.stack)
                self._stack = list(cut.stack)
                return cut.token_index
            # A cut inside this segment: at its last fitting space, else between characters.
            head_end = cut.offset if cut is not None else end
            if head_end:
                head = token_html[:head_end]
                rest = token_html[head_end:].lstrip(WHITESPACE)
                flush_pending()
                html_parts.append(head)
                plain_parts.append(self._plain(head))
                tokens[index] = (_SEGMENT, rest, self._plain(rest), utf16_len(rest), "")
            elif not has_text:
                # Unreachable: an unsplittable token is at most 10 units, the limit at least 16.
                raise AssertionError(f"{token_html!r} cannot fit in {limit} units")
            self._emit(html_parts, plain_parts, len(html_parts), len(plain_parts), tuple(stack))
            return index

        if trailing is not None:
            self._emit(
                html_parts, plain_parts, trailing.html_parts, trailing.plain_parts, trailing.stack
            )
        elif has_text:
            self._emit(html_parts, plain_parts, len(html_parts), len(plain_parts), tuple(stack))
        return index

    def _plain(self, segment_html: str) -> str:
        if self._is_html and "&" in segment_html:
            return _unescape(segment_html)
        return segment_html

    def _emit(
        self,
        html_parts: list[str],
        plain_parts: list[str],
        html_count: int,
        plain_count: int,
        stack: tuple[_Open, ...] | list[_Open],
    ) -> None:
        closing = "".join(f"</{e[0]}>" for e in reversed(stack) if e[4] == _EMITTED)
        self._chunks.append(
            TelegramChunk(
                "".join(html_parts[:html_count]) + closing, "".join(plain_parts[:plain_count])
            )
        )


def _unescape(segment_html: str) -> str:
    """Text of a segment; quicker than html.unescape for the four entities we meet."""
    if "&#" in segment_html:
        return html_lib.unescape(segment_html)
    return (
        segment_html.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", '"')
        .replace("&amp;", "&")
    )


def _innermost(stack: list[_Open], name: str) -> int:
    for position in range(len(stack) - 1, -1, -1):
        if stack[position][0] == name:
            return position
    return -1  # a stray closing tag is dropped


def _choose_cut(cuts: dict[int, _Cut], limit: int) -> _Cut | None:
    for rank in (_PARAGRAPH, _LINE, _WORD):
        cut = cuts.get(rank)
        if cut is not None and cut.html_len * 2 >= limit:
            return cut
    return max(cuts.values(), key=lambda cut: (cut.token_index, cut.offset), default=None)


def _fitting_end(segment: str, room: int, *, is_html: bool) -> int:
    """How many characters of ``segment`` fit in ``room`` UTF-16 units, ending neither
    inside a surrogate pair (Python strings hold whole code points) nor inside an entity."""
    if room <= 0:
        return 0
    if segment.isascii():
        end = min(room, len(segment))
    else:
        end, used = len(segment), 0
        for position, ch in enumerate(segment):
            used += 2 if ord(ch) > 0xFFFF else 1
            if used > room:
                end = position
                break
    if is_html and end < len(segment):
        ampersand = segment.rfind("&", max(0, end - _ENTITY_TAIL), end)
        if ampersand >= 0 and segment.find(";", ampersand, end) < 0:
            end = ampersand
    return end


def _last_space(segment: str, end: int) -> int:
    """Start of the last whitespace run that begins at or before ``end`` (0 if none)."""
    position = end if end < len(segment) else end - 1
    while position > 0 and segment[position] not in WHITESPACE:
        position -= 1
    if position <= 0:
        return 0
    while segment[position - 1] in WHITESPACE:
        position -= 1
    return position
