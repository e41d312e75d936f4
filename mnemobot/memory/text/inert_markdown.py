"""Remembered text made inert: it can say anything, but it cannot shape the prompt.

What people said is pasted into the system prompt under its memory sections. A user who
writes `# Operator notes` on a line of its own, or opens a code fence, would otherwise get
a heading (or a block) of their own in every later prompt of the chat, looking like part
of the bot's instructions. `inert_markdown` puts a backslash before every line start that
Markdown reads as structure: ATX headings (`#`), fences (three backticks or tildes), and
setext underlines (a line of only `=` or `-`, which turns the line above into a heading).
The words stay readable; only the structure is gone. A pure function, cheap enough for
every line of every pack: text without such a line start is returned as it is.
"""

from __future__ import annotations

import re

# A line (after any indentation) that starts a heading or a fence, or is a setext underline.
_STRUCTURE = re.compile(r"^([ \t]*)(?=#|```|~~~|[=-]+[ \t]*$)", re.MULTILINE)
_QUICK = ("#", "```", "~~~", "=", "-")


def inert_markdown(text: str) -> str:
    """`text` with every heading, fence and setext-underline line start escaped."""
    if not any(mark in text for mark in _QUICK):
        return text
    return _STRUCTURE.sub(lambda match: match.group(1) + "\\", text)
