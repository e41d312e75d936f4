"""What forgetting erases: the texts an item holds, the items that go with it, and a filter.

Forgetting is by text, not only by id: an item's words live on in other files (the turn's
daily-note line, the session's messages, a MEMORY.md bullet written from them), and those
copies are found by the *needles* of the item, lower-cased and with runs of white space
made one:

- what the person said: the user side of a turn (without the "User: " label), a fact's
  content; and, past the daily note's 200 characters, the start a note line keeps of it;
- the identifiers in it, on either side of a turn: codes mixing letters and digits
  (QX-7731-ZEBRA), numbers of five digits or more (phones, accounts), e-mail addresses.
  A paraphrase ("the locker code is QX-7731-ZEBRA") still carries them;
- the value of a slot it states ("12 Baker Street" of "my address is ...").

The assistant's own words are not needles: its stock phrases ("Noted, I'll remember
that.") recur in every conversation, and erasing them would erase other turns.

Items go together as a turn goes with what was learned from it: forgetting a turn forgets
the facts extracted from it (same message and time), forgetting a fact forgets the turn it
was said in; then every item holding one of the needles goes too (`items_to_forget`).

`ForgottenTexts` is what a reader of memory (consolidation, the compaction flush and
summary) uses to leave out what is waiting to be erased (`pending`, until maintenance has
erased it from every file).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from mnemobot.memory.notes.daily_notes import FORGOTTEN_MARK, USER_CHARS
from mnemobot.memory.store.items import ItemType, MemoryItem, normalize_content
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.text.terms import terms
from mnemobot.memory.upkeep.forgetting import pending_needles
from mnemobot.memory.upkeep.text_redaction import holds_forgotten, redact_forgotten
from mnemobot.memory.write.fact_slots import slot_statements

# "User: ", "Assistant: ", "Ada: ", "User (continued): ": a speaker label before a text.
_LABEL = re.compile(r"^[^\s:][^:\n]{0,39}:\s+")
_ASSISTANT_LINE = "\nAssistant: "
# A needle shorter than this ("ok", "NY") would redact unrelated lines everywhere.
MIN_NEEDLE_CHARS = 4
_TOKEN = re.compile(r"[\w@.+/-]+")
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")
# Dates and times name no one thing ("2026-11-25", "12:30", "25.11.2026").
_DATE_OR_TIME = re.compile(r"^\d{1,4}([-./:])\d{1,2}(\1\d{1,4})?$")
_TRAILING = ".,;:!?)-/"
# Most items a query may forget at once: more means the query is too broad ("code" in a
# programmer's chat), and nothing is forgotten.
FORGET_QUERY_MAX_ITEMS = 20


def identifiers(text: str) -> list[str]:
    """Tokens that name one thing: codes of letters and 3+ digits, 5+ digit numbers, e-mails."""
    found = []
    for raw in _TOKEN.findall(text):
        token = raw.strip(_TRAILING)
        if len(token) < 5 or _DATE_OR_TIME.match(token):
            continue
        digits = sum(c.isdigit() for c in token)
        letters = sum(c.isalpha() for c in token)
        if _EMAIL.match(token) or digits >= 5 or (digits >= 3 and letters >= 1):
            found.append(token.lower())
    return list(dict.fromkeys(found))


def _unlabelled(text: str) -> str:
    return _LABEL.sub("", text.strip(), count=1)


def _without_cut_mark(text: str) -> str:
    return text.rstrip().removesuffix("…").rstrip()


def needles_of(content: str, *, slot_values: bool = True) -> list[str]:
    """The texts to erase with an item of this content (see the module docstring)."""
    said, _, answer = content.partition(_ASSISTANT_LINE)
    if content.startswith("Assistant: "):
        said, answer = "", content
    said = _unlabelled(said)
    needles = []
    whole = normalize_content(said)
    if len(whole) >= MIN_NEEDLE_CHARS:
        needles.append(whole)
    if len(said) > USER_CHARS:
        # A daily note keeps the first 200 characters of a message, on one line.
        one_line = said.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
        needles.append(normalize_content(one_line[:USER_CHARS]))
    needles += identifiers(said) + identifiers(_without_cut_mark(answer))
    for statement in slot_statements(said) if slot_values else ():
        value = normalize_content(statement.value)
        if len(value) >= MIN_NEEDLE_CHARS:
            needles.append(value)
    return [n for n in dict.fromkeys(needles) if n]


def _message_refs(item: MemoryItem) -> frozenset[str]:
    return frozenset(r for r in item.references if not r.startswith(("file:", "promotedFrom:")))


def _same_turn(item: MemoryItem, other: MemoryItem) -> bool:
    """Whether two items were learned from the same turn: they share a message, or, where
    the channel gives messages no ids (the console), they have the same time and one's
    words are within the other's (a fact is a sentence of its turn)."""
    refs, other_refs = _message_refs(item), _message_refs(other)
    if refs or other_refs:
        return bool(refs & other_refs)
    if item.created_at != other.created_at:
        return False
    text, other_text = normalize_content(item.content), normalize_content(other.content)
    return normalize_content(_unlabelled(item.content)) in other_text or (
        normalize_content(_unlabelled(other.content)) in text
    )


