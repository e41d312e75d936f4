"""`mnemobot memory import FILE --chat CHAT`: a Telegram Desktop export into a chat's memory.

Every message goes through the live write path (`MemoryService.record_turn`), as a turn
said by its author at its original time, with the message ref the live bot gives it
(`tg:<id>`): the daily note line, the turn item, whatever extraction derives and promotes.

The file is read and checked whole first (`bot.channels.telegram.export_file`): a bad file writes
nothing and gets one line saying where and what is wrong. Re-importing adds nothing twice:
a message whose ref the scope already holds (in an item, or in `imported-messages.txt`,
the list of every ref imported, small talk included) is skipped. An import stopped half
way leaves whole messages only (each write is whole lines), and the same command run
again finishes it.
"""

from __future__ import annotations

import argparse
from datetime import tzinfo
from pathlib import Path

from mnemobot.bot.channels.telegram.export_file import ChatExport, ExportError, read_export
from mnemobot.bot.cli.memory_scope import open_chat_memory
from mnemobot.bot.cli.progress import terminal_progress
from mnemobot.bot.cli.startup import fail
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.atomic_file import append_bytes
from mnemobot.memory.service import MemoryService

IMPORTED_REFS_FILE = "imported-messages.txt"


def known_refs(memory: MemoryService, scope: str) -> set[str]:
    """Message refs the scope already holds: in its items and in its import list."""
    refs = {ref for item in memory.store(scope).items.values() for ref in item.references}
    listed = memory.paths(scope).directory / IMPORTED_REFS_FILE
    if listed.is_file():
        refs.update(line.strip() for line in listed.read_text().splitlines() if line.strip())
    return refs


def import_command(args: argparse.Namespace) -> int:
    opened = open_chat_memory(args, must_exist=False)
    if isinstance(opened, str):
        return fail(opened)
    memory, config = opened
    tz = config.assistant.tzinfo()
    try:
        export = read_export(Path(args.file), tz)
    except ExportError as exc:
        return fail(str(exc))
    scope = args.chat
    try:
        imported, already = write_export(memory, scope, export, config=config.memory, tz=tz)
    finally:
        memory.close()
    print(
        f"imported {imported} messages of {export.name!r} into {scope}"
        f" ({already} already there, {export.skipped} without text or service messages skipped)"
    )
    return 0


def write_export(
    memory: MemoryService, scope: str, export: ChatExport, *, config: MemoryConfig, tz: tzinfo
) -> tuple[int, int]:
    """Write the export's new messages; (imported, already there)."""
    known = known_refs(memory, scope)
    todo = [message for message in export.messages if message.ref not in known]
    listed = memory.paths(scope).directory / IMPORTED_REFS_FILE
    listed.parent.mkdir(parents=True, exist_ok=True)
    bar = terminal_progress(len(todo))
    try:
        for message in todo:
            memory.record_turn(
                scope=scope,
                user_text=message.text,
                assistant_text="",
                at=message.at,
                config=config,
                tz=tz,
                message_refs=[message.ref],
                speaker=message.author,
                chat_key=scope,
            )
            append_bytes(listed, f"{message.ref}\n".encode())
            if bar is not None:
                bar.advance(label=message.author)
    finally:
        if bar is not None:
            bar.close()
    return len(todo), len(export.messages) - len(todo)
