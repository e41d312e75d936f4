"""A chat moved to another bot: the earlier bot's message refs get names of their own.

Telegram numbers a private chat's (and a basic group's) messages per account. A workspace
moved to a new bot token gets that bot's message 1 again, so memory held two `tg:1`s and
the `memory` tool's `read tg:1` answered with both. The conversation already names the
earlier bot's messages `tg-bot<id>:<n>` (`bot.turn.received`); memory's items are renamed
the same way, once, when the scope first sees the new bot:

- `memory/<scope>/.refs-numbering.json` records which bot numbers the scope's `tg:<n>`
  refs. A scope without it (memory from before it was kept) is taken as the current
  bot's (the bot that upgrades is the one that received those messages), except what
  was said before a move the conversation still shows (its messages named
  `tg-bot<id>:<n>` there, then the new bot's).
- Seeing another bot, the mark first records the change and its time (`renaming`);
  then the item files are rewritten, each atomically: every `tg:<n>` of an item said
  before that time (its references, and the lines of a day's digest) becomes
  `tg-bot<earlier>:<n>`; then the mark drops `renaming`. A crash anywhere leaves the mark
  to say what is still to do, and doing it again changes nothing already renamed. Items
  of the new bot are said at or after that time, so a rename finished late (maintenance
  held the files) never takes them for the earlier bot's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.clock import from_iso
from mnemobot.memory.notes.digests import SPAN_TAG_PREFIX
from mnemobot.memory.store.items import ItemType
from mnemobot.memory.store.scope_paths import ScopePaths

MARK_FILE_NAME = ".refs-numbering.json"
EARLIER_BOT_PREFIX = "tg-bot"
# A message ref in the chat's own numbering (a migrated group's `tg:<chat>:<n>` is not).
_LIVE_REF = re.compile(r"^tg:(\d+)$")
# A digest line's refs: `- [tg:1, tg:2] Ada: ...` (`memory.notes.digests`).
_DIGEST_LINE_REFS = re.compile(r"^(\s*- \[)([^\]]+)(\] )", re.MULTILINE)


def earlier_bots_ref(bot: str, ref: str) -> str:
    """`tg:<n>` as the earlier bot `bot`'s message; any other ref as it is."""
    match = _LIVE_REF.match(ref)
    return f"{EARLIER_BOT_PREFIX}{bot}:{match.group(1)}" if match else ref


@dataclass(frozen=True, slots=True)
class Renaming:
    """The `tg:<n>` refs of items said before `before` (epoch seconds) are bot `bot`'s."""

    bot: str
    before: float


@dataclass(frozen=True, slots=True)
class NumberingMark:
    numbering: str
    # Renames recorded and not yet done, oldest first.
    renaming: tuple[Renaming, ...] = ()

    def to_json(self) -> bytes:
        data: dict[str, Any] = {"refsNumberedBy": self.numbering}
        if self.renaming:
            data["renaming"] = [{"bot": r.bot, "before": r.before} for r in self.renaming]
        return orjson.dumps(data)


def read_mark(paths: ScopePaths) -> NumberingMark | None:
    """The scope's mark; None when it has none (or one no longer readable)."""
    try:
        data = orjson.loads((paths.directory / MARK_FILE_NAME).read_bytes())
        renaming = tuple(
            Renaming(str(r["bot"]), float(r["before"])) for r in data.get("renaming") or ()
        )
        mark = NumberingMark(str(data["refsNumberedBy"]), renaming)
    except (FileNotFoundError, AttributeError, KeyError, TypeError, ValueError):
        return None
    # A bot's id is digits (a hand-edited "null" is none), a move's time a number.
    bots = [mark.numbering, *(r.bot for r in mark.renaming)]
    if not all(bot.isdigit() for bot in bots) or not all(
        math.isfinite(r.before) for r in mark.renaming
    ):
        return None
    return mark


def write_mark(paths: ScopePaths, mark: NumberingMark) -> None:
    write_atomic(paths.directory / MARK_FILE_NAME, mark.to_json())


