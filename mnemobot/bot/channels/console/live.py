"""A reply at a terminal while it is written: "…" (and the seconds waited) while the model
works, then its text as it comes, in one live line just above the prompt.

The prompt stays where it is, with what was being typed: everything is drawn above it.
Text that fills a line of the terminal (or ends one) is printed for good; only the line
being written is redrawn in place, so it must never wrap: lines are broken here at the
terminal's width, counting East Asian wide characters as two columns.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import unicodedata
from collections.abc import Callable
from typing import TextIO

from mnemobot.bot.channels.console.terminal_input import TerminalInput

PROMPT = "you> "
ANSWER = "bot> "
CLEAR_LINE = "\r\x1b[2K"
UP = "\x1b[A"
WORKING = "…"
# The seconds waited show from this long on, then tick once a second: a local model may
# take a minute before its first word, and a still "…" would look hung.
SHOW_SECONDS_AFTER = 2.0
# Text arrives at 20-100 tokens a second; redrawing the line at most this often keeps the
# terminal (and readline's own redraws as the user types) calm.
REDRAW_SECONDS = 0.05


def terminal_columns() -> int:
    return shutil.get_terminal_size().columns


def _width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def wrap_rows(text: str, columns: int) -> list[str]:
    """`text` (after `bot> `) as terminal rows of fewer than `columns` columns, broken at a
    space where one is near the end; the last row is the one still being written."""
    room = max(10, columns - 1)
    rows: list[str] = []
    for number, line in enumerate(text.split("\n")):
        row, used = (ANSWER, len(ANSWER)) if number == 0 else ("", 0)
        for char in line:
            width = _width(char)
            if used + width > room:
                space = row.rfind(" ")
                if space > len(row) // 2:
                    rows.append(row[:space])
                    row = row[space + 1 :]
                else:
                    rows.append(row)
                    row = ""
                used = sum(_width(c) for c in row)
            row += char
            used += width
        rows.append(row)
    return rows


class TerminalScreen:
    """The terminal below the conversation: one live line above the prompt line, redrawn
    in place; everything else is printed above it for good."""

    def __init__(
        self,
        out: TextIO,
        terminal: TerminalInput,
        columns: Callable[[], int] = terminal_columns,
    ) -> None:
        self.out = out
        self.terminal = terminal
        self.columns = columns
        self.live: str | None = None

    def draw(self, permanent: list[str], live: str | None) -> None:
        """Print `permanent` lines for good, then show `live` (None: no live line) and the
        prompt with what was typed so far, in one write."""
        parts = [CLEAR_LINE]
        if self.live is not None:
            parts.append(UP + CLEAR_LINE)
        parts += [f"{line}\n" for line in permanent]
        if live is not None:
            parts.append(f"{live}\n")
        if self.terminal.prompting:
            # Readline owns the input line: show it again below, so typing goes on there.
            parts.append(f"{PROMPT}{self.terminal.typed_so_far()}")
        self.out.write("".join(parts))
        self.out.flush()
        self.live = live


def fit(row: str, columns: int) -> str:
    """`row` cut to fewer than `columns` columns, so the live line never wraps."""
    room, used = max(10, columns - 1), 0
    for index, char in enumerate(row):
        used += _width(char)
        if used > room:
            return row[: index - 1] + "…"
    return row


class LiveReply:
    """One reply's live line (a `ReplyStream`): "…" with the seconds waited, then the text
    as it comes, until `finish` prints the reply for good. Without text it is only the
    sign that something runs (a slow command, a scheduled task)."""

    def __init__(self, screen: TerminalScreen) -> None:
        self.screen = screen
        self.latest = ""
        self.status = ""
        # The width the reply is broken at, kept for the whole reply.
        self.columns = screen.columns()
        # Rows of `latest` printed for good; the last row is the live line.
        self._printed: list[str] = []
        self._started = asyncio.get_running_loop().time()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stop_requested = False
        self._done = False

    # -- ReplyStream -----------------------------------------------------------------------------

    def show(self, text: str) -> None:
        rows = wrap_rows(text, self.columns)
        if rows[: len(self._printed)] != self._printed:
            # The model began again (a stream cut and sent anew): what is printed stays,
            # the new text goes on below it.
            self.screen.draw(wrap_rows(self.latest, self.columns)[len(self._printed) :], None)
            self._printed = []
        self.latest = text
        self.status = ""
        self._changed.set()

    def tool_running(self, status: str) -> None:
        self.status = status
        self._changed.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        self._stop_requested = True

    @property
    def showing(self) -> bool:
        return bool(self.latest) or bool(self.status)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Show the live line and keep it up to date (until `finish` or `close`)."""
        if self._task is None and not self._done:
            self._task = asyncio.create_task(self._run(), name="console-live-reply")

    def finish(self, reply: str) -> None:
        """The reply is done: print it for good (from where the printed rows end, or whole
        when it says something else), and no live line any more."""
        if self._done:
            return
        self._done = True
        if self._task is not None:
            self._task.cancel()
        rows = wrap_rows(reply, self.columns)
        if rows[: len(self._printed)] == self._printed:
            rows = rows[len(self._printed) :]
        self.screen.draw(rows, None)

    async def close(self) -> None:
        """No reply came (or it was printed): the live line goes."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if not self._done:
            self._done = True
            self.screen.draw([], None)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._redraw(loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 1.0)
            self._changed.clear()
            await asyncio.sleep(REDRAW_SECONDS)

    def _redraw(self, now: float) -> None:
        if not self.latest:
            waited = now - self._started
            seconds = f" {waited:.0f} s" if waited >= SHOW_SECONDS_AFTER else ""
            self.screen.draw([], fit(f"{ANSWER}{self.status or WORKING}{seconds}", self.columns))
            return
        rows = wrap_rows(self.latest, self.columns)
        finished, live = rows[len(self._printed) : -1], rows[-1]
        self._printed = rows[:-1]
        if self.status:
            live = f"{live}  {self.status}" if live.strip() else self.status
        self.screen.draw(finished, fit(live, self.columns))
