"""The console channel: `mnemobot chat`, the same pipeline, commands and lanes as Telegram.

At a terminal the reply shows as it is written, above the prompt ("…" and the seconds
waited until its first words: `live`), and you can type meanwhile: lines wait in the
chat's lane, `/stop` cancels the reply
and `/status` answers at once. With piped stdin each line is answered before the next one
is read, so a script's output follows its input line by line, and each line's answer ends
with a line holding only the record separator (ANSWER_END) to tell answers apart; it
exits 0 at end of input.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TextIO

from mnemobot.bot.channels.base import ChannelHost, PreparedTurn
from mnemobot.bot.channels.console.live import (
    ANSWER,
    CLEAR_LINE,
    PROMPT,
    LiveReply,
    TerminalScreen,
)
from mnemobot.bot.channels.console.terminal_input import TerminalInput
from mnemobot.bot.channels.dispatch import ChatDispatcher
from mnemobot.bot.channels.lanes import (
    DEFAULT_LANE_RULES,
    CommandJob,
    LaneJob,
    LaneRules,
    MessageJob,
    firing_job,
)
from mnemobot.bot.i18n import console_language
from mnemobot.bot.schedule.tasks import Firing
from mnemobot.bot.turn.commands import Attachment, parse_command
from mnemobot.systems.core.context import ChatRef

CHANNEL = "console"
# Leaving the console early (Ctrl-C, a closed terminal) means now: a running reply is
# cancelled at once (its session is still saved) and queued lines are kept unanswered.
LEAVE_GRACE_SECONDS = 0.0
# Piped output: each input line's answer ends with a line holding only ASCII's record
# separator, invisible on a terminal and in no answer (removed from them), so a script
# splits on it: `out.split("\x1e\n")`, gawk `RS="\x1e\n"`.
RECORD_SEPARATOR = "\x1e"
ANSWER_END = f"{RECORD_SEPARATOR}\n"
# In the workspace: what was typed belongs with the conversations it started.
HISTORY_FILE = "console-history"
# What a shell reports for a program ended by Ctrl-C (128 + SIGINT).
INTERRUPTED_EXIT_STATUS = 130


async def _read_line(stream: TextIO) -> str | None:
    line = await asyncio.to_thread(stream.readline)
    return None if line == "" else line


class ConsoleChannel:
    """Lines from a text stream in, answers to another; one chat per process."""

    name = CHANNEL

    def __init__(
        self,
        app: ChannelHost,
        stdout: TextIO,
        *,
        interactive: bool,
        terminal: TerminalInput | None = None,
        lanes: LaneRules = DEFAULT_LANE_RULES,
    ) -> None:
        self.app = app
        self.lanes = lanes
        self.stdout = stdout
        self.interactive = interactive
        self.terminal = terminal
        self.screen = TerminalScreen(stdout, terminal) if terminal is not None else None
        # The reply being written in each chat, at a terminal.
        self._live: dict[str, LiveReply] = {}
        self.dispatcher = ChatDispatcher(
            app.assistant,
            app.commands,
            self,
            lambda: self.lanes,
            confirmations=app.confirmations,
            firings=app.schedule.runner if app.schedule is not None else None,
        )

    async def start(self) -> None:
        """Nothing to connect; scheduled tasks of console chats fire while it runs."""
        if self.app.schedule is not None:
            self.app.schedule.scheduler.attach(CHANNEL, self.keep_firings)

    async def stop(self, grace_seconds: float) -> None:
        if self.app.schedule is not None:
            await self.app.schedule.scheduler.detach(CHANNEL)
        await self.dispatcher.shutdown(grace_seconds)

    async def keep_firings(self, firings: Sequence[Firing]) -> None:
        """Due tasks go straight into their lanes: the console keeps no inbox, so a crash
        between this and the task being moved on fires it again at the next start."""
        for firing in firings:
            await self.dispatcher.receive(firing_job(firing))

    async def send_text(self, job: LaneJob, text: str) -> None:
        self.say(text)

    async def send_reply(self, job: LaneJob, markdown: str) -> None:
        # A terminal shows Markdown well enough as it is.
        live = self._live.pop(job.chat.key, None)
        if live is not None:
            live.finish(markdown)
            await live.close()
        else:
            self.say(markdown)

    async def send_document(self, job: LaneJob, attachment: Attachment, caption: str) -> None:
        # The caption names where the file was written: the person at the terminal owns it.
        self.say(caption)

    async def prepare_turn(self, job: MessageJob) -> PreparedTurn:
        return PreparedTurn(job.text)

    def working(self, job: LaneJob) -> AbstractAsyncContextManager[object]:
        if self.screen is None:
            return contextlib.nullcontext()
        return self._working(job.chat.key, self.screen)

    @contextlib.asynccontextmanager
    async def _working(self, key: str, screen: TerminalScreen) -> AsyncIterator[None]:
        """ "…" above the prompt while a turn, a slow command or a scheduled task runs; a
        reply's text replaces it (`reply_stream`)."""
        live = self._live.get(key)
        sign_only = live is None
        if live is None:
            live = self._live[key] = LiveReply(screen)
        live.start()
        try:
            yield
        finally:
            # A stream ends with its reply (`send_reply`) or `close_stream`, both after this.
            if sign_only and self._live.get(key) is live:
                del self._live[key]
                await live.close()

    def reply_stream(self, job: LaneJob) -> LiveReply | None:
        """At a terminal, the reply as it is written, above the prompt."""
        if self.screen is None:
            return None
        live = self._live[job.chat.key] = LiveReply(self.screen)
        return live

    async def close_stream(self, job: LaneJob, *, answered: bool) -> None:
        live = self._live.pop(job.chat.key, None)
        if live is not None:
            await live.close()

    def status_lines(self, chat: ChatRef) -> list[str]:
        return []

    def say(self, text: str) -> None:
        if self.screen is not None:
            # Above the reply being written (if any) and the prompt, which keeps what was
            # typed so far, so typing goes on where it was.
            self.screen.draw([f"{ANSWER}{text}"], self.screen.live)
            return
        if self.interactive:
            # Answers can arrive while the prompt waits for input: clear its line, then show
            # it again below the answer.
            self.stdout.write(f"{CLEAR_LINE}{ANSWER}{text}\n{PROMPT}")
        else:
            self.stdout.write(text.replace(RECORD_SEPARATOR, "") + "\n")
        self.stdout.flush()


