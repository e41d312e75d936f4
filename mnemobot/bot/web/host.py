"""What the web page is handed: the bot's services, or a standalone set on the same files.

The CLI builds it: `mnemobot run --web` from the running bot's `App` (the same memory
service, its scope locks and cache, the same maintenance run lock), `mnemobot web` from a
workspace alone. The page imports nothing above its own room.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.schedule.store import TaskStore
from mnemobot.bot.upkeep.maintenance_timer import MaintenanceTimer
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import SessionStore
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.model.windows import ModelWindow


def never_refused() -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class WebHost:
    paths: WorkspacePaths
    runtime: RuntimeConfigStore
    memory: WorkspaceMemory
    sessions: SessionStore
    # Runs the erasure step of forgetting (and holds the run lock maintenance holds).
    maintenance: MaintenanceTimer
    # The scheduled tasks' store, as it is now (a standalone page reads the files anew).
    tasks: Callable[[], TaskStore]
    # The chat model of a config (llm.model, else BOT_MODEL) and its learned window.
    model_name: Callable[[RuntimeConfig], str]
    known_window: Callable[[str], ModelWindow | None]
    # Every text shown passes through it: the bot's secrets come out (see `redaction`).
    redact: Callable[[str], str]
    # Why a correction cannot be made now (a bot in another process holds the workspace),
    # or None when it can.
    corrections_refused: Callable[[], str | None] = never_refused
    # Whether the page runs inside the bot (`run --web`), for the header.
    in_bot: bool = False
    clock: Clock = SYSTEM_CLOCK
