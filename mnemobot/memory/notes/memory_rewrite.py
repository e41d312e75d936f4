"""A MEMORY.md rewrite as the model answers it: parsing, and the loss guard.

Pure functions. The answer is the new file followed by a `## Superseded` list of the old
entries it removed or replaced; `check_rewrite` says why a rewrite must be rejected: empty,
not a memory file, over the cap, or losing too many old entries without naming them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnemobot.base.tokens import estimate_tokens
from mnemobot.memory.text.terms import terms

# What the model answers when nothing new is worth keeping; part of the prompt's contract.
NO_CHANGE = "NO_CHANGE"
SUPERSEDED_HEADING = "## Superseded"
# The labels of what a consolidation prompt gives the model: a rewrite holding one is the
# prompt given back (a model that echoes, or a weak one off its format), not a file.
CURRENT_FILE_LABEL = "CURRENT MEMORY.md:"
NEW_NOTES_LABEL = "NEW CONVERSATION NOTES:"
NEW_FACTS_LABEL = "NEW FACTS:"
_PROMPT_LABELS = (CURRENT_FILE_LABEL, NEW_NOTES_LABEL, NEW_FACTS_LABEL)
# What the prompt shows for a chat with no MEMORY.md yet.
EMPTY_FILE_MARK = "(empty)"
# Share of an old entry's words that must still be in the rewrite (or in its superseded
# list) for the entry to count as kept (or as replaced): rewording keeps most words.
ENTRY_KEPT_SHARE = 0.6
# A rewrite that loses more than this share of the previous entries without listing them
# as superseded is rejected and the old file kept. Not measured; a model may merge a few
# entries into one, but a quarter gone unnamed is a model that lost the file.
MAX_DROP_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Rewrite:
    memory: str
    superseded: list[str]
    no_change: bool = False


_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(.*\S)\s*$")
_FENCE = re.compile(r"^```[\w-]*\s*$")


def entries(text: str) -> list[str]:
    """The entries of a MEMORY.md: its bullets, or its plain lines if it has no bullets."""
    lines = text.splitlines()
    bullets = [m.group(1) for m in map(_BULLET.match, lines) if m]
    if bullets:
        return bullets
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def parse_rewrite(answer: str) -> Rewrite:
    """The new file and the superseded entries out of the model's answer."""
    text = answer.strip()
    if text.upper().rstrip(".") == NO_CHANGE:
        return Rewrite("", [], no_change=True)
    lines = [line for line in text.splitlines() if not _FENCE.match(line.strip())]
    cut = len(lines)
    for index in range(len(lines) - 1, -1, -1):
        heading = lines[index].strip().strip("#*: ").lower()
        if heading == "superseded" or heading.startswith("superseded:"):
            cut = index
            break
    head = lines[cut].strip().strip("#* ") if cut < len(lines) else ""
    inline = head.split(":", 1)[1].strip() if ":" in head else ""
    tail = ([inline if _BULLET.match(inline) else f"- {inline}"] if inline else []) + lines[
        cut + 1 :
    ]
    superseded = [
        bullet
        for bullet in (m.group(1) for m in map(_BULLET.match, tail) if m)
        if bullet.strip().lower().rstrip(".") not in ("none", "nothing", "n/a")
    ]
    body = lines[:cut]
    first = next(
        (i for i, line in enumerate(body) if line.lstrip().startswith("#") or _BULLET.match(line)),
        0,
    )
    preface = [line for line in body[:first] if line.strip()]
    if 0 < len(preface) <= 2 and preface[-1].rstrip().endswith(":"):
        body = body[first:]  # a preface such as "Here is the updated file:"
    return Rewrite("\n".join(body).strip(), superseded)


def _covered(entry: str, vocabulary: set[str]) -> bool:
    words = set(terms(entry))
    if not words:
        return True
    return len(words & vocabulary) / len(words) >= ENTRY_KEPT_SHARE


def _says_empty(line: str) -> bool:
    """Whether a line (a bullet's text, or the line) is the prompt's mark for no file."""
    bullet = _BULLET.match(line)
    return (bullet.group(1) if bullet else line).strip() == EMPTY_FILE_MARK


def check_rewrite(previous: str, rewrite: Rewrite, max_tokens: int) -> str | None:
    """Why the rewrite must be rejected, or None: the loss guard (`max_tokens`: the cap)."""
    new = rewrite.memory
    if not new.strip():
        return "the model returned an empty file"
    if "\ufffd" in new or any(ord(ch) < 32 and ch not in "\n\t" for ch in new):
        return "the model returned text with broken or control characters"
    tokens = estimate_tokens(new)
    if tokens > max_tokens:
        return f"the rewrite has ~{tokens} tokens, over the cap of {max_tokens}"
    lines = new.splitlines()
    # A bullet that ends with a colon leads into something, and is no entry: SmolLM2,
    # live, answered "1. The new file is:" over the prompt's "(empty)".
    if not any((m := _BULLET.match(line)) and not m.group(1).endswith(":") for line in lines):
        return "the rewrite has no bullet entries (not a memory file)"
    if any(label in new for label in _PROMPT_LABELS) or any(map(_says_empty, lines)):
        return "the model answered with what it was given, not a rewritten file"
    old_entries = entries(previous)
    if not old_entries:
        return None
    kept_words = set(terms(new))
    replaced_words = set(terms("\n".join(rewrite.superseded)))
    lost = [
        e for e in old_entries if not _covered(e, kept_words) and not _covered(e, replaced_words)
    ]
    share = len(lost) / len(old_entries)
    if share > MAX_DROP_SHARE:
        return (
            f"the rewrite drops {len(lost)} of {len(old_entries)} entries without naming them "
            f"as superseded (more than {MAX_DROP_SHARE:.0%}), e.g. {lost[0][:60]!r}"
        )
    return None
