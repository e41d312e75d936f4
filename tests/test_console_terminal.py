"""`mnemobot chat` at a real (pseudo-)terminal: line editing, history, Ctrl-C and Ctrl-D."""

from __future__ import annotations

import fcntl
import os
import re
import select
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, delay, reply, user_texts
from tests.conftest import subprocess_env

UP_ARROW = "\x1b[A"
CTRL_C = "\x03"
CTRL_D = "\x04"
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


class Terminal:
    """A person at a terminal: keys go in, the screen's text comes out."""

    def __init__(self, process: subprocess.Popen[bytes], master: int) -> None:
        self.process = process
        self.master = master
        self.screen = ""

    def press(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def shows(self, pattern: str, timeout: float = 10.0) -> str:
        """Wait until the screen (escape codes removed) matches `pattern`; returns it."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.screen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} not shown; screen:\n{self.screen}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the program ended and closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{pattern!r} not shown; screen:\n{self.screen}")
                self.screen += _ESCAPES.sub("", chunk.decode(errors="replace"))
        return self.screen

    def exit_status(self) -> int:
        return self.process.wait(10)


def _take_terminal() -> None:
    # In the child, after setsid: the pty becomes its controlling terminal, so Ctrl-C
    # typed there sends SIGINT as it would in a real terminal.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.fixture
def terminal(
    workspace: Path, openai_server: FakeOpenAIServer, tmp_path: Path
) -> Iterator[Terminal]:
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "chat"],
        stdin=slave,
        stdout=slave,
        stderr=(tmp_path / "stderr.txt").open("wb"),
        env=subprocess_env(
            BOT_WORKSPACE=str(workspace),
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=openai_server.base_url,
            TERM="xterm",
        ),
        cwd=workspace.parent,
        start_new_session=True,
        preexec_fn=_take_terminal,
    )
    os.close(slave)
    try:
        yield Terminal(process, master)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(master)


def test_up_arrow_recalls_the_previous_line_and_ctrl_d_quits(
    terminal: Terminal, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    terminal.shows("you> $")
    terminal.press("what is BM25?\r")
    terminal.shows("bot> echo: what is BM25\\?\nyou> $")
    terminal.press(UP_ARROW)
    terminal.shows("bot> echo: what is BM25\\?\nyou> what is BM25\\?$")
    terminal.press("\r")
    terminal.shows("(bot> echo: what is BM25\\?[^$]*){2}")
    terminal.press(CTRL_D)
    assert terminal.exit_status() == 0
    assert user_texts(openai_server.last_request()) == ["what is BM25?", "what is BM25?"]
    # The history is kept (bounded) in the workspace for the next session.
    assert "what is BM25?" in (workspace / "console-history").read_text()


def test_ctrl_c_stops_the_running_reply_and_keeps_the_console(
    terminal: Terminal, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(delay(5, reply("too late")))
    terminal.shows("you> $")
    terminal.press("write me a novel\r")
    openai_server.wait_for_requests(1)
    terminal.shows("novel\nyou> $")
    terminal.press("half typed")
    terminal.shows("you> half typed$")
    terminal.press(CTRL_C)
    # The reply is stopped and what was being typed is still there to finish.
    terminal.shows("bot> Stopped the reply in progress.*\nyou> half typed$")
    terminal.press(" line\r")
    terminal.shows("bot> echo: half typed line")
    terminal.press(CTRL_C)  # nothing running now: Ctrl-C leaves
    assert terminal.exit_status() == 130
    assert "too late" not in terminal.screen
    # The terminal is given back as it was: what is typed next is echoed again.
    assert termios.tcgetattr(terminal.master)[3] & termios.ECHO
