"""`mnemobot web [--host H] [--port P] [--read-only]`: the memory page over a workspace;
and the page `mnemobot run --web [PORT]` serves beside the bot, on the bot's services.

Alone, the page has services of its own on the workspace's files: a memory service that
reads again what another process wrote (`shared_files`), the maintenance timer's erasure
step (under the scope's maintenance lock, as `memory maintain` takes it), the task files.
While a `mnemobot run` serves the same workspace, forgetting from here is refused (the
bot's cache of the chat would bring the item back): `run --web` serves the page from the
bot, where a forget goes through the bot's own memory service. Restoring MEMORY.md is
safe from either: every writer of that file holds its lock, and the bot reads it from
disk each turn.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from functools import partial

from mnemobot.bot.app import App
from mnemobot.bot.cli.erasure_reach import reach_beyond_files, replicas_of
from mnemobot.bot.cli.logging_setup import redact
from mnemobot.bot.cli.memory_commands import served_by_a_bot
from mnemobot.bot.cli.startup import fail, secrets_of, settings_or_exit
from mnemobot.bot.delivery.replicas import Replicas
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.bot.mcp.secrets import hide_in_logs
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.bot.schedule.service import close_store, schedule_folder, workspace_store
from mnemobot.bot.schedule.store import FileTaskStore, TaskStore
from mnemobot.bot.upkeep.maintenance_timer import MaintenanceTimer
from mnemobot.bot.web.access import (
    TOKEN_VARIABLE,
    TOKENS_VARIABLE,
    Access,
    TokenError,
    WebToken,
    generated_token,
    tokens_from_environment,
)
from mnemobot.bot.web.host import WebHost
from mnemobot.bot.web.server import WebServer, build_web_app, cookie_name
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import SessionStore
from mnemobot.memory.services.workspace_memory import MemoryUpkeep, WorkspaceMemory
from mnemobot.model.windows import ModelWindowStore

BOT_RUNNING = (
    "a running `mnemobot run` serves this workspace: its memory of the chat would bring "
    "the item back. Forget from the page the bot serves (`mnemobot run --web`), in the "
    "chat (the memory tool), or stop the bot first"
)
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def web_tokens(settings: Settings) -> tuple[list[WebToken], bool] | str:
    """The access tokens and whether they were made now; or the line saying what is wrong.
    They come from the settings (the environment, then the env file), like every other one."""
    given = {
        TOKEN_VARIABLE: settings.mnemobot_web_token,
        TOKENS_VARIABLE: settings.mnemobot_web_tokens,
    }
    try:
        tokens = tokens_from_environment(
            {name: value.get_secret_value() for name, value in given.items() if value is not None}
        )
    except TokenError as exc:
        return str(exc)
    if tokens:
        return tokens, False
    return [generated_token()], True


def page_redaction(settings: Settings, tokens: list[WebToken]) -> Callable[[str], str]:
    """The bot's own redaction (its tokens, keys, URL passwords) and the page's tokens;
    the tokens leave the log lines too."""
    values = [token.value for token in tokens]
    hide_in_logs(values)
    return partial(redact, secrets=[*secrets_of(settings), *values])


def host_of_app(app: App, shown: Callable[[str], str]) -> WebHost:
    """The page on the running bot's own services (`run --web`)."""
    assert app.maintenance is not None and app.schedule is not None
    schedule = app.schedule
    llm = app.llm
    known = llm.known_window if isinstance(llm, OpenAIChatModel) else (lambda model: None)
    return WebHost(
        paths=app.paths,
        runtime=app.runtime,
        memory=app.memory,
        sessions=app.sessions,
        maintenance=app.maintenance,
        tasks=lambda: schedule.store,
        model_name=app.assistant.model_name,
        known_window=known,
        redact=shown,
        in_bot=True,
        clock=app.clock,
    )


