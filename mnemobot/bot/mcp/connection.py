"""One connection to one MCP server through the official SDK (`mcp`): open it, list the
server's tools, call them, notice when it is gone.

The SDK's transports are async context managers bound to the task that enters them, so a
`Link` is opened and held by one task (the server's supervisor); tool calls come from the
turns' tasks through `Link.session`, which the SDK allows. A stdio server's stderr goes
through a pipe into `StderrTail`: its last lines say why a server that would not start
failed, with every secret taken out, and nothing of it lands on the bot's own stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from mnemobot.bot.mcp.config import McpServerConfig
from mnemobot.bot.mcp.secrets import FilledServer, without_secrets

# Lines of a server's stderr kept to say why it failed.
STDERR_LINES = 20
# Longest stderr line kept, in characters.
STDERR_LINE_CHARS = 300
# Longest reason shown for a failure.
REASON_CHARS = 300


@dataclass(frozen=True, slots=True)
class ServerTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class StderrTail:
    """The last lines a stdio server wrote to stderr, read from a pipe on the event loop."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = list(secrets)
        self.lines: deque[str] = deque(maxlen=STDERR_LINES)
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def pipe(self) -> AsyncIterator[Any]:
        """A writable file for the server's stderr; read until the server closes it."""
        read_fd, write_fd = os.pipe()
        writer = os.fdopen(write_fd, "w")
        reader = os.fdopen(read_fd, "rb")
        self._task = asyncio.create_task(self._read(reader))
        try:
            yield writer
        finally:
            writer.close()
            # The server is gone (or never started): what it wrote is in the pipe; read it.
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), 1.0)
            self._task.cancel()
            reader.close()

    async def _read(self, reader: Any) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=1 << 20)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), reader
        )
        try:
            while True:
                try:
                    line = await stream.readline()
                except ValueError:  # a line over the limit: skip what was read of it
                    continue
                if not line:
                    return
                text = line.decode(errors="replace").rstrip()
                if text:
                    self.lines.append(without_secrets(text, self.secrets)[:STDERR_LINE_CHARS])
        finally:
            transport.close()

    def last_words(self) -> str | None:
        """The server's last meaningful stderr line (an error, usually), if it wrote one."""
        for line in reversed(self.lines):
            if line.strip() and not line.lstrip().startswith(("File ", "^", "~")):
                return line.strip()
        return None


@dataclass(slots=True)
class Link:
    """An initialized session with a server, and whether it is still there."""

    session: Any
    tools: list[ServerTool]
    server_name: str
    lost: asyncio.Event
    # Set when the server says its list of tools changed (tools/list_changed).
    tools_changed: asyncio.Event


async def list_tools(session: Any) -> list[ServerTool]:
    """Every tool the server lists, page after page."""
    from mcp_types import PaginatedRequestParams

    tools: list[ServerTool] = []
    cursor: str | None = None
    while True:
        listing = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools += [_tool_of(tool) for tool in listing.tools]
        cursor = listing.next_cursor
        if not cursor:
            return tools


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def describe_failure(
    error: BaseException,
    server: McpServerConfig,
    secrets: Iterable[str],
    stderr: StderrTail | None,
) -> str:
    """One line saying why a connection failed or ended, with `secrets` (the server's
    filled-in values) taken out: a server's error may repeat what it was given, and this
    line reaches the log, /status, doctor and the model."""
    from mcp.shared.exceptions import MCPError

    leaves = _leaves(error)
    leaf = next((e for e in leaves if not isinstance(e, asyncio.CancelledError)), leaves[0])
    last_words = stderr.last_words() if stderr is not None else None
    if isinstance(leaf, OSError) and server.cwd and leaf.filename == server.cwd:
        reason = f"cwd {server.cwd} is not a directory it can run in ({leaf.strerror})"
    elif isinstance(leaf, FileNotFoundError) and server.command is not None:
        reason = f"command not found: {server.command}"
    elif isinstance(leaf, PermissionError) and server.command is not None:
        reason = f"{server.command} cannot be run (permission denied)"
    elif isinstance(leaf, TimeoutError):
        reason = "it did not answer in time"
    elif isinstance(leaf, MCPError) and leaf.message == "Connection closed":
        reason = "it closed the connection" if server.command is None else "it exited"
    elif isinstance(leaf, MCPError):
        reason = f"it answered: {leaf.message}"
    elif type(leaf).__name__ in {"ConnectError", "ConnectTimeout"}:
        reason = f"cannot connect to {url_for_display(server.url)} ({leaf})"
    else:
        reason = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
    if last_words:
        reason += f"; its last words: {last_words}"
    # Cleaned before it is cut: a cut through a secret would leave its start unredacted.
    return without_secrets(reason, secrets)[:REASON_CHARS]


def url_for_display(url: str | None) -> str:
    """The scheme, host and port of a URL as written in the config: never its path, query
    or password, where a key may be."""
    from urllib.parse import urlsplit

    parts = urlsplit(url or "")
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port given as ${VARIABLE}
        port = ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def _tool_of(tool: Any) -> ServerTool:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    return ServerTool(tool.name, tool.description or "", dict(schema))


@contextlib.asynccontextmanager
async def open_link(
    name: str,
    server: McpServerConfig,
    filled: FilledServer,
    *,
    start_timeout_seconds: float,
    stderr: StderrTail,
) -> AsyncIterator[Link]:
    """Start or reach the server, initialize, list its tools; hold the link while inside.

    Raises whatever the SDK raised (an ExceptionGroup, FileNotFoundError, TimeoutError...):
    `describe_failure` makes one line of it. `Link.lost` is set when the server goes away.
    """
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import ToolListChangedNotification

    lost = asyncio.Event()
    tools_changed = asyncio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            tools_changed.set()

    async with AsyncExitStack() as stack:
        async with asyncio.timeout(start_timeout_seconds):
            if server.command is not None:
                errlog = await stack.enter_async_context(stderr.pipe())
                params = StdioServerParameters(
                    command=server.command,
                    args=list(server.args),
                    env=filled.env or None,
                    cwd=server.cwd,
                )
                read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            else:
                assert filled.url is not None
                http = await stack.enter_async_context(
                    create_mcp_http_client(headers=filled.headers or None)
                )
                read, write = await stack.enter_async_context(
                    streamable_http_client(filled.url, http_client=http)
                )
            # The SDK has no "connection ended" signal: relay what the server sends, and
            # note the end of it.
            relayed_send, relayed = anyio.create_memory_object_stream[Any](0)

            async def relay() -> None:
                try:
                    async with relayed_send:
                        async for item in read:
                            await relayed_send.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass
                finally:
                    lost.set()

            relays = await stack.enter_async_context(anyio.create_task_group())
            relays.start_soon(relay)
            session = await stack.enter_async_context(
                ClientSession(relayed, write, message_handler=on_message)
            )
            await session.initialize()
            tools = await list_tools(session)
        try:
            yield Link(session, tools, name, lost, tools_changed)
        finally:
            relays.cancel_scope.cancel()
