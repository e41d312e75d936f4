"""Real MCP servers for the tests: the SDK server of `tests/fakes/mcp_server.py`, started by
the bot over stdio or run here over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mnemobot_tooling.fakes
from mnemobot.bot.app import App
from mnemobot.bot.mcp.supervisor import ServerState
from mnemobot_tooling.fakes.openai_server import Step, reply, tool_messages

SERVER_SCRIPT = str(Path(mnemobot_tooling.fakes.__file__).resolve().parent / "mcp_server.py")


def stdio_server(log: Path, *args: str, **entry: Any) -> dict[str, Any]:
    """A runtime-config entry that starts the test server over stdio, logging to `log`."""
    env = {"MCP_TEST_LOG": str(log), **entry.pop("env", {})}
    return {"command": sys.executable, "args": [SERVER_SCRIPT, *args], "env": env, **entry}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpServer:
    """The test server over streamable HTTP on 127.0.0.1, as its own process; `start()` again
    after it died brings it back on the same port."""

    def __init__(self, log: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.env = {"MCP_TEST_LOG": str(log), "PATH": "/usr/bin:/bin", **env}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, SERVER_SCRIPT, "--http", str(self.port)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("the MCP test server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


@contextmanager
def http_server(log: Path, **env: str) -> Iterator[HttpServer]:
    server = HttpServer(log, **env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def wait_until(condition: Callable[[], bool], timeout: float = 20, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(0.02)


def server_state(app: App, name: str) -> ServerState | None:
    supervisor = app.mcp.supervisors.get(name)
    return supervisor.state if supervisor is not None else None


async def wait_ready(app: App, name: str, timeout: float = 20) -> None:
    await wait_until(
        lambda: server_state(app, name) is ServerState.READY, timeout, f"MCP server {name}"
    )


def calls_logged(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def offered_tools(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def answer_with_tool_result(body: dict[str, Any]) -> Step:
    """The fake model answers with the last tool result it was given."""
    results = tool_messages(body)
    return reply(f"Result: {results[-1]['content']}" if results else "no tool used")