def items_to_forget(
    items: Iterable[MemoryItem], item: MemoryItem, promoted_from: str
) -> tuple[list[MemoryItem], list[str]]:
    """The items that go with `item`, and the needles of them all.

    A turn takes the items learned from it (see `_same_turn`); any other item takes its
    turns and the wordings it was merged from (references `promoted_from<id>`). Then every
    item whose text holds a needle of these goes too. A slot value is a needle of the named
    item only: "I work as a nurse", said in the turn of a forgotten address, stays a fact.
    """
    if item.type is ItemType.DIGEST:
        # A day's digest is made of its turns' words, and they stay: it goes alone.
        return [item], []
    everything = list(items)
    by_id = {other.id: other for other in everything}
    named: dict[str, MemoryItem] = {item.id: item}
    for ref in item.references:
        source = by_id.get(ref[len(promoted_from) :]) if ref.startswith(promoted_from) else None
        if source is not None:
            named[source.id] = source
    is_turn = item.type is ItemType.TURN
    chosen = dict(named)
    for other in everything:
        # A digest names every message of its day: it is written anew without the turn
        # (`memory.upkeep.digest_days`), not forgotten with it, unless it holds a needle (below).
        if other.id in chosen or other.type is ItemType.DIGEST or not _same_turn(item, other):
            continue
        if is_turn or other.type is ItemType.TURN:
            chosen[other.id] = other
    needles = [
        needle
        for one in chosen.values()
        for needle in needles_of(one.content, slot_values=one.id in named)
    ]
    forgotten = ForgottenTexts(tuple(dict.fromkeys(needles)))
    for other in everything:
        if other.id not in chosen and forgotten.holds(other.content):
            chosen[other.id] = other
    return list(chosen.values()), list(forgotten.needles)


@dataclass(frozen=True, slots=True)
class ForgottenTexts:
    """Texts forgotten and not yet erased from every file: what readers must leave out."""

    needles: tuple[str, ...] = ()

    @classmethod
    def pending(cls, paths: ScopePaths) -> ForgottenTexts:
        """The scope's texts waiting for erasure (a read of one small file, usually absent)."""
        return cls(tuple(pending_needles(paths)))

    def __bool__(self) -> bool:
        return bool(self.needles)

    def holds(self, text: str) -> bool:
        return holds_forgotten(text, self.needles)

    def redact(self, text: str) -> str:
        """`text`, or the forgotten mark if it holds a forgotten text; a conversation
        summary loses only its sentences holding one (`text_redaction`)."""
        return redact_forgotten(text, self.needles)

    def keep_lines(self, text: str) -> str:
        """`text` without the lines that hold a forgotten text (or are the forgotten mark)."""
        if not self.needles and FORGOTTEN_MARK not in text:
            return text
        return "\n".join(
            line
            for line in text.split("\n")
            if not self.holds(line) and not is_forgotten_mark(line)
        )


_MARK_LINE = re.compile(r"^(\[\d\d:\d\d\]\s*)?(-\s*)?" + re.escape(FORGOTTEN_MARK) + r"\s*$")


def is_forgotten_mark(line: str) -> bool:
    """A line left where a forgotten one was ("[12:30] [forgotten]")."""
    return bool(_MARK_LINE.match(line.strip()))


# A memory-file line shorter than this would redact unrelated lines everywhere.
MIN_LINE_NEEDLE_CHARS = 8
_CLOCK = re.compile(r"^\[\d\d:\d\d\]\s*")


@dataclass(frozen=True, slots=True)
class ForgetOutcome:
    """What a forget by query removed: items, and lines of MEMORY.md and daily notes."""

    items: list[MemoryItem] = field(default_factory=list)
    lines: int = 0
    # Items the query matched when that was too many to forget at once (then none went).
    too_many: int = 0


def _holding_part(line: str, wanted: set[str]) -> str:
    """The text of a note line that holds every wanted term: what the user said (or the
    fact a flush noted), else the answer, else the whole line."""
    body = _CLOCK.sub("", line.strip()).lstrip("-*• ")
    said, _, answer = body.partition(" | Assistant: ")
    for part in (_unlabelled(said), answer):
        if part and wanted <= set(terms(part)):
            return part
    return body


def lines_holding(paths: ScopePaths, wanted: set[str]) -> list[str]:
    """The MEMORY.md bullets and daily-note lines holding every term of `wanted`: the part
    of each that does (see `_holding_part`)."""
    found: list[str] = []
    files = [paths.memory_file]
    if paths.directory.is_dir():
        files += sorted(paths.directory.glob("????-??-??.md"))
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError):
            continue
        for line in text.splitlines():
            if line.startswith("#") or not wanted <= set(terms(line)):
                continue
            part = _holding_part(line, wanted).strip()
            if len(part) >= MIN_LINE_NEEDLE_CHARS:
                found.append(part)
    return list(dict.fromkeys(found))