def noted_numbering(
    paths: ScopePaths, numbering: str, at: float, unmarked: Sequence[tuple[str, float]] = ()
) -> NumberingMark:
    """The mark once `numbering` (a bot's id) numbers the scope's messages from `at` on:
    written when it changed, with what is to be renamed. `unmarked`: for a scope without
    a mark, the moves (earlier bot, when the next bot's first message came) the
    conversation shows, made before memory kept a mark."""
    mark = read_mark(paths)
    if mark is not None and any(r.before > at for r in mark.renaming):
        # No move is later than now: a hand-edited time would rename the current bot's.
        mark = replace(mark, renaming=tuple(r for r in mark.renaming if r.before <= at))
    if mark is None:
        # Times kept to the second, as items' are: the new bot's first turn is not earlier.
        mark = NumberingMark(numbering, tuple(Renaming(b, float(int(t))) for b, t in unmarked))
    elif mark.numbering != numbering:
        moved = Renaming(mark.numbering, float(int(at)))
        mark = NumberingMark(numbering, (*mark.renaming, moved))
    else:
        return mark
    write_mark(paths, mark)
    return mark


def rename_earlier_refs(paths: ScopePaths, renaming: tuple[Renaming, ...]) -> int:
    """Rewrite the scope's item files with the earlier bots' refs renamed; how many item
    lines changed."""
    return sum(rename_in_file(path, renaming) for path in paths.item_files())


def rename_in_file(path: Path, renaming: tuple[Renaming, ...]) -> int:
    """One item file rewritten (atomically) with the earlier bots' refs renamed; how many
    of its lines changed. Oldest rename first: what it renamed no longer looks like
    `tg:<n>`."""
    lines = path.read_bytes().split(b"\n")
    changed = 0
    for number, line in enumerate(lines):
        if b'"tg:' not in line:
            continue
        renamed = _renamed_line(line, renaming)
        if renamed is not None:
            lines[number] = renamed
            changed += 1
    if changed:
        write_atomic(path, b"\n".join(lines))
    return changed


def _renamed_line(line: bytes, renaming: tuple[Renaming, ...]) -> bytes | None:
    """The item line with its earlier bots' refs renamed; None when nothing changes (or
    it is no item: a tombstone, a torn line)."""
    try:
        record = orjson.loads(line)
        said = _said_at(record) if isinstance(record, dict) else None
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    if said is None:
        return None
    references = record.get("references")
    if not isinstance(references, list):
        return None
    content = record.get("content")
    digest = record.get("type") == ItemType.DIGEST.value and isinstance(content, str)
    last = _last_said_at(record, said)
    for earlier in renaming:
        # An item said again after the move (a turn "Thanks!", a fact restated) holds the
        # new bot's refs beside the earlier one's, and which is whose is not kept: it
        # keeps them all as they are, rather than give the new bot's to the earlier one.
        if said < earlier.before and (digest or last < earlier.before):
            references = [
                earlier_bots_ref(earlier.bot, r) if isinstance(r, str) else r for r in references
            ]
            if digest:
                content = _DIGEST_LINE_REFS.sub(partial(_digest_refs, earlier.bot), content)
    if references == record["references"] and content == record.get("content"):
        return None
    record["references"] = references
    if digest:
        record["content"] = content
    return orjson.dumps(record)


def _said_at(record: dict[str, Any]) -> float:
    """When the messages an item line names were said: its time; for a day's digest
    (written after its day), the end of the day it lists."""
    if record.get("type") == ItemType.DIGEST.value:
        for tag in record.get("tags") or ():
            if isinstance(tag, str) and tag.startswith(SPAN_TAG_PREFIX):
                return float(tag[len(SPAN_TAG_PREFIX) :].partition("-")[2]) - 1
    return from_iso(str(record["createdAt"]))


def _last_said_at(record: dict[str, Any], said: float) -> float:
    """When the item was last said (merged statements keep the latest); `said` if unknown."""
    try:
        return max(said, from_iso(str(record["updatedAt"])))
    except (KeyError, TypeError, ValueError):
        return said


def _digest_refs(bot: str, match: re.Match[str]) -> str:
    refs = ", ".join(earlier_bots_ref(bot, ref) for ref in match.group(2).split(", "))
    return f"{match.group(1)}{refs}{match.group(3)}"
