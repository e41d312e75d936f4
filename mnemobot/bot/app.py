"""The composition root: builds the workspace, stores, LLM client, tools, pipeline, commands.

One concept, the assembly, hence a little over the usual length: `build_app` names the
rooms in the order they need each other, and one small function builds each. What the
assembled bot is (`App`: its parts, its start and close) is `bot.assembled_app`; the
runtime config's sections it registers are `bot.runtime_sections`.

Nothing below this module knows how the bot is put together: channels are handed the
assembled parts (see `bot.channels.base.ChannelHost`), systems and tools get `Services`,
and the CLI (the only importer of this module inside the package) starts it.

Longer than a module of ours should be: it is the one place where every part is built
and wired to the others, so that what depends on what reads top to bottom; each part's
own logic lives in its module.
"""

from __future__ import annotations

from functools import partial

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.assembled_app import App
from mnemobot.bot.delivery.redis_erasure import RedisSessionHolds, append_only_rewrite_step
from mnemobot.bot.delivery.replicas import LeasedSessions, Replicas
from mnemobot.bot.delivery.turn_board import RedisTurnBoard
from mnemobot.bot.i18n import words_for
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.bot.llm.model_gate import ModelGate, TurnBoard, server_slots
from mnemobot.bot.mcp.access import McpToolAccess, named_users
from mnemobot.bot.mcp.config import McpTiming
from mnemobot.bot.mcp.servers import McpServers
from mnemobot.bot.media.reader import MediaReader
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.bot.schedule.limits import ScheduleLimits
from mnemobot.bot.schedule.redis_store import RedisTaskStore
from mnemobot.bot.schedule.reminder_asks import REMINDERS_OFF, asks_for_reminder
from mnemobot.bot.schedule.service import ScheduleService, build_schedule
from mnemobot.bot.schedule.store import TaskStore
from mnemobot.bot.tools.chat_tools import REMINDERS
from mnemobot.bot.tools.clock_tool import datetime_tool
from mnemobot.bot.tools.confirmations import Confirmations
from mnemobot.bot.tools.dropped_tool_note import DroppedToolNote
from mnemobot.bot.tools.files_tool import FilesTool
from mnemobot.bot.tools.forget_asks import FORGETTING_OFF, asks_to_forget
from mnemobot.bot.tools.memory_tool import MemoryTool
from mnemobot.bot.tools.offer import ToolOffering
from mnemobot.bot.tools.registry import ToolRegistry, load_entry_point_tools
from mnemobot.bot.tools.session_tools import SessionTools
from mnemobot.bot.tuning import DEFAULT_TUNING, Tuning
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.commands import Commands, StatusProvider
from mnemobot.bot.turn.erasure import ScopeErasure
from mnemobot.bot.turn.erasure_journal import ErasureJournal, RedisErasureJournal
from mnemobot.bot.turn.memory_status import memory_status
from mnemobot.bot.turn.permissions import EDIT_MEMORY, ConsoleRoles, Permissions
from mnemobot.bot.turn.speaker_rights import SpeakerRights
from mnemobot.bot.turn.tool_loop_words import loop_note
from mnemobot.bot.upkeep.maintenance_timer import MaintenanceTimer
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.large_results import LargeResultStore
from mnemobot.conversation.pending_flushes import PendingFlushes
from mnemobot.conversation.redis_sessions import RedisSessionStore
from mnemobot.conversation.session import SessionStore
from mnemobot.memory.services.record import supersede_matching_facts
from mnemobot.memory.services.workspace_memory import MemoryUpkeep, WorkspaceMemory
from mnemobot.memory.store.scope_paths import chat_scope
from mnemobot.model.vision import ModelVisionStore
from mnemobot.model.windows import ModelWindow, ModelWindowStore
from mnemobot.systems.compaction.auto_compaction import AutoCompaction, OverflowRecovery
from mnemobot.systems.compaction.compactor import Compactor
from mnemobot.systems.compaction.summary_model import CompactionCalls
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.core.llm import ChatModel
from mnemobot.systems.core.pipeline import Pipeline, System, load_entry_point_systems
from mnemobot.systems.core.services import Services
from mnemobot.systems.memory_steps.context_building import ContextBuilding
from mnemobot.systems.memory_steps.memory_persist import MemoryPersist
from mnemobot.systems.model_call.context_window import ContextWindowLimit
from mnemobot.systems.model_call.tool_limits import ToolLimits
from mnemobot.systems.model_call.tool_loop import ToolLoop


def scope_for(chat: ChatRef, config: RuntimeConfig) -> str:
    """The memory scope of a chat: the chat itself (default) or one global scope.

    Forum topics of one group share the group's memory but have their own sessions.
    """
    return chat_scope(chat.channel, chat.chat_id, config.memory.scope)


