"""McpServers: every server of the `mcp` section running, in step with runtime-config.json.

The section is looked at every `McpTiming.check_seconds`: a server added is started, one removed
or disabled is stopped and its tools withdrawn, one whose command, URL, env or headers
changed is restarted, and a change of only which tools are offered, confirmed or where
applies at once without a restart. A server's tools are registered in the tool registry
as one tool set once it is up, and kept while it restarts (a call then says it is down).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable, Mapping

from mnemobot.base.counts import counted
from mnemobot.bot.i18n import words_for
from mnemobot.bot.mcp.access import McpToolAccess, mcp_config
from mnemobot.bot.mcp.config import DEFAULT_MCP_TIMING, McpConfig, McpServerConfig, McpTiming
from mnemobot.bot.mcp.connection import ServerTool
from mnemobot.bot.mcp.secrets import bot_environment
from mnemobot.bot.mcp.supervisor import ServerState, ServerSupervisor
from mnemobot.bot.mcp.tool_adapter import adapt_tool, is_offered, server_of, tool_set_of
from mnemobot.bot.tools.chat_tools import ChatTools, WindowOf
from mnemobot.bot.tools.confirmations import Confirmations
from mnemobot.bot.tools.offer import MCP_SERVER_LABEL
from mnemobot.bot.tools.registry import ToolRegistry
from mnemobot.bot.turn.permissions import Permissions
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.core.tool_runner import Tool

log = logging.getLogger(__name__)

# Loaded off the event loop before the first server starts (about 0.4 s of imports).
SDK_MODULES = ("mcp", "mcp.client.stdio", "mcp.client.streamable_http")
MISSING_SDK = (
    "MCP servers are configured (mcp.servers) but the mcp package is not installed; "
    "`pip install mcp` (or reinstall mnemobot) to use them"
)


class McpServers:
    def __init__(
        self,
        runtime: RuntimeConfigStore,
        registry: ToolRegistry,
        confirmations: Confirmations,
        access: McpToolAccess,
        permissions: Permissions,
        environment: Callable[[], Mapping[str, str]] = bot_environment,
        window_of: WindowOf = lambda config: None,
        timing: McpTiming = DEFAULT_MCP_TIMING,
    ) -> None:
        """`window_of`: the model's context window as known (what tools fit depends on it);
        `timing`: how servers are looked after."""
        self.runtime = runtime
        self.timing = timing
        self.registry = registry
        # What the model is offered in a chat now: /tools, /status, /reminders.
        self.chat_tools = ChatTools(registry, runtime.current, window_of, access.tool_sets_for)
        self.confirmations = confirmations
        self.access = access
        self.permissions = permissions
        self.environment = environment
        self.supervisors: dict[str, ServerSupervisor] = {}
        self._applied: McpConfig | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._sdk_missing = False

    def settings(self) -> McpConfig:
        return mcp_config(self.runtime.current())

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the configured servers and follow edits; returns at once (call it inside
        the event loop). The bot answers while servers start, with or without them."""
        if self._watcher is None:
            if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
                # The SDK logs tracebacks for what this package reports in one line.
                logging.getLogger("mcp").setLevel(logging.CRITICAL)
            self._watcher = asyncio.create_task(self._watch(), name="mcp-servers")

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        async with self._lock:
            await asyncio.gather(*(s.stop() for s in self.supervisors.values()))
            for name in self.supervisors:
                self.registry.replace_set(tool_set_of(name), [])
            self.supervisors.clear()
            self._applied = None

    async def settled(self) -> None:
        """Return once every enabled server has started or failed to (a script at the
        console then finds their tools from its first line on)."""
        settings = self.settings()
        deadline = asyncio.get_running_loop().time() + self.timing.start_timeout_seconds + 5

        def done(name: str) -> bool:
            supervisor = self.supervisors.get(name)
            if supervisor is None:
                return self._sdk_missing
            return supervisor.state is not ServerState.STARTING or supervisor.failures_in_a_row > 0

        wanted = [name for name, server in settings.servers.items() if server.enabled]
        while not all(map(done, wanted)) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)

    async def _watch(self) -> None:
        while True:
            settings = self.settings()
            try:
                await self.apply(settings)
            except Exception:
                log.exception("applying the mcp section failed")
            await asyncio.sleep(self.timing.check_seconds)

    async def apply(self, settings: McpConfig) -> None:
        """Start, stop, restart or re-offer servers so they match `settings`."""
        async with self._lock:
            if settings == self._applied:
                return
            wanted = {name: s for name, s in settings.servers.items() if s.enabled}
            if wanted and not await self._sdk_loaded():
                self._applied = settings
                return
            for name in list(self.supervisors):
                server = wanted.get(name)
                running = self.supervisors[name]
                if server is None or server.connection() != running.server.connection():
                    await running.stop()
                    del self.supervisors[name]
                    self.registry.replace_set(tool_set_of(name), [])
                    if server is None:
                        log.info("MCP server %s stopped (removed or disabled)", name)
                elif server != running.server:
                    running.server = server
                    if running.state is ServerState.READY:
                        self._offer(name, running.tools)
            self._applied = settings
            # While there is room, servers' tools are offered in the order of the config.
            self.registry.order_sets(
                [(tool_set_of(n), f"{MCP_SERVER_LABEL}{n}") for n in settings.servers]
            )
            for name, server in wanted.items():
                if name not in self.supervisors:
                    self._start(name, server)

    async def _sdk_loaded(self) -> bool:
        try:
            for module in SDK_MODULES:
                await asyncio.to_thread(importlib.import_module, module)
        except ImportError:
            if not self._sdk_missing:
                log.error(MISSING_SDK)
            self._sdk_missing = True
            return False
        return True

    def _start(self, name: str, server: McpServerConfig) -> None:
        supervisor = ServerSupervisor(
            name, server, self.timing, self.environment, self._tools_changed
        )
        self.supervisors[name] = supervisor
        log.info("MCP server %s: starting (%s)", name, server.transport)
        supervisor.start()

    def _tools_changed(self, name: str, tools: list[ServerTool] | None) -> None:
        if name in self.supervisors:
            self._offer(name, tools or [])

    def _offer(self, name: str, tools: list[ServerTool]) -> None:
        supervisor = self.supervisors[name]
        server = supervisor.server
        confirm_timeout = self.timing.confirm_timeout_seconds
        adapted = [
            adapt_tool(name, server, tool, supervisor, self.confirmations, confirm_timeout)
            for tool in tools
            if is_offered(server, tool.name)
        ]
        refused = self.registry.replace_set(tool_set_of(name), adapted)
        if refused:
            log.warning(
                "MCP server %s: tool(s) %s not offered (the name is taken or not usable)",
                name,
                ", ".join(refused),
            )

    # -- seen from outside ------------------------------------------------------------------------

    def status_lines(self, chat: ChatRef) -> list[str]:
        """One line per configured server for /status; why one is down, to operators only."""
        settings = self.settings()
        if not settings.servers:
            return []
        if self._sdk_missing:
            return ["MCP servers: configured, but the mcp package is not installed"]
        detail = self.permissions.is_operator(chat)
        parts = []
        for name, server in settings.servers.items():
            supervisor = self.supervisors.get(name)
            if not server.enabled:
                parts.append(f"{name} disabled")
            elif supervisor is None or supervisor.state is ServerState.STARTING:
                parts.append(f"{name} starting")
            elif supervisor.state is ServerState.READY:
                parts.append(f"{name} ready ({counted(len(supervisor.tools), 'tool')})")
            elif detail:
                parts.append(f"{name} down ({supervisor.reason}), {supervisor.next_start()}")
            else:
                parts.append(f"{name} down, restarting")
        return [f"MCP servers: {'; '.join(parts)}"]

    async def tools_text(self, chat: ChatRef) -> str:
        """/tools: the tools the model can use in this chat now, with where each comes
        from, and how many the model's window left out."""
        found = await self.chat_tools.offer(chat)

        words = words_for(chat.language)

        def source(tool: Tool) -> str | None:
            server = server_of(tool.tool_set) if tool.tool_set else None
            return f"{MCP_SERVER_LABEL}{server}" if server else None

        lines = self.chat_tools.listing(found, source, words)
        for name in sorted(filter(None, map(server_of, found.allowed))):
            supervisor = self.supervisors.get(name)
            if supervisor is None or supervisor.state is not ServerState.READY:
                lines.append(
                    words.gettext(
                        "- MCP server {name}: its tools are not available right now", name=name
                    )
                )
        return "\n".join(lines)
