"""A text holding a forgotten text, redacted: whole, or a conversation summary in part.

A message is replaced whole by the forgotten mark. A conversation summary (the message
compaction writes in place of the older turns) is one message for a whole long session:
blanked, forgetting one locker code would lose everything else the assistant had kept of
it. So a summary loses only its sentences that hold a forgotten text (or a part of one
running over several sentences or lines), each replaced by the mark; its other sentences
and lines stay as written.

Matching is forgetting's everywhere: the forgotten texts (needles) are looked for in the
text lower-cased with runs of white space made one (`normalize_content`), so a needle
found across a line break takes a sentence of each line.

The erasure of files (`forgetting`) and the readers keeping forgotten texts out of what
they send (`forgotten_texts.ForgottenTexts.redact`) both redact through `redact_forgotten`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemobot.memory.notes.daily_notes import FORGOTTEN_MARK
from mnemobot.memory.store.items import normalize_content

# The heading compaction writes on its summary's first line. Here, under the conversation
# layer, because the erasure of session files must know a summary when it reads one.
SUMMARY_PREFIX = "[Conversation summary]"

_SPACES = re.compile(r"\s+")
# A sentence ends with its closing mark and the white space after it; a CJK one needs none.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])")
# What a summary line opens with that is no part of its sentences: indentation, a bullet,
# a section's name ("ARTIFACTS: ").
_LINE_LEAD = re.compile(r"\s*(?:[-*•]\s+|[A-Z][A-Z ]{1,30}:\s+)?")


def holds_forgotten(text: str, needles: Sequence[str]) -> bool:
    """Whether `text` holds one of `needles` (forgotten texts, `normalize_content`d)."""
    if not needles or not text:
        return False
    folded = normalize_content(text)
    return any(needle in folded for needle in needles)


def _is_summary(text: str) -> bool:
    return text.startswith(SUMMARY_PREFIX + "\n")


def redact_forgotten(text: str, needles: Sequence[str]) -> str:
    """`text` if it holds none of `needles`; else a summary without its sentences holding
    one, and any other text the forgotten mark."""
    if not holds_forgotten(text, needles):
        return text
    if not _is_summary(text):
        return FORGOTTEN_MARK
    spans = _needle_spans(text, needles)
    if spans is None:
        return FORGOTTEN_MARK
    lines = []
    start = 0
    for line in text.split("\n"):
        lines.append(_redact_line(line, start, spans))
        start += len(line) + 1
    redacted = "\n".join(lines)
    # A needle that only the marks and the sentences left beside them spell again (or
    # one these spans missed): nothing of the summary is worth keeping it for.
    return FORGOTTEN_MARK if holds_forgotten(redacted, needles) else redacted


def _needle_spans(text: str, needles: Sequence[str]) -> list[tuple[int, int]] | None:
    """Where in `text` each needle occurs, as [start, end) of `text`'s characters; None
    when the folded text cannot be mapped back to them."""
    collapsed: list[str] = []
    origin: list[int] = []  # for each character of the folded text, where it came from
    position = 0
    for space in _SPACES.finditer(text):
        _fold_into(collapsed, origin, text, position, space.start())
        collapsed.append(" ")
        origin.append(space.start())
        position = space.end()
    _fold_into(collapsed, origin, text, position, len(text))
    # Lower-cased whole, as `normalize_content` does (a final sigma depends on its word).
    folded = "".join(collapsed).lower()
    if len(folded) != len(origin):
        return None
    spans = []
    for needle in needles:
        if not needle:
            continue
        found = folded.find(needle)
        while found != -1:
            spans.append((origin[found], origin[found + len(needle) - 1] + 1))
            found = folded.find(needle, found + 1)
    return spans


def _fold_into(collapsed: list[str], origin: list[int], text: str, start: int, end: int) -> None:
    for index in range(start, end):
        character = text[index]
        collapsed.append(character)
        # One character may lower-case to two ("İ"): each maps back to it.
        origin.extend([index] * len(character.lower()))


def _redact_line(line: str, offset: int, spans: Sequence[tuple[int, int]]) -> str:
    """`line` (at `offset` in the text) with each run of its sentences that a span
    overlaps replaced by one forgotten mark; its bullet or section heading kept."""

    def overlapped(start: int, end: int) -> bool:
        return any(a < offset + end and offset + start < b for a, b in spans)

    lead = _LINE_LEAD.match(line)
    start = lead.end() if lead is not None and not overlapped(0, lead.end()) else 0
    pieces = [line[:start]]
    marked = False
    ends = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(line, start)]
    for end, after in [*ends, (len(line), len(line))]:
        sentence, separator = line[start:end], line[end:after]
        start = after
        if not sentence:
            pieces.append(separator)
            continue
        if overlapped(end - len(sentence), end):
            if marked:
                pieces.pop()  # the white space before it: one mark for a run of sentences
            else:
                pieces.append(FORGOTTEN_MARK)
            marked = True
        else:
            pieces.append(sentence)
            marked = False
        pieces.append(separator)
    return "".join(pieces)
