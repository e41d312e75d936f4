"""The user's words of a turn that got no answer (the model failed, the user sent /stop):
remembered like any message's, with no reply, and once.

Such a turn may be handed in again after a crash (its one-line apology was not delivered
yet), and the later run may get an answer: the words must not be written a second time
then. The write here finds what a first, cut-short write left and adds only the rest: the
daily note line, dated by the message's own time, is looked for in the day's note; the
items come out the same and the store merges a repeat into the item it holds.
`words_noted` tells a later run of the message that such a write began.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from mnemobot.config.zones import time_in
from mnemobot.memory.notes.daily_notes import (
    append_daily_note,
    daily_note_path,
    format_note_line,
)
from mnemobot.memory.services.record import MemoryRecord, similar_finder
from mnemobot.memory.store.items import TurnMemoryEvent
from mnemobot.memory.write.write_path import write_turn

# How much of the end of a day's note is read to find the line an earlier run wrote: a
# message is run again right after a restart, a few lines (at most ~600 bytes each) after
# its own, and a hand-edited note may be far larger than a day of chat.
NOTE_TAIL_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class UnansweredTurn:
    """What the user said in a turn that got no answer, and when (the message's own time,
    the same on every run of the message)."""

    scope: str
    chat_key: str
    user_text: str
    at: float
    tz: tzinfo
    message_refs: Sequence[str] = ()
    speaker: str | None = None
    # Whom the daily note line names (a group's member; None: "User").
    note_speaker: str | None = None
    tags: Sequence[str] = ()
    # The speaker is the scope's one person (`TurnMemoryEvent.sole_speaker`).
    sole_speaker: bool = False


def _note_tail(note: Path) -> str:
    try:
        with open(note, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - NOTE_TAIL_BYTES))
            return handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _note_line(record: MemoryRecord, turn: UnansweredTurn) -> tuple[str, bool]:
    """The turn's daily note line, and whether its day's note holds it already."""
    directory = record.scopes.paths(turn.scope).directory
    line = format_note_line(turn.user_text, "", turn.at, turn.tz, turn.note_speaker)
    note = daily_note_path(directory, time_in(turn.at, turn.tz).date())
    tail = _note_tail(note)
    # Before the line left out the missing answer it ended " | Assistant: ": a message a
    # crash left half-written under that version is found after an upgrade too.
    return line, f"{line}\n" in tail or f"{line} | Assistant: \n" in tail


def words_noted(record: MemoryRecord, turn: UnansweredTurn) -> bool:
    """Whether an earlier run of the message wrote its words as a turn without an answer
    (its daily note line, written first, is there): then a later run finishes that write
    (`record_unanswered`) and adds its answer alone. For a message handed in again, never
    on every turn: it reads the day's note."""
    with record.scopes.lock(turn.scope):
        return _note_line(record, turn)[1]


def record_unanswered(record: MemoryRecord, turn: UnansweredTurn) -> int:
    """Write the turn's daily note line (no reply) and its items, each unless an earlier
    write of the same message left it; the number of items stored."""
    if not turn.user_text.strip():
        return 0
    with record.scopes.loaded(turn.scope) as loaded:
        if not _note_line(record, turn)[1]:
            append_daily_note(
                record.scopes.paths(turn.scope).directory,
                turn.user_text,
                "",
                at=turn.at,
                tz=turn.tz,
                speaker=turn.note_speaker,
            )
        # Items an earlier, cut-short write stored are the same items again (the same
        # words, the same fingerprints): the store merges each into the one it holds.
        event = TurnMemoryEvent(
            scope=turn.scope,
            chat_key=turn.chat_key or turn.scope,
            user_text=turn.user_text,
            assistant_text="",
            at=turn.at,
            message_refs=list(turn.message_refs),
            speaker=turn.speaker,
            sole_speaker=turn.sole_speaker,
            tags=list(turn.tags),
        )
        written = write_turn(
            loaded.store,
            event,
            similar=similar_finder(record.scopes, turn.scope),
            extraction=record.extraction,
        )
        return len(written.stored)
