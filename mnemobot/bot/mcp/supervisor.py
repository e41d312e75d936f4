"""ServerSupervisor: keeps one MCP server connected, restarting it with growing pauses.

A server that cannot be started, exits, crashes mid-call or stops answering is reported in
one log line (a failure repeated with the same reason only once) and in `/status`, and
started again after `McpTiming.restart_first_seconds`, doubling up to
`restart_max_seconds` while it keeps failing. Nothing here ever holds up a turn: a call to
a server that is not up fails at once with a line the model can read, and every call has
its time limit.

Every reason and error text kept or passed on here has the server's filled-in values
taken out: a server's error may repeat its token, and these texts reach the log, `/status`,
the model and the session it is stored in.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from mnemobot.bot.mcp.config import McpServerConfig, McpTiming
from mnemobot.bot.mcp.connection import (
    Link,
    ServerTool,
    StderrTail,
    describe_failure,
    list_tools,
    open_link,
)
from mnemobot.bot.mcp.secrets import (
    MissingVariables,
    fill_server,
    hide_in_logs,
    without_secrets,
)

log = logging.getLogger(__name__)

# A server up this long before it failed starts again after the first pause, not a longer one.
STABLE_SECONDS = 60.0
# How long a server may take to answer a ping after a call failed, before it is restarted.
PING_SECONDS = 5.0
# How long stopping a server may take before its task is cancelled.
STOP_SECONDS = 10.0


class ServerState(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    # Failed or stopped; started again after a pause.
    RESTARTING = "restarting"
    STOPPED = "stopped"


class ServerUnavailable(Exception):
    """The server is not connected right now; the message says why and what happens next."""


class ServerCrashed(Exception):
    """The connection broke during the call; the server is being restarted."""


class CallTimedOut(Exception):
    """The server did not answer within the call's time limit; the call was cancelled."""


class CallRefused(Exception):
    """The server answered the call with a protocol error (not a tool error result)."""


ToolsChanged = Callable[[str, list[ServerTool] | None], None]


