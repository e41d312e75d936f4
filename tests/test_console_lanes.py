"""The console at a terminal runs on the same per-chat lanes as Telegram.

`run_console` is driven in-process as a person at a terminal would drive it: lines written
to its stdin while a reply is still being written (the fake LLM holds it back).
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemobot.bot.app import build_app
from mnemobot.bot.channels.console.channel import run_console
from mnemobot.bot.channels.lanes import DEFAULT_LANE_RULES, LaneRules
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, gated, reply, user_texts
from tests.conftest import make_settings, write_runtime_config


@dataclass
class Terminal:
    keyboard: io.TextIOWrapper
    screen: io.StringIO
    session: asyncio.Task[int]

    def type(self, line: str) -> None:
        self.keyboard.write(line + "\n")
        self.keyboard.flush()

    async def shows(self, text: str, timeout: float = 5.0) -> None:
        """Wait until `text` is on the screen."""
        deadline = asyncio.get_running_loop().time() + timeout
        while text not in self.screen.getvalue():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{text!r} not shown; screen:\n{self.screen.getvalue()}")
            await asyncio.sleep(0.01)

    async def close(self) -> int:
        """Ctrl-D: end of input."""
        self.keyboard.close()
        return await asyncio.wait_for(self.session, 10)


OpenTerminal = Callable[..., Terminal]


@pytest.fixture
async def open_terminal(
    workspace: Path, openai_server: FakeOpenAIServer
) -> AsyncIterator[OpenTerminal]:
    """Start `mnemobot chat` in-process at a pretend terminal (runtime config optional)."""
    cleanup: list[Callable[[], Awaitable[None]]] = []

    def start(
        runtime: dict[str, object] | None = None, lanes: LaneRules = DEFAULT_LANE_RULES
    ) -> Terminal:
        if runtime is not None:
            write_runtime_config(workspace, runtime)
        app = build_app(make_settings(workspace, openai_server))
        read_end, write_end = os.pipe()
        stdin, keyboard = os.fdopen(read_end, "r"), os.fdopen(write_end, "w")
        screen = io.StringIO()
        session = asyncio.create_task(
            run_console(
                app, user_id="u1", stdin=stdin, stdout=screen, interactive=True, lanes=lanes
            )
        )

        async def close() -> None:
            if not keyboard.closed:
                keyboard.close()
            await asyncio.wait({session}, timeout=10)
            stdin.close()
            await app.close()

        cleanup.append(close)
        return Terminal(keyboard, screen, session)

    yield start
    for close in cleanup:
        await close()


async def test_stop_at_the_terminal_cancels_the_running_reply_and_drops_the_queue(
    open_terminal: OpenTerminal, openai_server: FakeOpenAIServer
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("too late")))
    terminal = open_terminal()
    try:
        terminal.type("write me a novel")
        await openai_server.wait_for_requests_async(1)
        terminal.type("queued line")
        terminal.type("/status")
        await terminal.shows("Queue: a reply is running, 1 waiting (mode queue, cap 20)")
        terminal.type("/stop")
        await terminal.shows("bot> Stopped the reply in progress. Dropped 1 queued message.")
        terminal.type("still there?")
        await terminal.shows("bot> echo: still there?")
        assert await terminal.close() == 0
    finally:
        release.set()

    assert "too late" not in terminal.screen.getvalue()
    assert user_texts(openai_server.last_request()) == ["write me a novel", "still there?"]


async def test_lines_typed_during_a_reply_are_collected_in_collect_mode(
    open_terminal: OpenTerminal, openai_server: FakeOpenAIServer
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("first answer")))
    terminal = open_terminal(lanes=LaneRules(queue_mode="collect"))
    try:
        terminal.type("one")
        await openai_server.wait_for_requests_async(1)
        terminal.type("two")
        terminal.type("three")
        terminal.type("/status")
        await terminal.shows("2 waiting (mode collect, cap 20)")
        release.set()
        await terminal.shows("bot> echo: two\n\nthree")
        assert await terminal.close() == 0
    finally:
        release.set()

    screen = terminal.screen.getvalue()
    assert screen.index("bot> first answer") < screen.index("bot> echo: two\n\nthree")
    assert user_texts(openai_server.last_request()) == ["one", "two\n\nthree"]
