"""The assembled bot (`App`): the parts `bot.app.build_app` makes, and their lifecycle.

What a channel, the CLI or a test holds once the bot is built: the stores, the model
client, the pipeline and assistant, commands, the MCP servers, maintenance and scheduled
tasks, with the one order they start and stop in. Apart from the composition root
(`bot.app`), which says how the parts are made; this says what the made bot is and does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.bot.mcp.servers import McpServers
from mnemobot.bot.media.reader import MediaReader
from mnemobot.bot.schedule.service import ScheduleService
from mnemobot.bot.tools.confirmations import Confirmations
from mnemobot.bot.tools.registry import ToolRegistry
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.commands import Commands
from mnemobot.bot.turn.erasure import ScopeErasure
from mnemobot.bot.upkeep.maintenance_timer import MaintenanceTimer
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import SessionStore
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.systems.core.llm import ChatModel
from mnemobot.systems.core.pipeline import Pipeline


@dataclass(slots=True)
class App:
    """The assembled bot, as `build_app` makes it and a channel serves it.

    Lifecycle: `start_background()` once, inside the running event loop (memory maintenance
    and the MCP servers start), then `close()` (the servers and maintenance stop, the model
    client and memory's worker threads are released). Like python-telegram-bot's
    Application, starting what is running, or what was closed, raises; closing what was
    closed does nothing, and an app that never started may be closed.
    """

    settings: Settings
    paths: WorkspacePaths
    runtime: RuntimeConfigStore
    sessions: SessionStore
    memory: WorkspaceMemory
    llm: ChatModel
    tools: ToolRegistry
    pipeline: Pipeline
    assistant: Assistant
    commands: Commands
    erasure: ScopeErasure
    # Questions to users before a tool runs; channels answer them (buttons, replies).
    confirmations: Confirmations
    mcp: McpServers
    # Speech to text and image descriptions for channels that take files.
    media: MediaReader
    # The time of turns, tasks and what channels keep (a replay, a bench or a test: its own).
    clock: Clock = SYSTEM_CLOCK
    maintenance: MaintenanceTimer | None = None
    schedule: ScheduleService | None = None
    # Asks the model server for its context window (given the model's name) in the
    # background; None for a model client that cannot ask (a plugin's, a test's).
    window_probe: Callable[[str], None] | None = None
    _started: bool = field(default=False, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)

    def start_background(self) -> None:
        """Start background work (memory maintenance, MCP servers); call from inside the
        event loop."""
        if self._closed:
            raise RuntimeError("this App is closed; build a new one with build_app()")
        if self._started:
            raise RuntimeError("this App is already started (start_background() runs once)")
        self._started = True
        if self.window_probe is not None:
            # Known before the first reply where the server says it; never waited for here.
            self.window_probe(self.assistant.model_name(self.runtime.current()))
        if self.maintenance is not None:
            self.maintenance.start()
            compactor = self.commands.compactor
            if compactor is not None:
                # Memory flushes a stopped (or killed) process left waiting go on, though
                # their chats may not write again.
                self.maintenance.start_background(
                    compactor.resume_all(self.runtime.current()), cancel_on_stop=True
                )
        self.mcp.start()

    async def tools_ready(self) -> None:
        """Return once every configured MCP server has started or failed to."""
        await self.mcp.settled()

    async def close(self) -> None:
        """Stop background work and release the model client and memory; once."""
        if self._closed:
            return
        self._closed = True
        if self.schedule is not None:
            await self.schedule.close()
        await self.mcp.close()
        if self.maintenance is not None:
            await self.maintenance.stop()
        await self.media.close()
        await self.llm.close()
        self.memory.close()
        if isinstance(self.memory.vectors.embedder, OpenAIEmbeddings):
            await self.memory.vectors.embedder.aclose()