async def run_console(
    app: ChannelHost,
    *,
    chat_id: str = "local",
    user_id: str = "local",
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    interactive: bool | None = None,
    lanes: LaneRules = DEFAULT_LANE_RULES,
    log_file: Path | None = None,
) -> int:
    """Talk until end of input; `interactive` defaults to whether both streams are a tty;
    `lanes`: how lines typed during a reply queue (a test may collect them); `log_file`:
    where the log goes, said at the start.

    At a real terminal, lines are edited with readline (history in the workspace), Ctrl-C
    stops the running reply (or, with nothing running, leaves: exit status 130) and Ctrl-D
    leaves.
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if interactive is None:
        interactive = stdin.isatty() and stdout.isatty()
    at_terminal = interactive and stdin is sys.stdin and stdout is sys.stdout and stdin.isatty()
    terminal = TerminalInput(PROMPT, history_path(app)) if at_terminal else None
    # The bot's own words in the locale's language (LANG=de_DE.UTF-8: German).
    chat = ChatRef(
        channel=CHANNEL, chat_id=chat_id, user_id=user_id, language=console_language(os.environ)
    )
    channel = ConsoleChannel(app, stdout, interactive=interactive, terminal=terminal, lanes=lanes)
    await channel.start()
    # No inbox here hands a confirmed /forget_me in again: one a crash cut ends now.
    for _, finished in await app.commands.finish_interrupted_erasures(CHANNEL):
        channel.say(finished)
    if not interactive:
        # A script's lines may need the MCP servers' tools from the first one on.
        await app.tools_ready()
    if terminal is not None:
        _stop_on_ctrl_c(channel, chat, terminal)
    try:
        if interactive:
            prompt = "" if terminal is not None else PROMPT  # readline shows its own
            logs = f" The log is in {log_file}." if log_file is not None else ""
            stdout.write(
                f"{ANSWER}mnemobot console, chat {chat.key}. "
                f"Type /help for commands, Ctrl-D to quit.{logs}\n{prompt}"
            )
            stdout.flush()
        while True:
            line = await terminal.read() if terminal is not None else await _read_line(stdin)
            if line is None:
                break
            text = line.rstrip("\r\n")
            if text.strip():
                command = parse_command(text)
                job = MessageJob(chat, text) if command is None else CommandJob(chat, text, command)
                await channel.dispatcher.receive(job)
            if not interactive:
                # The next line may be the "yes" a tool of this turn waits for.
                await _idle_or_asking(channel, chat)
                if text.strip():
                    stdout.write(ANSWER_END)
                    stdout.flush()
                continue
            if terminal is None:
                stdout.write(PROMPT)
                stdout.flush()
        if terminal is not None and terminal.interrupted:
            stdout.write("\n")
            stdout.flush()
            return INTERRUPTED_EXIT_STATUS
        # End of input: what was typed still gets its answer.
        await channel.dispatcher.wait_idle(chat)
        if interactive:
            stdout.write("\n")
            stdout.flush()
        return 0
    finally:
        if terminal is not None:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            terminal.close()
        await channel.stop(LEAVE_GRACE_SECONDS)


async def _idle_or_asking(channel: ConsoleChannel, chat: ChatRef) -> None:
    """Return once the chat's turn is over, or once it asks the user to confirm a tool."""
    idle = asyncio.create_task(channel.dispatcher.wait_idle(chat))
    try:
        while not idle.done() and not channel.app.confirmations.waiting(chat):
            await asyncio.wait({idle}, timeout=0.05)
    finally:
        idle.cancel()


def history_path(app: ChannelHost) -> Path:
    return app.paths.root / HISTORY_FILE


def _stop_on_ctrl_c(channel: ConsoleChannel, chat: ChatRef, terminal: TerminalInput) -> None:
    """Ctrl-C stops the reply being written (like /stop); with nothing running, it leaves."""
    stops: set[asyncio.Task[None]] = set()

    async def stop() -> None:
        channel.say(await channel.dispatcher.stop_requests.stop(chat))

    def on_ctrl_c() -> None:
        lanes = channel.dispatcher.lanes
        if lanes.is_running(chat.key) or lanes.waiting(chat.key):
            task = asyncio.create_task(stop())
            stops.add(task)
            task.add_done_callback(stops.discard)
        else:
            terminal.interrupt()

    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_ctrl_c)