def build_app(
    settings: Settings,
    *,
    llm: ChatModel | None = None,
    sessions: SessionStore | None = None,
    shared_workspace: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    tasks: TaskStore | None = None,
    erasure_journal: ErasureJournal | None = None,
    tuning: Tuning = DEFAULT_TUNING,
    turn_board: TurnBoard | None = None,
) -> App:
    """`sessions`: another store than the workspace's files (replicas keep them in Redis);
    `shared_workspace`: other processes write the memory files too (replicas); `clock`: the
    time of each turn and of scheduled tasks (a replay, a bench or a test passes its own);
    `tasks`: where scheduled tasks are kept (replicas: Redis), else the workspace's files;
    `erasure_journal`: where /forget_me keeps asks and unfinished erasures (replicas:
    Redis), else a file of the workspace; `turn_board`: the turns in flight in every
    replica (Redis), for background model calls to wait on; `tuning`: internal constants
    (a test's shorter pauses), never the operator's settings.

    Room by room, each from the ones before it: the workspace, memory and the model
    (`Services`), maintenance, tools, compaction, permissions and the MCP servers, the turn
    core, scheduled tasks, commands; the `App` they make is what channels are handed."""
    paths, runtime = _open_workspace(settings)
    if sessions is None:
        sessions = SessionStore(paths.sessions, clock=clock)
    if llm is None:
        llm = _chat_model(settings, paths, runtime, clock, turn_board, tuning)
    tools = ToolRegistry()
    services = Services(
        settings=settings,
        paths=paths,
        runtime=runtime,
        memory=_memory(
            settings, paths, runtime, shared_files=shared_workspace, clock=clock, tuning=tuning
        ),
        sessions=sessions,
        llm=llm,
        tools=tools,
        clock=clock,
    )
    if isinstance(llm, OpenAIChatModel):
        # A server found to drop tools (`run`'s check) gets none: the prompt, the room
        # tools take and /status then say what the model really has.
        tools.dropped_by_server = partial(_drops_tools, llm, services)
        tools.checking_server = llm.checking_tools
    maintenance = _maintenance(services, tuning.maintenance_interval_hours)
    large_results = LargeResultStore(paths.large_tool_results)
    permissions = _permissions(runtime)
    _register_tools(tools, services, maintenance, large_results, permissions)
    compactor = _compactor(services, maintenance, tuning.compaction_calls)
    confirmations = Confirmations()
    mcp = _mcp(services, tools, confirmations, permissions, tuning.mcp)
    assistant = _assistant(
        services, tools, compactor, mcp.access, large_results, permissions, tuning.tool_limits
    )
    if isinstance(llm, OpenAIChatModel):
        # Its turns tell the model client when a reply is in flight (replies first).
        assistant.gate = llm.gate
    erasure = ScopeErasure(
        paths, services.memory.forget, sessions, runtime.current, journal=erasure_journal
    )
    schedule = _schedule(services, assistant, permissions, mcp, erasure, tasks, tuning.schedule)
    commands = _commands(
        services, assistant, compactor, maintenance, mcp, schedule, permissions, erasure
    )
    return App(
        settings=settings,
        paths=paths,
        runtime=runtime,
        sessions=sessions,
        memory=services.memory,
        llm=llm,
        tools=tools,
        pipeline=assistant.pipeline,
        assistant=assistant,
        commands=commands,
        erasure=erasure,
        confirmations=confirmations,
        mcp=mcp,
        media=MediaReader(settings, llm, assistant.model_name, tuning.reader, tuning.speech),
        clock=clock,
        maintenance=maintenance,
        schedule=schedule,
        window_probe=llm.start_window_probe if isinstance(llm, OpenAIChatModel) else None,
    )


def _open_workspace(settings: Settings) -> tuple[WorkspacePaths, RuntimeConfigStore]:
    """The workspace's folders, made if missing, and its runtime config (written if none)."""
    paths = WorkspacePaths(settings.bot_workspace)
    paths.create()
    runtime = open_runtime_config(paths.runtime_config)
    runtime.ensure_file()
    return paths, runtime


def _memory(
    settings: Settings,
    paths: WorkspacePaths,
    runtime: RuntimeConfigStore,
    *,
    shared_files: bool,
    clock: Clock,
    tuning: Tuning,
) -> WorkspaceMemory:
    return WorkspaceMemory.open(
        paths.root,
        shared_files=shared_files,
        clock=clock,
        # Reads memory.embeddings at each call: does nothing until they are configured.
        embedder=OpenAIEmbeddings(settings, runtime),
        ranking=tuning.ranking,
        extraction=tuning.extraction,
    )


