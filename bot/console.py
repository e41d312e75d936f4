"""The console channel: `mnemobot chat`, the same pipeline and commands as Telegram.

Interactive at a terminal; with piped stdin it answers each input line on stdout and
exits 0 at end of input, so scripts can drive it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from bot.app import App
from bot.commands import parse_command
from systems.context import ChatRef


async def _read_line(stream: TextIO) -> str | None:
    line = await asyncio.to_thread(stream.readline)
    return None if line == "" else line


async def run_console(
    app: App,
    *,
    chat_id: str = "local",
    user_id: str = "local",
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    interactive = stdin.isatty() and stdout.isatty()
    chat = ChatRef(channel="console", chat_id=chat_id, user_id=user_id)

    def say(text: str) -> None:
        stdout.write((f"bot> {text}" if interactive else text) + "\n")
        stdout.flush()

    if interactive:
        say(f"mnemobot console, chat {chat.key}. Type /help for commands, Ctrl-D to quit.")
    while True:
        if interactive:
            stdout.write("you> ")
            stdout.flush()
        line = await _read_line(stdin)
        if line is None:
            if interactive:
                stdout.write("\n")
            return 0
        if not line.strip():
            continue
        command = parse_command(line)
        if command is not None:
            say(await app.commands.run(chat, command))
            continue
        outcome = await app.assistant.handle_text(chat, line)
        if outcome is not None:
            say(outcome.reply)
