"""Passages: the part of a long remembered text that a question is about.

A pack line used to show an item whole: a 3,000-character reply took a sixth of the
default budget, mostly the parts the question did not touch. `passage` picks the stretch
of a text with the most of the query's weight (each query term counted once, by its
idf), grown on both sides to `limit` characters, and says where it cut, so the line can
mark the cuts and name the message the rest is in.

The text is cut into units first: a prose line into sentences (a sentence longer than
the limit into word runs), a line of a fenced code block stays one unit, so a passage
never ends inside a line of code. A code line longer than the limit can only be shown
whole or not at all; a passage is then the best stretch without it.

`message_text` is the other side of a cut: the whole of a message, by the ref a line
names, for the `memory` tool's `read`.

Pure functions of their arguments.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from mnemobot.memory.store.items import ItemType, MemoryItem
from mnemobot.memory.text.terms import languages, terms_in

# The ellipsis a passage shows where it cut the text.
CUT_MARK = "…"

_FENCE = re.compile(r"^[ \t]*(?:```|~~~)")
# A sentence end inside a line: punctuation, closing quotes, then space (or CJK stops).
_SENTENCE_END = re.compile(r"(?<=[.!?;:])[\"'”’)\]]*\s+|(?<=[。！？；])")
_WORD_END = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Unit:
    """A piece of the text no passage cuts into: [start, end) offsets, code or prose."""

    start: int
    end: int
    code: bool


@dataclass(frozen=True, slots=True)
class Passage:
    """`text[start:end]` of a text `length` characters long."""

    text: str
    start: int
    end: int
    length: int

    @property
    def cut_before(self) -> bool:
        return self.start > 0

    @property
    def cut_after(self) -> bool:
        return self.end < self.length

    @property
    def is_cut(self) -> bool:
        return self.cut_before or self.cut_after


def units(text: str, limit: int) -> list[Unit]:
    """The text's units in order, covering it (whitespace between them included in none).

    Prose lines are split after sentence ends; a prose sentence longer than `limit` is
    split at spaces; fenced code (fence lines included) is one unit a line, whatever its
    length.
    """
    found: list[Unit] = []
    in_code = False
    position = 0
    for line in text.splitlines(keepends=True):
        start, end = position, position + len(line.rstrip("\r\n"))
        position += len(line)
        fence = _FENCE.match(line) is not None
        if fence or in_code:
            if end > start:
                found.append(Unit(start, end, True))
            if fence:
                in_code = not in_code
            continue
        found.extend(_prose_units(text, start, end, limit))
    return found


def _prose_units(text: str, start: int, end: int, limit: int) -> list[Unit]:
    pieces: list[Unit] = []
    cursor = start
    line = text[start:end]
    for match in _SENTENCE_END.finditer(line):
        split = start + match.end()
        if split > cursor:
            pieces.extend(_word_runs(text, cursor, split, limit))
        cursor = split
    if end > cursor:
        pieces.extend(_word_runs(text, cursor, end, limit))
    return [piece for piece in pieces if text[piece.start : piece.end].strip()]


def _word_runs(text: str, start: int, end: int, limit: int) -> list[Unit]:
    """[start, end) as one unit, or as runs of whole words of at most `limit` chars (a
    single word longer than that is cut at `limit`)."""
    if end - start <= limit:
        return [Unit(start, end, False)]
    runs: list[Unit] = []
    cursor = start
    while end - cursor > limit:
        window = text[cursor : cursor + limit]
        spaces = [m.end() for m in _WORD_END.finditer(window)]
        cut = cursor + (spaces[-1] if spaces and spaces[-1] > 0 else limit)
        runs.append(Unit(cursor, cut, False))
        cursor = cut
    runs.append(Unit(cursor, end, False))
    return runs


def passage(text: str, weights: Mapping[str, float], limit: int) -> Passage:
    """The stretch of `text` (at most `limit` characters, whole units) best matching the
    query terms `weights` (term -> weight), grown to `limit` around its best units; the
    text itself when it fits. With no query term in it, its start."""
    text = text.rstrip()
    if len(text) <= limit:
        return Passage(text, 0, len(text), len(text))
    pieces = units(text, limit)
    window = _best_window(pieces, _unit_terms(text, tuple(pieces)), weights, limit)
    if window is None:
        window = _first_fitting(pieces, limit)
        if window is None:
            return Passage("", 0, 0, len(text))
    first, last = _grow(pieces, *window, limit)
    start, end = pieces[first].start, pieces[last].end
    return Passage(text[start:end], start, end, len(text))


def weight_in(text: str, weights: Mapping[str, float]) -> float:
    """The weight of the query terms `text` holds, each counted once."""
    if not weights:
        return 0.0
    found = set(terms_in(text, languages(text)))
    return sum(weight for term, weight in weights.items() if term in found)


@lru_cache(maxsize=4_096)
def _unit_terms(text: str, pieces: tuple[Unit, ...]) -> tuple[frozenset[str], ...]:
    # Every unit read in the languages of the whole text: a short sentence alone may not
    # say which it is.
    text_languages = languages(text)
    return tuple(frozenset(terms_in(text[u.start : u.end], text_languages)) for u in pieces)


def _best_window(
    pieces: list[Unit],
    found: tuple[frozenset[str], ...],
    weights: Mapping[str, float],
    limit: int,
) -> tuple[int, int] | None:
    """The shortest run of units within `limit` holding the most query weight (each
    term counted once); the earliest on a tie. None when no unit matches."""
    matching = {i for i, unit_terms in enumerate(found) if not unit_terms.isdisjoint(weights)}
    best: tuple[float, int] | None = None
    chosen: tuple[int, int] | None = None
    for first in sorted(matching):
        seen: set[str] = set()
        score = 0.0
        for last in range(first, len(pieces)):
            length = pieces[last].end - pieces[first].start
            if length > limit:
                break
            if last not in matching:
                continue
            fresh = (found[last] & weights.keys()) - seen
            if fresh:
                seen |= fresh
                # fsum is exact, so one set of terms scores the same in any window: a
                # running sum's last bits follow its order (a set's order follows the
                # process's hash seed), and windows tie often.
                score = math.fsum(weights[term] for term in seen)
            if score > 0 and (best is None or (score, -length) > best):
                best, chosen = (score, -length), (first, last)
    return chosen


def _first_fitting(pieces: list[Unit], limit: int) -> tuple[int, int] | None:
    for index, unit in enumerate(pieces):
        if unit.end - unit.start <= limit:
            return index, index
    return None


def _grow(pieces: list[Unit], first: int, last: int, limit: int) -> tuple[int, int]:
    """The run widened a unit at a time (after it first: a reader goes on reading) while
    it stays within `limit`."""
    start = pieces[first].start
    while True:
        grown = False
        if last + 1 < len(pieces) and pieces[last + 1].end - start <= limit:
            last += 1
            grown = True
        if first > 0 and pieces[last].end - pieces[first - 1].start <= limit:
            first -= 1
            start = pieces[first].start
            grown = True
        if not grown:
            return first, last


def message_text(items: Iterable[MemoryItem], ref: str) -> str | None:
    """The whole of what the turns carrying `ref` say, in the order they were written
    (a long message is kept in several pieces); None when none carries it."""
    pieces = [
        item.content for item in items if item.type is ItemType.TURN and ref in item.references
    ]
    return "\n".join(pieces) if pieces else None