def _chat_model(
    settings: Settings,
    paths: WorkspacePaths,
    runtime: RuntimeConfigStore,
    clock: Clock,
    turn_board: TurnBoard | None,
    tuning: Tuning,
) -> OpenAIChatModel:
    config = runtime.current()

    def slots() -> int:
        # Read at each call: llm.serverSlots may change while the bot runs.
        return server_slots(runtime.current().llm.server_slots, settings.openai_base_url)

    return OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        base_url=settings.openai_base_url,
        max_retries=config.llm.max_retries,
        timeout_seconds=config.llm.request_timeout_seconds,
        windows=ModelWindowStore.in_workspace(paths.root, clock=clock),
        vision=ModelVisionStore.in_workspace(paths.root, clock=clock),
        gate=ModelGate(slots, turn_board, quiet_seconds=tuning.background_quiet_seconds),
        clock=clock,
    )


def _drops_tools(llm: OpenAIChatModel, services: Services, config: RuntimeConfig) -> bool:
    return llm.drops_tools(services.chat_model(config))


def _maintenance(services: Services, interval_hours: float) -> MaintenanceTimer:
    memory, runtime = services.memory, services.runtime
    return MaintenanceTimer(
        paths=services.paths,
        runtime=runtime,
        memory=MemoryUpkeep(memory),
        llm=services.llm,
        chat_model_name=services.settings.bot_model,
        on_superseded=supersede_matching_facts(memory.record, lambda: runtime.current().memory),
        clock=services.clock,
        interval_hours=interval_hours,
    )


def _register_tools(
    tools: ToolRegistry,
    services: Services,
    maintenance: MaintenanceTimer,
    large_results: LargeResultStore,
    permissions: Permissions,
) -> None:
    """The built-in tools, then the plugins' (a plugin reusing a built-in's name is skipped)."""

    async def may_edit(chat: ChatRef) -> str | None:
        # One rule for every door into a chat's memory: /forget_me's, for the tools.
        return await permissions.refusal(chat, EDIT_MEMORY)

    memory_tool = MemoryTool(
        services.memory,
        on_forgotten=maintenance.notify_forgotten,
        clock=services.clock,
        may_edit=may_edit,
    )
    for tool in [
        datetime_tool(services.clock),
        FilesTool(services.paths.files, may_edit=may_edit).tool(),
        memory_tool.tool(),
        *SessionTools(
            services.sessions, large_results, services.memory.forget.forgotten_texts
        ).tools(),
    ]:
        tools.register(tool)
    load_entry_point_tools(tools, services)


def _compactor(
    services: Services, maintenance: MaintenanceTimer, calls: CompactionCalls
) -> Compactor:
    llm = services.llm
    return Compactor(
        llm,
        services.sessions,
        services.memory,
        chat_model_for=services.chat_model,
        on_compacted=maintenance.notify_compacted,
        windows=llm if isinstance(llm, OpenAIChatModel) else None,
        clock=services.clock,
        calls=calls,
        slow_server_seconds=partial(
            _slow_server_seconds, llm.base_url if isinstance(llm, OpenAIChatModel) else None
        ),
        pending=PendingFlushes(services.sessions.directory, clock=services.clock),
        start_background=partial(maintenance.start_background, cancel_on_stop=True),
        until_quiet=llm.gate.quiet if isinstance(llm, OpenAIChatModel) else None,
    )


def _slow_server_seconds(base_url: str | None, config: RuntimeConfig) -> float | None:
    """How long a call may take on a server that answers one request at a time (the
    operator's llm.requestTimeoutSeconds); None for a server without a slot limit."""
    if server_slots(config.llm.server_slots, base_url) == 0:
        return None
    return config.llm.request_timeout_seconds


def _permissions(runtime: RuntimeConfigStore) -> Permissions:
    """Who may run which command; each channel registers how it knows its admins."""
    permissions = Permissions(runtime.current)
    permissions.register("console", ConsoleRoles())
    return permissions


def _mcp(
    services: Services,
    tools: ToolRegistry,
    confirmations: Confirmations,
    permissions: Permissions,
    timing: McpTiming,
) -> McpServers:
    """The outside servers' tools, registered beside ours; who may call them (`access`)."""
    access = McpToolAccess(permissions, named_users(services.settings, permissions))
    llm = services.llm

    def window_of(config: RuntimeConfig) -> ModelWindow | None:
        if not isinstance(llm, OpenAIChatModel):
            return None
        return llm.known_window(services.chat_model(config))

    return McpServers(
        services.runtime,
        tools,
        confirmations,
        access,
        permissions,
        window_of=window_of,
        timing=timing,
    )


