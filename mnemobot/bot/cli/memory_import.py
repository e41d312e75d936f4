"""`mnemobot memory import FILE --chat CHAT`: a Telegram Desktop export into a chat's memory.

Every message goes through the live write path (`MemoryRecord.record_turn`), as a turn
said by its author at its original time, with the message ref the live bot gives it
(`tg:<id>`) where Telegram numbers messages for everyone (supergroups, channels), else a
ref of the import's own (`tg-export:<id>`: a private chat's numbers are each account's
own, see `export_file.SHARED_NUMBERING_TYPES`): the daily note line, the turn item,
whatever extraction derives and promotes; at the end, the digest of each finished day
(`memory.notes.digests`).

The file is read and checked whole first (`bot.channels.telegram.export_file`): a bad
file writes nothing and gets one line saying where and what is wrong. Then it is read
again, a message at a time, as the messages are written: memory holds neither the file
nor its messages. Nor all that the import wrote: once the scope is big enough for an
index file, it is loaded anew every `RELOAD_EVERY_MESSAGES` (`_settle`), and its items
leave memory for their files as at a bot's start. Progress goes to stderr
(`bot.cli.progress.ImportProgress`: a bar on a terminal, else a line every 30 s), unless
`--no-progress`.

Re-importing adds nothing twice: a message whose ref the scope already holds (in an item,
or in `imported-messages.txt`, the list of every ref imported, small talk included) is
skipped, and so is one an import before refs of their own listed as `tg:<id>`. An import
stopped half way, killed even, leaves whole messages and at most one cut short, and the
same command run again finishes that one first (`bot.cli.import_journal`), then the rest:
the items are those of an import never stopped.

`--assistant NAME`: the chat was with an assistant (a bot) whose messages carry NAME in
the export. Its messages are then kept as the bot keeps its own replies: each shares one
turn with the message it answers (the one right before it), cut to
`extraction.turnAssistantChars` in the item like a live reply, the turn's refs naming
both; an assistant message that answers nothing (two in a row, or the first of the chat)
is a turn of the reply alone. An export of a chat with a bot (Telegram Desktop's
`bot_chat`) is imported so by default, with the bot as the assistant: that is how the bot
would have kept the chat live. Without it (or with `--no-assistant`) every author's
message is a turn of its own, kept whole: an assistant's long replies would then crowd
out what the person said.

A forward (`forwarded_from` in the export) is kept as the live bot keeps one: its words
are its original author's, at the forward's date (the export has no earlier one), never
words of whoever passed it on; its turn is tagged "forwarded" and its daily note line says
whose words they were. An assistant's answer to a forward shares its turn, as live.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from mnemobot.base.atomic_file import append_bytes, held_appends
from mnemobot.base.counts import counted
from mnemobot.bot.channels.telegram.export_file import (
    ChatExport,
    ExportedMessage,
    ExportError,
    read_export,
)
from mnemobot.bot.cli.import_journal import ImportJournal, finish_interrupted
from mnemobot.bot.cli.memory_commands import served_by_a_bot
from mnemobot.bot.cli.memory_scope import open_chat_memory
from mnemobot.bot.cli.progress import ImportProgress, import_progress
from mnemobot.bot.cli.startup import fail
from mnemobot.bot.cli.workspace_guard import MEMORY_COMMAND_RUNNING, MemoryCommandLock
from mnemobot.config.runtime import MemoryConfig, RuntimeConfig
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ForwardedText
from mnemobot.memory.upkeep.digest_days import write_missing_digests
from mnemobot.memory.write.write_path import FORWARDED_TAG

log = logging.getLogger(__name__)

IMPORTED_REFS_FILE = "imported-messages.txt"
# Messages written between two loads of a big scope (`_settle`). Each load of a scope of
# 300,000 items reads what was written since the last (1-2 s); without them, all an
# import wrote stayed in memory to its end. With the export read as a stream, 300,000
# messages (53 MB) took 508 MB peak RSS and 2:12, against 808 MB and 1:56 before (see
# docs/measured.md, "Importing a long chat"); the peak is the last load.
RELOAD_EVERY_MESSAGES = 50_000
# The running bot keeps a chat's memory loaded and would answer from it without what
# another process writes (it saw an import only after a restart), while both write the
# same files.
IMPORT_WHILE_SERVED = (
    "a running `mnemobot run` serves this workspace and would not see the import: stop "
    "the bot, import, then start it again"
)


def imported_refs(scopes: ScopeRuntime, scope: str) -> set[str]:
    """The refs every earlier import into the scope listed."""
    listed = scopes.paths(scope).directory / IMPORTED_REFS_FILE
    if not listed.is_file():
        return set()
    return {line.strip() for line in listed.read_text().splitlines() if line.strip()}


def import_command(args: argparse.Namespace) -> int:
    opened = open_chat_memory(args, must_exist=False)
    if isinstance(opened, str):
        return fail(opened)
    memory, config = opened
    try:
        paths = WorkspacePaths(memory.workspace)
        held = MemoryCommandLock(paths)
        if not held.acquire():
            return fail(MEMORY_COMMAND_RUNNING)
        try:
            return _import_held(args, memory, config, paths)
        finally:
            held.release()
    finally:
        # Every way out, an unreadable export too: the memory holds worker threads and the
        # embedding client (in a process that goes on, e.g. a test, they would stay open).
        memory.close()


def _import_held(
    args: argparse.Namespace,
    memory: WorkspaceMemory,
    config: RuntimeConfig,
    paths: WorkspacePaths,
) -> int:
    """The import, with the workspace held against a `run` starting meanwhile."""
    if served_by_a_bot(paths):
        return fail(IMPORT_WHILE_SERVED)
    tz = config.assistant.tzinfo()
    try:
        export = read_export(Path(args.file), tz)
    except ExportError as exc:
        return fail(str(exc))
    scope = args.chat
    assistant = getattr(args, "assistant", None)
    if assistant is None and not getattr(args, "no_assistant", False):
        assistant = export.bot
    elif export.bot is not None and assistant in {export.bot, *export.bot_names}:
        # The bot by any name it had, or the one of its own it is given beside a person
        # who calls themselves the same: its messages, told by its id.
        assistant = export.bot
    elif assistant is not None and assistant not in export.authors and export.all_authors:
        authors = ", ".join(sorted(export.authors)) or "none"
        return fail(
            f"--assistant: no message of {args.file} is from {assistant!r}; its authors: {authors}"
        )
    progress = None if args.no_progress else import_progress(export.count)
    try:
        imported, already = write_export(
            memory.record,
            scope,
            export,
            config=config.memory,
            tz=tz,
            assistant=assistant,
            progress=progress,
        )
    except ExportError as exc:
        # Changed since it was checked: what was written stays, a re-run finishes it.
        return fail(str(exc))
    finally:
        if progress is not None:
            progress.close()
    replies = f"; {assistant}'s messages kept as replies" if assistant is not None else ""
    print(
        f"imported {counted(imported, 'message')} of {export.name!r} into {scope}"
        f" ({already} already there, {export.skipped} without text or service messages"
        f" skipped{replies})"
    )
    return 0


@dataclass(frozen=True, slots=True)
class ImportedTurn:
    """What one `record_turn` of the import writes."""

    # Who said `text` (or passed on `forwarded`); None for a reply alone.
    author: str | None
    text: str
    reply: str
    at: float
    refs: list[str]
    # A forward's words, as their original author's (then `text` is "").
    forwarded: tuple[ForwardedText, ...] = ()


def export_turns(
    messages: Iterable[ExportedMessage], assistant: str | None = None
) -> Iterator[ImportedTurn]:
    """The messages as turns: each alone, or with `assistant`, its messages as the replies
    of the messages they answer (see the module docstring)."""
    waiting: ExportedMessage | None = None
    for message in messages:
        # A forward is someone's words passed on, never the assistant's reply.
        if assistant is None or message.author != assistant or message.forwarded_from:
            if waiting is not None:
                yield _turn_of(waiting)
            waiting = message
            continue
        if waiting is None:
            yield ImportedTurn(None, "", message.text, message.at, [message.ref])
        else:
            yield _turn_of(waiting, message)
            waiting = None
    if waiting is not None:
        yield _turn_of(waiting)


def _turn_of(message: ExportedMessage, reply: ExportedMessage | None = None) -> ImportedTurn:
    """The message's turn, with the assistant's `reply` to it if any."""
    refs = [message.ref] if reply is None else [message.ref, reply.ref]
    answer = "" if reply is None else reply.text
    if message.forwarded_from is None:
        return ImportedTurn(message.author, message.text, answer, message.at, refs)
    # No date of its own in the export: the forward's (a live forward's is the original's).
    passed_on = ForwardedText(message.forwarded_from, message.text, None, message.ref)
    return ImportedTurn(message.author, "", answer, message.at, refs, (passed_on,))


def write_export(
    record: MemoryRecord,
    scope: str,
    export: ChatExport,
    *,
    config: MemoryConfig,
    tz: tzinfo,
    assistant: str | None = None,
    progress: ImportProgress | None = None,
    reload_every: int = RELOAD_EVERY_MESSAGES,
) -> tuple[int, int]:
    """Write the export's new messages; (imported, already there). `reload_every`: messages
    written between two loads of a big scope (`_settle`)."""
    directory = record.scopes.paths(scope).directory
    with record.scopes.lock(scope):
        interrupted = finish_interrupted(directory)
        if interrupted is not None:
            # Its files were written past the store's view of them: read them anew.
            record.scopes.drop(scope)
            if not interrupted.finished:
                log.warning(
                    "memory import: the message %s was cut short by an earlier import and "
                    "the chat's memory was written since; it stays as far as it was written",
                    " + ".join(interrupted.refs),
                )
    listed = imported_refs(record.scopes, scope)
    # The items' refs the list does not hold (after an import, most are: not kept twice).
    held = {
        r
        for item in record.scopes.store(scope).items.values()
        for r in item.references
        if r not in listed
    }
    counts = {"new": 0, "read": 0}

    def new_messages() -> Iterator[ExportedMessage]:
        for message in export.messages():
            counts["read"] += 1
            if progress is not None:
                progress.read(counts["read"])
            # Only the import list tells an earlier import's `tg:<id>` from a live message's.
            ref = message.ref
            if ref not in listed and ref not in held and message.earlier_ref not in listed:
                counts["new"] += 1
                yield message

    listing = directory / IMPORTED_REFS_FILE
    journal = ImportJournal(directory)
    written = 0
    try:
        for turn in export_turns(new_messages(), assistant):
            # The turn's appends, its refs listed last, written as one step (the journal):
            # one by one, a kill after the turn's item lost what was derived from it.
            with held_appends() as appends:
                record.record_turn(
                    scope=scope,
                    user_text=turn.text,
                    assistant_text=turn.reply,
                    at=turn.at,
                    config=config,
                    tz=tz,
                    message_refs=turn.refs,
                    speaker=turn.author,
                    chat_key=scope,
                    forwarded=turn.forwarded,
                    tags=[FORWARDED_TAG] if turn.forwarded else [],
                )
                append_bytes(listing, "".join(f"{ref}\n" for ref in turn.refs).encode())
            try:
                journal.write(turn.refs, appends)
            except OSError:
                # The store is ahead of its files now, as after a write of its own that
                # failed: it reads them anew at its next use.
                record.scopes.drop(scope)
                raise
            written += len(turn.refs)
            if written >= reload_every:
                written = 0
                _settle(record, scope)
    finally:
        journal.close()
    # Nobody waits for a reply here: the finished days get their digests now, not at the
    # next maintenance.
    write_missing_digests(record.scopes.store(scope), tz, record.scopes.clock())
    return counts["new"], counts["read"] - counts["new"]


def _settle(record: MemoryRecord, scope: str) -> None:
    """Load the scope anew once it is big enough to keep an index file: its items then
    leave memory for their files (as at a bot's start), instead of all of an import's
    staying there to its end."""
    scopes = record.scopes
    if len(scopes.store(scope).items) < scopes.index_file_min_items:
        return
    scopes.reload(scope)
    # A load that read many lines written since the index file's save saves it again but
    # keeps those items; the next load takes them from the file (a stat per file).
    keeper = scopes.store(scope).index_load
    if keeper is not None and keeper.saved and scopes.store(scope).items.new:
        scopes.reload(scope)
