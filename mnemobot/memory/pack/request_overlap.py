"""What a request already carries, so the MemoryPack does not pay for it twice.

The model gets the session's messages (the current window of the conversation) beside the
system prompt. A memory item recorded from one of those messages would repeat it: in a
live chat almost all of a naive pack is such repeats. An item is *carried* when it is an
episode of those messages: all of its message refs (`tg:123`, ...) are among the refs of
the request's messages, or, for an item without refs (a console chat), each of its lines,
without the speaker label, is a piece of a message the request holds. A message and an
item are the same message's only when the item was recorded when the message was or
later: a workspace moved to another bot has that bot's message `tg:1` in the request,
and the earlier bot's message 1 is `tg-bot<id>:1` in the session and in memory
(`memory.upkeep.ref_numbering`), or `tg:1` in memory that moved before memory renamed
such refs.

A durable (semantic, procedural) item is carried only when its whole statement is in
one of those messages as said ("I work as a nurse at St. Mary" while that message is still
in the window): a fact in other words (a summary, the model's rewrite) may say more than
the message does and stays, and once the window moves past the message the fact is what
is left of it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mnemobot.base.clock import from_iso
from mnemobot.memory.notes.daily_notes import NOTED_LABEL, OMITTED_MARK
from mnemobot.memory.store.items import SPEAKER_TAG, Layer, MemoryItem, normalize_content

# References that name something other than a message (a file, a promoted item's source).
_NON_MESSAGE_PREFIXES = ("file:", "promotedFrom:", "session:")
# A session's ref of a message an earlier bot numbered (`bot.turn.received`): memory
# names it so too, or, renamed before memory renamed such refs, `tg:<n>`.
_EARLIER_BOTS_REF = re.compile(r"^tg-bot\d+:(?=\d)")
# Times are kept to the second: an item of a message is recorded at its turn or later.
_SAME_MESSAGE_SLACK_SECONDS = 1.0
# A daily note line: "[HH:MM] User: ... | Assistant: ..." (memory.daily_notes), "Anna: ..."
# in a group; not a fact the model noted. A turn the model never answered (its server was
# down) ends "| Assistant:" with nothing after it once the notes are trimmed.
_NOTE_LINE = re.compile(
    rf"^\[\d\d:\d\d\] (?!{NOTED_LABEL}: )[^|\n]{{1,64}}?: (.*?)(?: \| Assistant:(?: .*)?)?$"
)
# What `cut_text` leaves at the end of a shortened reply.
_CUT_MARKS = " …."


@dataclass(frozen=True, slots=True)
class RequestOverlap:
    """The messages of one request, to ask which memory items they already carry."""

    # Each message ref as memory names it -> the earliest time a message of the request
    # with that ref was said (-inf when a message does not say).
    refs: Mapping[str, float]
    # Every message's text, normalized, joined with a separator no text contains.
    text: str

    @classmethod
    def of_messages(cls, messages: Iterable[Mapping[str, Any]]) -> RequestOverlap:
        refs: dict[str, float] = {}
        texts: list[str] = []
        for message in messages:
            at = _time_of(message.get("at"))
            for ref in message.get("refs") or ():
                for name in {str(ref), _EARLIER_BOTS_REF.sub("tg:", str(ref))}:
                    refs[name] = min(at, refs.get(name, at))
            content = message.get("content")
            if isinstance(content, str) and content.strip():
                texts.append(normalize_content(content))
        return cls(refs, "\x00".join(texts))

    def carries(self, item: MemoryItem) -> bool:
        if item.layer is not Layer.EPISODIC:
            statement = item.content
            if any(tag.startswith(SPEAKER_TAG) for tag in item.tags):
                statement = statement.split(": ", 1)[-1]  # "Ada: I work at..."
            statement = normalize_content(statement).rstrip(_CUT_MARKS)
            # (No statement holds the separator, so one found is inside one message.)
            return bool(statement) and statement in self.text
        message_refs = [r for r in item.references if not r.startswith(_NON_MESSAGE_PREFIXES)]
        if message_refs:
            recorded = item.created_at + _SAME_MESSAGE_SLACK_SECONDS
            return all(self.refs.get(ref, math.inf) <= recorded for ref in message_refs)
        if not self.text:
            return False
        for line in item.content.splitlines():
            said = normalize_content(line.split(": ", 1)[-1]).rstrip(_CUT_MARKS)
            if said and said not in self.text:
                return False
        return True

    def without_carried_notes(self, notes: str) -> str:
        """Daily-note text without the lines of turns the request carries, and without
        headings left with nothing under them."""
        if not self.text:
            return notes
        kept: list[str] = []
        for line in notes.splitlines():
            match = _NOTE_LINE.match(line)
            if match and normalize_content(match.group(1)) in self.text:
                continue
            kept.append(line)
        return _drop_empty_headings(_without_bare_ellipses(kept))


def _without_bare_ellipses(lines: list[str]) -> list[str]:
    """Without a "…" (earlier notes left out) that no note line follows any more."""
    out: list[str] = []
    for number, line in enumerate(lines):
        if line.strip() == OMITTED_MARK:
            following = next((other for other in lines[number + 1 :] if other.strip()), None)
            if following is None or following.startswith("#") or following.strip() == OMITTED_MARK:
                continue
        out.append(line)
    return out


def _drop_empty_headings(lines: list[str]) -> str:
    out: list[str] = []
    for line in reversed(lines):
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            following = next((other for other in reversed(out) if other.strip()), None)
            below = following is not None and (
                not following.startswith("#") or len(following) - len(following.lstrip("#")) > level
            )
            if not below:
                continue
        out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(reversed(out))).strip("\n")


def _time_of(stamp: object) -> float:
    """A session message's `at` as seconds; -inf when it has none (matched by ref alone)."""
    if not isinstance(stamp, str):
        return -math.inf
    try:
        return from_iso(stamp)
    except ValueError:
        return -math.inf
