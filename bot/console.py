"""The console channel: `mnemobot chat`, the same pipeline, commands and lanes as Telegram.

At a terminal you can type while a reply is being written: lines wait in the chat's lane
(or are merged, with `console.queueMode: "collect"`), `/stop` cancels the reply and
`/status` answers at once. With piped stdin each line is answered before the next one is
read, so a script's output follows its input line by line; it exits 0 at end of input.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from contextlib import AbstractAsyncContextManager
from typing import TextIO

from bot.app import App
from bot.channels.dispatch import ChatDispatcher
from bot.channels.lanes import LaneConfig, LaneJob
from bot.commands import parse_command
from systems.context import ChatRef

CHANNEL = "console"
# Leaving the console early (Ctrl-C, a closed terminal) means now: a running reply is
# cancelled at once (its session is still saved) and queued lines are kept unanswered.
LEAVE_GRACE_SECONDS = 0.0
PROMPT = "you> "
CLEAR_LINE = "\r\x1b[2K"


async def _read_line(stream: TextIO) -> str | None:
    line = await asyncio.to_thread(stream.readline)
    return None if line == "" else line


class ConsoleChannel:
    """Lines from a text stream in, answers to another; one chat per process."""

    name = CHANNEL

    def __init__(self, app: App, stdout: TextIO, *, interactive: bool) -> None:
        self.app = app
        self.stdout = stdout
        self.interactive = interactive
        self.dispatcher = ChatDispatcher(app, self, self.config)

    def config(self) -> LaneConfig:
        return self.app.runtime.current().section(CHANNEL, LaneConfig)

    async def start(self) -> None:
        """Nothing to connect: the streams are already open."""

    async def stop(self, grace_seconds: float) -> None:
        await self.dispatcher.shutdown(grace_seconds)

    async def send_text(self, job: LaneJob, text: str) -> None:
        self.say(text)

    async def send_reply(self, job: LaneJob, markdown: str) -> None:
        # A terminal shows Markdown well enough as it is.
        self.say(markdown)

    def working(self, job: LaneJob) -> AbstractAsyncContextManager[object]:
        return contextlib.nullcontext()

    def say(self, text: str) -> None:
        if self.interactive:
            # Answers can arrive while the prompt waits for input: clear its line, then show
            # it again below the answer.
            self.stdout.write(f"{CLEAR_LINE}bot> {text}\n{PROMPT}")
        else:
            self.stdout.write(text + "\n")
        self.stdout.flush()


async def run_console(
    app: App,
    *,
    chat_id: str = "local",
    user_id: str = "local",
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    interactive: bool | None = None,
) -> int:
    """Talk until end of input; `interactive` defaults to whether both streams are a tty."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if interactive is None:
        interactive = stdin.isatty() and stdout.isatty()
    chat = ChatRef(channel=CHANNEL, chat_id=chat_id, user_id=user_id)
    channel = ConsoleChannel(app, stdout, interactive=interactive)
    await channel.start()
    try:
        if interactive:
            stdout.write(
                f"bot> mnemobot console, chat {chat.key}. "
                f"Type /help for commands, Ctrl-D to quit.\n{PROMPT}"
            )
            stdout.flush()
        while (line := await _read_line(stdin)) is not None:
            text = line.rstrip("\r\n")
            if text.strip():
                await channel.dispatcher.receive(LaneJob(chat, text, command=parse_command(text)))
            if not interactive:
                await channel.dispatcher.wait_idle(chat)
                continue
            stdout.write(PROMPT)
            stdout.flush()
        # End of input: what was typed still gets its answer.
        await channel.dispatcher.wait_idle(chat)
        if interactive:
            stdout.write("\n")
            stdout.flush()
        return 0
    finally:
        await channel.stop(LEAVE_GRACE_SECONDS)