def standalone_host(
    settings: Settings,
    shown: Callable[[str], str],
    tasks: TaskStore | None,
    replicas: Replicas | None = None,
) -> WebHost:
    """The page on services of its own over the workspace's files (`mnemobot web`);
    `replicas`: the Redis of the bot's replicas, whose sessions a forget redacts too."""
    paths = WorkspacePaths(settings.bot_workspace)
    runtime = open_runtime_config(paths.runtime_config)
    memory = WorkspaceMemory.open(
        paths.root,
        shared_files=True,
        embedder=OpenAIEmbeddings(settings, runtime),
    )
    # Forgetting is refused while a bot runs: no one else writes the delivery journals.
    reach_beyond_files(memory, paths, replicas=replicas, bot_running=False)
    timer = MaintenanceTimer(
        paths=paths,
        runtime=runtime,
        memory=MemoryUpkeep(memory),
        llm=None,
        chat_model_name=settings.bot_model,
    )
    windows = ModelWindowStore.in_workspace(paths.root)
    folder = schedule_folder(paths.root)

    def task_store() -> TaskStore:
        # The files as they are now: the bot may have changed them since the last look.
        return tasks if tasks is not None else FileTaskStore(folder, read_only=True)

    def refused() -> str | None:
        return BOT_RUNNING if served_by_a_bot(paths) else None

    return WebHost(
        paths=paths,
        runtime=runtime,
        memory=memory,
        sessions=SessionStore(paths.sessions),
        maintenance=timer,
        tasks=task_store,
        model_name=lambda config: config.llm.chat_model_name(settings.bot_model),
        known_window=lambda model: windows.get(settings.openai_base_url, model),
        redact=shown,
        corrections_refused=refused,
    )


def start_lines(
    server: WebServer,
    tokens: list[WebToken],
    generated: bool,
    read_only: bool,
    *,
    with_bot: bool = False,
) -> str:
    """What is printed once the page listens: where, and with which token. `with_bot`: it
    is `run --web`'s, so Ctrl-C stops the bot too."""
    if generated:
        where = f"memory page at {server.address(tokens[0].value)}"
        how = "open it in a browser; the token in it is required (a new one each start)"
    else:
        where = f"memory page at {server.address()}"
        how = f"the access tokens are those of {TOKEN_VARIABLE} / {TOKENS_VARIABLE}"
    stops = "Ctrl-C stops it and the bot" if with_bot else "Ctrl-C stops it"
    lines = [f"mnemobot: {where}", f"mnemobot: {how}; {stops}"]
    if read_only:
        lines.append("mnemobot: read-only: the page makes no corrections")
    if server.host not in LOOPBACK:
        lines.append(
            f"mnemobot: warning: listening on {server.host}, not only this machine: anyone "
            "who reaches it may try tokens, and HTTP is not encrypted (put TLS in front)"
        )
    return "\n".join(lines)


async def start_beside_bot(
    app: App, settings: Settings, *, host: str, port: int, tokens: list[WebToken]
) -> WebServer:
    """`run --web`: the page, started on the running bot's services."""
    access = Access(tokens, cookie_name=cookie_name(port))
    web_app = build_web_app(
        host_of_app(app, page_redaction(settings, tokens)), access, read_only=False
    )
    server = WebServer(web_app, host, port)
    await server.start()
    return server


def web_command(args: argparse.Namespace) -> int:
    settings = settings_or_exit()
    found = web_tokens(settings)
    if isinstance(found, str):
        return fail(found)
    tokens, generated = found
    redis_url = settings.bot_redis_url.get_secret_value() if settings.bot_redis_url else None
    shown = page_redaction(settings, tokens)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        tasks = workspace_store(settings.bot_workspace, redis_url) if redis_url else None
        replicas = replicas_of(settings)
        host = standalone_host(settings, shown, tasks, replicas)
        access = Access(tokens, cookie_name=cookie_name(args.port))
        web_app = build_web_app(host, access, read_only=args.read_only)
        server = WebServer(web_app, args.host, args.port)
        try:
            try:
                await server.start()
            except OSError as exc:
                return fail(
                    f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); "
                    "pass another --port (or --host)"
                )
            print(start_lines(server, tokens, generated, args.read_only), flush=True)
            await stop.wait()
            return 0
        finally:
            await server.stop()
            host.memory.close()
            if isinstance(host.memory.vectors.embedder, OpenAIEmbeddings):
                await host.memory.vectors.embedder.aclose()
            if tasks is not None:
                await close_store(tasks)
            if replicas is not None:
                await replicas.close()

    return asyncio.run(main())
