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

The splitter walks tokens (`_Splitter._fill_chunk`) and keeps the state of the chunk it
builds in `_Chunk` (its parts, open tags and the places it may end); the module is longer
than most (about 470 lines) because the two share that one walk.
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


class _Chunk:
    """One chunk as it is built: its parts, its length and the tags open in it.

    A tag opened is not written at once: it waits (pending) until text follows, so a tag
    with no text in this chunk is left out of it; what the chunk owes in closing tags is
    kept beside its length, so `room` is what text may still take.
    """

    __slots__ = (
        "cuts",
        "emitted_close",
        "frozen_stack",
        "has_text",
        "html_len",
        "html_parts",
        "in_space_run",
        "pending_close",
        "pending_open",
        "plain_parts",
        "stack",
        "trailing",
    )

    def __init__(self, carried: list[_Open]) -> None:
        # The tags open at the previous chunk's end, re-opened lazily before the next text.
        self.stack = [(e[0], e[1], e[2], e[3], _PENDING) for e in carried]
        self.html_parts: list[str] = []
        self.plain_parts: list[str] = []
        self.html_len = 0
        self.emitted_close = 0  # closing tags owed for the tags this chunk has opened
        self.pending_open = sum(e[2] for e in self.stack)
        self.pending_close = sum(e[3] for e in self.stack)
        self.has_text = False
        self.cuts: dict[int, _Cut] = {}
        self.trailing: _Cut | None = None  # set while the chunk ends in a whitespace run
        self.in_space_run = False
        self.frozen_stack: tuple[_Open, ...] | None = None  # `stack` as a tuple, until it changes

    def room(self, limit: int) -> int:
        """What the next token may cost within `limit`, the tags owed included."""
        return limit - self.html_len - self.pending_open - self.emitted_close - self.pending_close

    def open_tag(self, name: str, tag_html: str, cost: int) -> None:
        self.stack.append((name, tag_html, cost, len(name) + 3, _PENDING))
        self.frozen_stack = None
        self.pending_open += cost
        self.pending_close += len(name) + 3

    def close_tag(self, name: str) -> None:
        """Close the innermost open `name` and whatever is open inside it."""
        stack = self.stack
        position = _innermost(stack, name)
        self.frozen_stack = None
        while 0 <= position < len(stack):
            entry = stack.pop()
            if entry[4] == _EMITTED:
                self.html_parts.append(f"</{entry[0]}>")
                self.html_len += entry[3]
                self.emitted_close -= entry[3]
            elif entry[4] == _PENDING:
                self.pending_open -= entry[2]
                self.pending_close -= entry[3]

    def note_space(self, index: int, rank: str) -> None:
        """A whitespace run starts at token `index`: the chunk may end before it."""
        if self.in_space_run:
            return
        self.in_space_run = True
        if self.frozen_stack is None:
            self.frozen_stack = tuple(self.stack)
        self.trailing = _Cut(
            int(rank),
            index,
            0,
            self.html_len,
            len(self.html_parts),
            len(self.plain_parts),
            self.frozen_stack,
        )
        self.cuts[self.trailing.rank] = self.trailing

    def append(self, kind: int, token_html: str, token_plain: str, cost: int) -> None:
        if self.pending_open:
            self.flush_pending()
        self.html_parts.append(token_html)
        self.plain_parts.append(token_plain)
        self.html_len += cost
        if kind != _SPACE:
            self.has_text = True
            self.trailing = None
            self.in_space_run = False

    def flush_pending(self) -> None:
        """Write the tags waiting for text."""
        if not self.pending_open:
            return
        self.frozen_stack = None
        stack = self.stack
        for position, entry in enumerate(stack):
            if entry[4] == _PENDING:
                self.html_parts.append(entry[1])
                stack[position] = (*entry[:4], _EMITTED)
        self.html_len += self.pending_open
        self.emitted_close += self.pending_close
        self.pending_open = self.pending_close = 0

    def suppress_costliest_pending(self) -> None:
        """Leave the costliest waiting tag out of this chunk (its text still goes in)."""
        stack = self.stack
        position = max(
            (p for p, e in enumerate(stack) if e[4] == _PENDING),
            key=lambda p: stack[p][2] + stack[p][3],
        )
        entry = stack[position]
        stack[position] = (*entry[:4], _SUPPRESSED)
        self.frozen_stack = None
        self.pending_open -= entry[2]
        self.pending_close -= entry[3]

    def note_word_cut(self, index: int, segment_html: str, space: int) -> None:
        """The segment at `index` could end this chunk at its whitespace at `space`."""
        self.cuts[_WORD] = _Cut(
            _WORD,
            index,
            space,
            self.html_len + self.pending_open + utf16_len(segment_html[:space]),
            -1,
            -1,
            (),
        )


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
        chunk = _Chunk(self._stack)
        self._stack = chunk.stack
        while index < len(tokens):
            kind, token_html, token_plain, cost, name = tokens[index]
            if kind == _OPEN:
                chunk.open_tag(name, token_html, cost)
                index += 1
                continue
            if kind == _CLOSE:
                chunk.close_tag(name)
                index += 1
                continue
            if kind == _SPACE:
                if not chunk.has_text:
                    index += 1  # a chunk never starts with whitespace
                    continue
                chunk.note_space(index, name)
            room = chunk.room(limit)
            if cost <= room:
                chunk.append(kind, token_html, token_plain, cost)
                index += 1
                continue
            # The token does not fit.
            end = _fitting_end(token_html, room, is_html=self._is_html) if kind == _SEGMENT else 0
            if not chunk.has_text and chunk.pending_open and not end:
                # Even a fresh chunk cannot hold the re-opened tags and this text (a long
                # link target, say): leave the costliest tag out of this chunk, and retry.
                chunk.suppress_costliest_pending()
                continue
            return self._end_chunk(chunk, index, end)
        self._end_at_last_token(chunk)
        return index

    def _end_chunk(self, chunk: _Chunk, index: int, end: int) -> int:
        """End `chunk` at its best cut before the token at `index`, which does not fit
        (`end`: how many of its characters would); returns where the next chunk starts."""
        token_html = self._tokens[index][1]
        if end:
            space = _last_space(token_html, end)
            if space > 0:
                chunk.note_word_cut(index, token_html, space)
        cut = _choose_cut(chunk.cuts, self._limit)
        if cut is not None and not cut.offset:
            self._emit(
                chunk.html_parts, chunk.plain_parts, cut.html_parts, cut.plain_parts, cut.stack
            )
            self._stack = list(cut.stack)
            return cut.token_index
        # A cut inside this segment: at its last fitting space, else between characters.
        head_end = cut.offset if cut is not None else end
        if head_end:
            head = token_html[:head_end]
            rest = token_html[head_end:].lstrip(WHITESPACE)
            chunk.flush_pending()
            chunk.html_parts.append(head)
            chunk.plain_parts.append(self._plain(head))
            self._tokens[index] = (_SEGMENT, rest, self._plain(rest), utf16_len(rest), "")
        elif not chunk.has_text:
            # Unreachable: an unsplittable token is at most 10 units, the limit at least 16.
            raise AssertionError(f"{token_html!r} cannot fit in {self._limit} units")
        parts = chunk.html_parts, chunk.plain_parts
        self._emit(*parts, len(chunk.html_parts), len(chunk.plain_parts), tuple(chunk.stack))
        return index

    def _end_at_last_token(self, chunk: _Chunk) -> None:
        """The reply ended inside `chunk`: emit it without its trailing whitespace."""
        trailing = chunk.trailing
        if trailing is not None:
            self._emit(
                chunk.html_parts,
                chunk.plain_parts,
                trailing.html_parts,
                trailing.plain_parts,
                trailing.stack,
            )
        elif chunk.has_text:
            parts = chunk.html_parts, chunk.plain_parts
            self._emit(*parts, len(chunk.html_parts), len(chunk.plain_parts), tuple(chunk.stack))

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
