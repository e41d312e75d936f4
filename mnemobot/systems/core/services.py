"""Services: what the bot hands to every system and tool factory, plugins included.

The bot layer builds one `Services` at start (bot/app.py) and passes it to each factory
named by a `mnemobot.systems` or `mnemobot.tools` entry point, so a plugin reaches the
same config, memory, model and sessions as the built-in systems without importing the
bot layer. Fields are typed by lower-layer classes or by the pipeline's own protocols.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import SessionStore
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.systems.core.llm import ChatModel
from mnemobot.systems.core.tool_runner import ToolRunner


@dataclass(frozen=True, slots=True)
class Services:
    """The bot's shared parts, handed to every system and tool factory at start."""

    settings: Settings
    paths: WorkspacePaths
    # Read `runtime.current()` (or `ctx.config` inside a turn) each time: it hot-reloads.
    runtime: RuntimeConfigStore
    # Each part takes the role it uses: `memory.recall`, `.record`, `.forget`, `.vectors`,
    # and `memory.scopes.run(scope, work)` to run one off the event loop.
    memory: WorkspaceMemory
    sessions: SessionStore
    llm: ChatModel
    # The tools the model is offered; plugin tools are in it once the bot has started.
    tools: ToolRunner
    # "Now", for anything that dates what it writes: a replay runs on its own clock.
    clock: Clock = SYSTEM_CLOCK

    def config(self) -> RuntimeConfig:
        """The runtime config in force now."""
        return self.runtime.current()

    def chat_model(self, config: RuntimeConfig | None = None) -> str:
        """The model name for chat requests: `llm.model`, or BOT_MODEL when it is null."""
        config = config or self.config()
        return config.llm.chat_model_name(self.settings.bot_model)
