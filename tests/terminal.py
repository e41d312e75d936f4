"""Run `mnemobot` with its stderr on a pseudo-terminal, as a person at a terminal sees it,
and what a terminal shows of a program's output (`ScreenText`)."""

from __future__ import annotations

import errno
import os
import pty
import re
import select
import subprocess
import sys
import time

from tests.conftest import subprocess_env


def mnemobot_command(*args: str) -> list[str]:
    """`python -m bot ARGS`, the command `mnemobot ARGS` runs."""
    return [sys.executable, "-m", "mnemobot", *args]


def run_with_terminal_stderr(*args: str, timeout: float = 120, **env: str) -> tuple[int, str, str]:
    """Run `mnemobot ARGS` with stderr on a pseudo-terminal, our variables set to `env`
    only: (returncode, stdout, stderr)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        mnemobot_command(*args),
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=subprocess_env(**env),
    )
    os.close(terminal)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([controller], [], [], max(0.0, remaining))
            if not readable:
                raise TimeoutError(f"mnemobot {' '.join(args)} ran over {timeout} s")
            try:
                chunk = os.read(controller, 4096)
            except OSError as exc:  # EIO: every writer closed the terminal
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.stdout is not None
        stdout = process.stdout.read().decode()
        returncode = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()
    return returncode, stdout, b"".join(chunks).decode(errors="replace")


class ScreenText:
    """What a terminal shows after some output: the subset of a VT100 that the console and
    GNU readline write (text, CR, LF, backspace; CSI cursor up/down/forward/back, erase in
    line and below), no line wrapping. Lines are kept as drawn, so a line the program
    redrew in place shows only its last text."""

    _CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b[=>]|\x1b\][^\x07]*\x07")

    _PARTIAL = re.compile(r"\x1b(\[[0-9;?]*)?$")

    def __init__(self) -> None:
        self.lines: list[str] = [""]
        self.row = 0
        self.column = 0
        self._pending = ""

    def feed(self, text: str) -> None:
        """More output (an escape sequence cut between two reads is kept for the next)."""
        text = self._pending + text
        partial = self._PARTIAL.search(text)
        self._pending = text[partial.start() :] if partial else ""
        text = text[: partial.start()] if partial else text
        position = 0
        for match in self._CSI.finditer(text):
            self._text(text[position : match.start()])
            self._control(match.group(1) or "", match.group(2) or "")
            position = match.end()
        self._text(text[position:])

    def text(self) -> str:
        """The lines down to the cursor's (or the last one written), joined."""
        last = max(self.row, max((i for i, line in enumerate(self.lines) if line), default=0))
        return "\n".join(self.lines[: last + 1])

    def _line(self) -> str:
        while len(self.lines) <= self.row:
            self.lines.append("")
        return self.lines[self.row]

    def _put(self, line: str) -> None:
        self.lines[self.row] = line

    def _text(self, text: str) -> None:
        for char in text:
            if char == "\r":
                self.column = 0
            elif char == "\n":
                self.row += 1
                self.column = 0  # the terminal turns each LF into CR LF (ONLCR)
                self._line()
            elif char == "\b":
                self.column = max(0, self.column - 1)
            elif char in "\x07\x00":
                continue
            else:
                line = self._line().ljust(self.column)
                self._put(line[: self.column] + char + line[self.column + 1 :])
                self.column += 1

    def _control(self, parameters: str, command: str) -> None:
        count = int(parameters) if parameters.isdigit() else 1
        line = self._line()
        if command == "A":
            self.row = max(0, self.row - count)
        elif command == "B":
            self.row += count
            self._line()
        elif command == "C":
            self.column += count
        elif command == "D":
            self.column = max(0, self.column - count)
        elif command == "K":
            if parameters in ("", "0"):
                self._put(line[: self.column])
            elif parameters == "2":
                self._put("")
            else:  # 1: to the cursor
                self._put(" " * self.column + line[self.column :])
        elif command == "J" and parameters in ("", "0"):
            self._put(line[: self.column])
            del self.lines[self.row + 1 :]