def _assistant(
    services: Services,
    tools: ToolRegistry,
    compactor: Compactor,
    mcp_access: McpToolAccess,
    large_results: LargeResultStore,
    permissions: Permissions,
    tool_limits: ToolLimits,
) -> Assistant:
    """The turn core: the pipeline of systems (the plugins' among them) a turn runs."""
    llm, memory = services.llm, services.memory
    context_building = ContextBuilding(memory.recall, memory.vectors)

    def dropped(config: RuntimeConfig) -> bool:
        return tools.dropped_by_server(config)

    systems: list[System] = [
        mcp_access,
        SpeakerRights(permissions, tools.offered_names),
        ToolOffering(tools.offered_names),
        AutoCompaction(compactor, services.tools),
        context_building,
        ToolLoop(
            llm,
            services.tools,
            notes=loop_note,
            overflow_recovery=OverflowRecovery(compactor, context_building),
            large_results=large_results,
            clock=services.clock,
            save_session=services.sessions.save_async,
            limits=tool_limits,
        ),
        MemoryPersist(memory.record, memory.forget, clock=services.clock),
        # `tools.dropped_by_server` is looked up at each turn: it is set once the model
        # client is built, and its check may turn tools off after start.
        DroppedToolNote("RemindersOff", asks_for_reminder, REMINDERS_OFF, dropped),
        DroppedToolNote("ForgettingOff", asks_to_forget, FORGETTING_OFF, dropped),
    ]
    if isinstance(llm, OpenAIChatModel):
        systems.append(ContextWindowLimit(llm))
    systems += load_entry_point_systems(services)
    return Assistant(
        settings=services.settings,
        paths=services.paths,
        runtime=services.runtime,
        sessions=services.sessions,
        pipeline=Pipeline(systems),
        scope_for=scope_for,
        clock=services.clock,
        record=memory.record,
    )


def _schedule(
    services: Services,
    assistant: Assistant,
    permissions: Permissions,
    mcp: McpServers,
    erasure: ScopeErasure,
    tasks: TaskStore | None,
    limits: ScheduleLimits,
) -> ScheduleService:
    """Scheduled tasks: their tool offered to the model (/reminders says when the model's
    window leaves no room for it), their files erased with a chat's."""
    schedule = build_schedule(
        workspace=services.paths.root,
        config=services.runtime.current,
        assistant=assistant,
        permissions=permissions,
        clock=services.clock,
        store=tasks,
        unavailable=partial(mcp.chat_tools.missing_text, name="schedule", what=REMINDERS),
        limits=limits,
    )
    mcp.registry.register(schedule.tool)
    erasure.add_step(schedule.erase)
    return schedule


def _commands(
    services: Services,
    assistant: Assistant,
    compactor: Compactor,
    maintenance: MaintenanceTimer,
    mcp: McpServers,
    schedule: ScheduleService,
    permissions: Permissions,
    erasure: ScopeErasure,
) -> Commands:
    llm = services.llm
    return Commands(
        assistant,
        compactor=compactor,
        # Every chat's /status, in this order; its channel adds the channel's own lines.
        status_providers=[
            memory_status(assistant, services.memory.recall),
            _maintenance_status(assistant, maintenance),
            mcp.status_lines,
        ],
        async_status_providers=[mcp.chat_tools.status_lines, schedule.status_lines],
        handlers={"reminders": schedule.reminders},
        memory=services.memory.forget,
        known_window=llm.known_window if isinstance(llm, OpenAIChatModel) else None,
        window_unstated=llm.window_unstated if isinstance(llm, OpenAIChatModel) else None,
        permissions=permissions,
        erasure=erasure,
        tools_text=mcp.tools_text,
    )


def _maintenance_status(assistant: Assistant, maintenance: MaintenanceTimer) -> StatusProvider:
    def lines(chat: ChatRef) -> list[str]:
        scope = assistant.scope_for(chat, assistant.config())
        return maintenance.status_lines(scope, words_for(chat.language))

    return lines


def build_replica_app(
    settings: Settings,
    replicas: Replicas,
    *,
    clock: Clock = SYSTEM_CLOCK,
    tuning: Tuning = DEFAULT_TUNING,
) -> App:
    """The app of one replica: sessions and scheduled tasks in Redis, everything else on
    the shared workspace."""
    paths = WorkspacePaths(settings.bot_workspace)
    sessions = RedisSessionStore(paths.sessions, LeasedSessions(replicas), clock=clock)
    namespace = replicas.coordination.namespace
    tasks = RedisTaskStore(replicas.client, namespace=namespace)
    board = RedisTurnBoard(replicas.client, namespace=namespace, replica_id=settings.replica_id)
    app = build_app(
        settings,
        sessions=sessions,
        shared_workspace=True,
        clock=clock,
        tasks=tasks,
        erasure_journal=RedisErasureJournal(replicas.client, namespace=namespace),
        tuning=tuning,
        turn_board=board,
    )
    # Forgetting redacts the sessions in Redis too, under each chat's lease; /forget_me
    # has Redis drop the old values from its append-only file.
    app.memory.forget.keep_sessions_in(RedisSessionHolds(replicas))
    app.erasure.add_step(append_only_rewrite_step(replicas, sessions.flush))
    return app
