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


# Text in quotation marks on one line: «», „“, “”, "". A straight mark opens a quotation only
# at a line's start or after a space or an opening sign, and closes one only before a space,
# punctuation or the line's end: an inch mark ("6'2" tall", "my 55" TV") opens none. The
# inside is bounded, so a line of unclosed marks costs linear time, not quadratic.
QUOTATION = re.compile(
    r'(?<![^\s:(\[—–-])"[^"\n]{1,600}"(?=$|[\s.,;:!?)\]…—–-])'
    r"|“[^”\n]{0,600}”|«[^»\n]{0,600}»|„[^“\n]{0,600}“"
)
# A quotation of this many words or more that speaks as "I" or "we" is someone's speech (an
# example reply, a line of a script, what another person said), not a title or a term the
# sentence quotes ("I prefer "clean code"", "renamed to "Data Pipeline Design Notes"").
# Chosen by reading the first-person statements found inside quotes in BEAM's development
# chats: the replies an assistant suggests ("Response: "I'd rather not get into that
# today."") had five words or more.
QUOTED_SPEECH_WORDS = 4
_FIRST_PERSON = re.compile(
    r"\b(?:I|I'm|I'd|I'll|I've|me|my|mine|we|we're|our|us)\b"
    r"|(?i:\b(?:я|мне|меня|мой|моя|мои|мы|нам|ich|mir|mich|mein|meine|wir|yo|mí|mis|nosotros"
    r"|je|moi|mon|ma|mes|nous)\b|\bj'|我)"
)


def without_quoted_speech(text: str) -> str:
    """`text` with each quotation of someone's speech cut down to a mark ("…" in its
    quotes): first-person words in quotation marks are someone's words, not the writer's
    own statement ("Tell her: "I prefer to talk by email."" states no preference of the
    writer's). A message that is one quotation and nothing else is the writer's own."""
    stripped = text.strip()

    def mark(quote: re.Match[str]) -> str:
        inside = quote.group()[1:-1]
        if (
            len(inside.split()) < QUOTED_SPEECH_WORDS
            or not _FIRST_PERSON.search(inside.replace("’", "'"))
            or quote.group() == stripped
        ):
            return quote.group()
        return f"{quote.group()[0]}…{quote.group()[-1]}"

    return QUOTATION.sub(mark, text)
