"""Splitting a long message into pieces of bounded size, keeping every character of it.

A long message is stored whole, as several turn items: one item per piece. Each piece is
found by its own words, so the end of a 1,500-character message is as findable as its
start, and a pack line costs a piece, not the whole message.
"""

from __future__ import annotations

import re

# Break points, best first: a paragraph, a line, a sentence end, a space.
_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"[.!?。！？…]\s+"))


def split_long_text(text: str, limit: int) -> list[str]:
    """`text` (stripped) as pieces of at most `limit` characters, cut at the best break.

    Joined with single spaces the pieces give back every word of `text`, in order: nothing
    is dropped. A piece is cut at the last paragraph, line or sentence end in its second
    half, else at the last space, else (a run with no space, like a URL) at `limit`.
    """
    text = text.strip()
    pieces: list[str] = []
    while len(text) > limit:
        window = text[: limit + 1]
        cut = _best_break(window, limit)
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def _best_break(window: str, limit: int) -> int:
    floor = limit // 2
    for pattern in _BREAKS:
        ends = [m.end() for m in pattern.finditer(window) if floor <= m.end() <= limit]
        if ends:
            return ends[-1]
    space = window.rfind(" ", floor, limit + 1)
    return space if space > 0 else limit
