"""Sentences: splitting prose into whole sentences, and cutting text at one."""

from __future__ import annotations

import re

from mnemobot.memory.write.extraction.vocabulary import ABBREVIATIONS, TITLES

_BULLET = re.compile(r"^\s*(?:[-*•+>]|#{1,6}|\d{1,3}[.)])\s+")
_BOUNDARY = re.compile(
    r"(?P<punct>[.!?]+|…+)(?P<close>[\"'”’)\]]*)\s+"
    r"|(?P<cjk>[。！？]+)(?P<cjk_close>[」』”’)]*)"
)
# The last word before a full stop, to tell "Dr." or "etc." from a sentence end.
_LAST_WORD = re.compile(r"([^\s(\"'“‘]+)$")


def _continues(before: str, punct: str, following: str) -> bool:
    """Whether the punctuation ending `before` is not a sentence end."""
    if punct.startswith("..") or punct.startswith("…"):
        return following[:1].islower()
    if punct != ".":
        return False
    match = _LAST_WORD.search(before)
    if match is None:
        return False
    word = match.group(1).lower().rstrip(".")
    if word in TITLES:
        return True
    if len(word) == 1 and word.isalpha() and match.group(1).isupper():
        return True  # an initial: "J. R. R. Tolkien"
    return word in ABBREVIATIONS and following[:1].islower()


def split_sentences(text: str) -> list[str]:
    """Split prose into whole sentences; line breaks and list items also end a sentence."""
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = _BULLET.sub("", raw_line).strip()
        if not line:
            continue
        start = 0
        for match in _BOUNDARY.finditer(line):
            if match.group("cjk"):
                end = match.end()
            else:
                end = match.end("close")
                # Only the next character matters; slicing the rest would be quadratic.
                before = line[start : match.start()]
                following = line[match.end() : match.end() + 1]
                if _continues(before, match.group("punct"), following):
                    continue
            sentence = line[start:end].strip()
            if sentence:
                sentences.append(sentence)
            start = match.end()
        tail = line[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


def cut_text(text: str, limit: int) -> str:
    """Cut at a sentence end, else at a word boundary, marking the cut with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    window = text[:limit]
    sentence_end = max(window.rfind(mark) for mark in (". ", "! ", "? ", "\n"))
    if sentence_end >= limit * 0.6:
        return window[: sentence_end + 1].rstrip() + " …"
    space = window.rfind(" ")
    if space >= limit * 0.6:
        window = window[:space]
    return window.rstrip(" ,;:") + "…"


def one_line(text: str) -> str:
    """`text` with every run of whitespace, line breaks included, as one space."""
    return " ".join(text.split())