class ServerSupervisor:
    def __init__(
        self,
        name: str,
        server: McpServerConfig,
        timing: McpTiming,
        environment: Callable[[], Mapping[str, str]],
        on_tools: ToolsChanged,
    ) -> None:
        self.name = name
        self.server = server
        self.timing = timing
        self.environment = environment
        self.on_tools = on_tools
        self.state = ServerState.STARTING
        # Why it is not up (last failure), without secrets; None while it is fine.
        self.reason: str | None = None
        self.tools: list[ServerTool] = []
        self.next_attempt_at: float | None = None
        self.failures_in_a_row = 0
        # The values handed to the server at its last start.
        self._secrets: tuple[str, ...] = ()
        self._link: Link | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_logged_reason: str | None = None
        self._checks: set[asyncio.Task[None]] = set()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"mcp-server-{self.name}")

    async def stop(self) -> None:
        """Close the connection (a stdio server is asked to exit, then killed)."""
        self._stopping.set()
        for check in list(self._checks):
            check.cancel()
        task = self._task
        if task is None:
            self.state = ServerState.STOPPED
            return
        if self.state is ServerState.STARTING:
            # A start can take up to `start_timeout_seconds`: not worth waiting for.
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=STOP_SECONDS)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.state = ServerState.STOPPED

    async def _run(self) -> None:
        timing = self.timing
        pause = timing.restart_first_seconds
        while not self._stopping.is_set():
            self.state = ServerState.STARTING
            self.next_attempt_at = None
            started = time.monotonic()
            reason = await self._connect_and_serve()
            if reason is None or self._stopping.is_set():
                break
            if time.monotonic() - started > STABLE_SECONDS:
                pause = timing.restart_first_seconds
            self.failures_in_a_row += 1
            self._report_failure(reason, pause)
            self.state = ServerState.RESTARTING
            self.next_attempt_at = time.monotonic() + pause
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), pause)
            pause = min(pause * 2, timing.restart_max_seconds)
        self.state = ServerState.STOPPED

    async def _connect_and_serve(self) -> str | None:
        """Connect and serve until the connection ends; returns why it failed or ended,
        None when it was stopped."""
        try:
            filled = fill_server(self.server, self.environment())
        except MissingVariables as error:
            return str(error)
        self._secrets = filled.secrets
        hide_in_logs(filled.secrets)
        stderr = StderrTail(filled.secrets)
        try:
            async with open_link(
                self.name,
                self.server,
                filled,
                start_timeout_seconds=self.timing.start_timeout_seconds,
                stderr=stderr,
            ) as link:
                self._up(link)
                await self._serve(link)
                self._link = None
                if self._stopping.is_set():
                    return None
                lost_reason = self.reason
            words = stderr.last_words()
            return lost_reason or ("it exited" + (f"; its last words: {words}" if words else ""))
        except asyncio.CancelledError:
            self._link = None
            task = asyncio.current_task()
            if self._stopping.is_set() or (task is not None and task.cancelling()):
                raise
            # The HTTP transport cancels its host when the connection breaks.
            return "the connection broke"
        except Exception as error:
            self._link = None
            if self._stopping.is_set():
                return None
            return describe_failure(error, self.server, filled.secrets, stderr)

    async def _serve(self, link: Link) -> None:
        """Until the server goes or is stopped: follow changes of its list of tools."""
        while True:
            await _first_of(self._stopping, link.lost, link.tools_changed)
            if self._stopping.is_set() or link.lost.is_set():
                return
            link.tools_changed.clear()
            try:
                async with asyncio.timeout(self.timing.start_timeout_seconds):
                    tools = await list_tools(link.session)
            except Exception as error:
                self._lose(link, f"listing its changed tools failed ({type(error).__name__})")
                return
            link.tools = self.tools = tools
            log.info("MCP server %s changed its tools: %d tool(s)", self.name, len(tools))
            self.on_tools(self.name, tools)

    def _up(self, link: Link) -> None:
        back = self.failures_in_a_row > 0
        self._link = link
        self.tools = link.tools
        self.state = ServerState.READY
        self.reason = None
        self.failures_in_a_row = 0
        self._last_logged_reason = None
        log.info(
            "MCP server %s %s: %d tool(s)",
            self.name,
            "is back" if back else "ready",
            len(link.tools),
        )
        self.on_tools(self.name, link.tools)

    def redact(self, text: str) -> str:
        """`text` without the values handed to the server (its env, headers, URL secrets):
        for anything of the server's that the model, a chat or a log may see."""
        return without_secrets(text, self._secrets)

    def _report_failure(self, reason: str, pause: float) -> None:
        reason = self.reason = self.redact(reason)
        level = logging.WARNING if reason != self._last_logged_reason else logging.DEBUG
        self._last_logged_reason = reason
        log.log(
            level,
            "MCP server %s is down (%s); starting it again in %g s",
            self.name,
            reason,
            pause,
        )

    # -- calls -----------------------------------------------------------------------------------

    def next_start(self) -> str:
        if self.next_attempt_at is None:
            return "starting again now"
        return f"next start in {max(0.0, self.next_attempt_at - time.monotonic()):.0f} s"

    def describe_down(self) -> str:
        if self.state is ServerState.STARTING:
            return "it is starting"
        if self.state is ServerState.RESTARTING:
            return f"it is down ({self.reason}); {self.next_start()}"
        return "it is stopped"

    async def call(
        self, tool: str, arguments: dict[str, Any], timeout_seconds: float | None
    ) -> Any:
        """The server's CallToolResult for one call, or one of this module's exceptions."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        link = self._link
        if link is None or link.lost.is_set() or self.state is not ServerState.READY:
            raise ServerUnavailable(self.describe_down())
        try:
            return await link.session.call_tool(
                tool, arguments, read_timeout_seconds=timeout_seconds
            )
        except MCPError as error:
            message = self.redact(error.message)
            if error.code == REQUEST_TIMEOUT:
                self._check_alive_soon(link)
                raise CallTimedOut(message) from None
            if error.code == CONNECTION_CLOSED and not await self._answers_ping(link):
                self._lose(link, f"the connection broke during a call ({message})")
                raise ServerCrashed(message) from None
            raise CallRefused(message) from None
        except asyncio.CancelledError:
            # The turn's time limit or /stop: the SDK told the server to cancel the call.
            # A server that cannot take even that is looked at in the background.
            self._check_alive_soon(link)
            raise
        except Exception as error:
            # Anything else from the transport (a broken pipe, an HTTP error): gone.
            reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            reason = self.redact(reason)
            self._lose(link, f"the connection broke during a call ({reason})")
            raise ServerCrashed(reason) from None

    async def _answers_ping(self, link: Link) -> bool:
        if link.lost.is_set():
            return False
        try:
            async with asyncio.timeout(PING_SECONDS):
                await link.session.send_ping()
        except Exception:
            return False
        return True

    def _check_alive_soon(self, link: Link) -> None:
        """After a call that timed out: a server that no longer answers pings is hung."""

        async def check() -> None:
            if not await self._answers_ping(link):
                self._lose(
                    link, f"it stopped answering (no answer to a ping in {PING_SECONDS:g} s)"
                )

        task = asyncio.create_task(check())
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    def _lose(self, link: Link, reason: str) -> None:
        """Give up on `link`: the supervisor closes it and starts the server again."""
        if link is self._link and not link.lost.is_set():
            self.reason = self.redact(reason)
            link.lost.set()


async def _first_of(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
