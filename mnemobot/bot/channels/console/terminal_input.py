"""Typing at a terminal: GNU readline line editing and a bounded history, off the event loop.

`input()` blocks, so it runs in a daemon thread that hands each line to the loop: a reader
blocked in the middle of a line never keeps the process from exiting (an executor thread
would be waited for at shutdown). The terminal modes are saved first and put back on
close, since leaving while readline has the terminal would leave it without echo.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import termios
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Enough to recall what was typed over weeks of use, small enough to load instantly; not a
# tuning knob.
HISTORY_LINES = 1_000


class TerminalInput:
    """Lines typed at the terminal, with editing and history; `read()` is None at Ctrl-D."""

    def __init__(self, prompt: str, history_path: Path | None) -> None:
        # Imported only at a terminal: importing it changes how input() behaves.
        import readline

        self._readline = readline
        self.prompt = prompt
        self.history_path = history_path
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._wanted = threading.Semaphore(0)
        self._closed = False
        # True while input() shows the prompt, so an answer can show it again below.
        self.prompting = False
        self.interrupted = False
        self._terminal_modes = _terminal_modes()
        readline.set_history_length(HISTORY_LINES)
        readline.set_auto_history(True)
        if history_path is not None:
            try:
                readline.read_history_file(history_path)
            except FileNotFoundError:
                pass  # nothing typed in this workspace yet
            except OSError as exc:
                log.warning("console history %s not read: %s", history_path, exc)
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read_lines, args=(loop,), daemon=True).start()

    async def read(self) -> str | None:
        """The next line (prompting for it), or None at end of input."""
        self._wanted.release()
        return await self._lines.get()

    def interrupt(self) -> None:
        """Ctrl-C with nothing running: end the input as if at Ctrl-D, marked as interrupted."""
        self.interrupted = True
        self._lines.put_nowait(None)

    def typed_so_far(self) -> str:
        """What is on the input line now, to show it again under an answer."""
        return self._readline.get_line_buffer()

    def close(self) -> None:
        """Save the history and give the terminal back as it was."""
        if self._closed:
            return
        self._closed = True
        if self.history_path is not None:
            try:
                self.history_path.parent.mkdir(parents=True, exist_ok=True)
                self._readline.write_history_file(self.history_path)
            except OSError as exc:
                log.warning("console history %s not saved: %s", self.history_path, exc)
        if self._terminal_modes is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._terminal_modes)

    def _read_lines(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            # Prompt only when the console asks: with piped-in pace, not ahead of answers.
            self._wanted.acquire()
            self.prompting = True
            try:
                line: str | None = input(self.prompt)
            except EOFError:
                line = None
            except Exception as exc:  # a closed terminal: end of input, not a crash
                log.warning("console input ended: %s", exc)
                line = None
            finally:
                self.prompting = False
            try:
                loop.call_soon_threadsafe(self._lines.put_nowait, line)
            except RuntimeError:
                return  # the loop is gone: the console has ended
            if line is None:
                return


def _terminal_modes() -> list[Any] | None:
    try:
        return termios.tcgetattr(sys.stdin.fileno())
    except (termios.error, OSError, ValueError):
        return None
