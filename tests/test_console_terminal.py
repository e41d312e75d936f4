"""`mnemobot chat` at a real (pseudo-)terminal: line editing, history, Ctrl-C and Ctrl-D."""

from __future__ import annotations

import codecs
import contextlib
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
from typing import IO

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, delay, reply, user_texts
from tests.conftest import subprocess_env
from tests.terminal import ScreenText

UP_ARROW = "\x1b[A"
CTRL_C = "\x03"
CTRL_D = "\x04"
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


class Terminal:
    """A person at a terminal: keys go in, the screen's text comes out."""

    def __init__(self, process: subprocess.Popen[bytes], master: int) -> None:
        self.process = process
        self.master = master
        self.display = ScreenText()
        # Everything ever written (escape codes removed), what was redrawn since too.
        self.written = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    @property
    def screen(self) -> str:
        """The screen's text now: a line redrawn in place shows its last text only."""
        return self.display.text()

    def press(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def shows(self, pattern: str, timeout: float = 10.0) -> str:
        """Wait until the screen matches `pattern`; returns it."""
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
                text = self._decoder.decode(chunk)
                self.display.feed(text)
                self.written += _ESCAPES.sub("", text)
        return self.screen

    def exit_status(self) -> int:
        return self.process.wait(10)


def _take_terminal() -> None:
    # In the child, after setsid: the pty becomes its controlling terminal, so Ctrl-C
    # typed there sends SIGINT as it would in a real terminal.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@contextlib.contextmanager
def chat_at_a_terminal(
    workspace: Path, openai_server: FakeOpenAIServer, stderr: int | IO[bytes]
) -> Iterator[Terminal]:
    """`mnemobot chat` on a pseudo-terminal (stdin and stdout; stderr where given)."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "chat"],
        stdin=slave,
        stdout=slave,
        stderr=slave if stderr == TERMINAL else stderr,
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


# stderr on the same terminal as the conversation, as a person starts `mnemobot chat`.
TERMINAL = -10


@pytest.fixture
def terminal(
    workspace: Path, openai_server: FakeOpenAIServer, tmp_path: Path
) -> Iterator[Terminal]:
    with chat_at_a_terminal(workspace, openai_server, (tmp_path / "stderr.txt").open("wb")) as t:
        yield t


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
    # The model works: "…" shows above the prompt, which stays to type on.
    terminal.shows("novel\nbot> …\nyou> $")
    terminal.press("half typed")
    terminal.shows("you> half typed$")
    terminal.press(CTRL_C)
    # The reply is stopped and what was being typed is still there to finish.
    terminal.shows("bot> Stopped the reply in progress.*\nyou> half typed$")
    terminal.press(" line\r")
    terminal.shows("bot> echo: half typed line")
    # Nothing running now: Ctrl-C leaves. The reply shows before its turn is saved; a press
    # in that moment stops the turn's last step, and the next one leaves.
    terminal.press(CTRL_C)
    try:
        terminal.process.wait(3)
    except subprocess.TimeoutExpired:
        terminal.press(CTRL_C)
    assert terminal.exit_status() == 130
    assert "too late" not in terminal.written
    # The terminal is given back as it was: what is typed next is echoed again.
    assert termios.tcgetattr(terminal.master)[3] & termios.ECHO


def test_the_model_working_shows_then_its_reply_as_written_and_no_log_line(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 3
    openai_server.script(delay(2.5, reply("Alpha Beta Gamma Delta Epsilon Zeta")))
    with chat_at_a_terminal(workspace, openai_server, TERMINAL) as terminal:
        log = workspace / "logs" / "console.log"
        terminal.shows(f"The log is in {re.escape(str(log))}.\nyou> $")
        terminal.press("tell me the letters\r")
        # A local model may take a minute before its first word: it does not look hung.
        terminal.shows("letters\nbot> …\nyou> $")
        terminal.shows("letters\nbot> … 2 s\nyou> $")
        # Then the reply as it is written, above the prompt.
        terminal.shows("bot> Alpha Beta")
        assert "Zeta" not in terminal.written
        terminal.shows("letters\nbot> Alpha Beta Gamma Delta Epsilon Zeta\nyou> $")
        terminal.press(CTRL_D)
        assert terminal.exit_status() == 0
    # The log is out of the conversation, in the workspace, readable by its owner only.
    assert " INFO " not in terminal.written
    assert "INFO mnemobot.bot.cli.startup: starting: workspace" in log.read_text()
    assert log.stat().st_mode & 0o777 == 0o600


def test_a_long_reply_breaks_at_the_width_and_typing_goes_on_below_it(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    openai_server.tokens_per_second = 20
    openai_server.script(reply(words))
    with chat_at_a_terminal(workspace, openai_server, TERMINAL) as terminal:
        terminal.shows("you> $")
        terminal.press("go\r")
        terminal.shows("word39\nyou> $")
        terminal.press("next question")
        screen = terminal.shows("word39\nyou> next question$")
    rows = screen.splitlines()
    shown = rows[rows.index("you> go") + 1 : -1]
    # Every word once, in order, no row as wide as the terminal (80 columns).
    assert " ".join(shown).removeprefix("bot> ").split() == words.split()
    assert all(len(row) < 80 for row in shown)
