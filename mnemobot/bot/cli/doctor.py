"""`mnemobot doctor`: one line per check, exit 1 if any fails; it changes nothing on disk.

Each network check first prints what it is waiting for, then waits at most
NETWORK_CHECK_SECONDS (the tools check, which waits for the model's answers, up to
CHECK_TIMEOUT_SECONDS for each of its two requests). WARN lines (a setting that works but
is probably not what was meant) do not fail the run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from redis.asyncio import Redis
from redis.exceptions import RedisError

from mnemobot.base.clock import SYSTEM_CLOCK
from mnemobot.bot.cli.embedding_check import check_embeddings
from mnemobot.bot.cli.logging_setup import configure_logging, redact
from mnemobot.bot.cli.probes import (
    NETWORK_CHECK_SECONDS,
    ProbeError,
    list_models,
    telegram_username,
)
from mnemobot.bot.cli.speech_check import check_speech
from mnemobot.bot.cli.startup import no_operator_line, quiet_level, secrets_of
from mnemobot.bot.delivery.replicas import redis_display
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.bot.llm.tool_support import CHECK_TIMEOUT_SECONDS, check_tool_support
from mnemobot.bot.mcp.access import mcp_config
from mnemobot.bot.mcp.config import DEFAULT_MCP_TIMING
from mnemobot.bot.mcp.probe import probe_server, where
from mnemobot.bot.mcp.secrets import bot_environment
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.bot.schedule.service import workspace_summary
from mnemobot.bot.turn.commands import endpoint_for_display
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.settings import (
    Settings,
    SettingsError,
    env_file_candidates,
    env_files_found,
    load_settings,
)
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.model.windows import ModelWindowStore
from mnemobot.systems.core.llm import LLMError

Status = Literal["ok", "warn", "fail"]
_LABEL: dict[Status, str] = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    status: Status
    detail: str

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def line(self) -> str:
        return f"{_LABEL[self.status]} {self.name}: {self.detail}"


Emit = Callable[[str], None]


def check_settings(settings: Settings) -> CheckResult:
    found = env_files_found()
    if found:
        order = ", then ".join(map(str, found)) + (" (its keys win)" if len(found) > 1 else "")
        return CheckResult("settings", "ok", f"read {order}")
    looked = " and ".join(str(p.absolute()) for p in env_file_candidates())
    return CheckResult(
        "settings",
        "warn",
        f"no env file found (looked for {looked}); only the environment's variables are "
        "used; `mnemobot init` writes one",
    )


def check_allowed_users(settings: Settings) -> CheckResult:
    users = settings.telegram_allowed_users
    if users.everyone:
        return CheckResult(
            "allowed users", "warn", "TELEGRAM_ALLOWED_USERS is *: the bot serves anyone"
        )
    if not users:
        return CheckResult(
            "allowed users",
            "warn",
            "TELEGRAM_ALLOWED_USERS is empty: the bot serves nobody; set your numeric user "
            "id (the bot tells you yours when you write to it)",
        )
    return CheckResult("allowed users", "ok", f"serves {users.describe()}")


def check_operators(settings: Settings) -> CheckResult:
    ids = ", ".join(str(i) for i in sorted(settings.operators))
    if settings.telegram_operators:
        return CheckResult("operators", "ok", f"{ids} (TELEGRAM_OPERATORS)")
    if settings.operators:
        return CheckResult("operators", "ok", f"{ids} (the one allowed user)")
    return CheckResult("operators", "warn", no_operator_line(settings))


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_workspace(root: Path) -> CheckResult:
    if root.exists():
        if not root.is_dir():
            return CheckResult(
                "workspace", "fail", f"BOT_WORKSPACE {root} is not a directory; point it at one"
            )
        if not os.access(root, os.W_OK | os.X_OK):
            return CheckResult(
                "workspace", "fail", f"BOT_WORKSPACE {root} is not writable; fix its permissions"
            )
        return CheckResult("workspace", "ok", f"{root} is writable")
    parent = _nearest_existing(root.parent)
    if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
        default = Settings.model_fields["bot_workspace"].default
        if root == Path(default).expanduser():
            # A fresh install's: nothing was named, so nothing can be misspelt.
            return CheckResult(
                "workspace",
                "ok",
                f"{root} will be created by the first `mnemobot run` or `chat`",
            )
        return CheckResult(
            "workspace",
            "warn",
            f"{root} does not exist; `mnemobot run` or `chat` will create it "
            "(check BOT_WORKSPACE for a typo)",
        )
    return CheckResult(
        "workspace",
        "fail",
        f"BOT_WORKSPACE {root} does not exist and cannot be created ({parent} is not a "
        "writable directory); point it at a directory you can write to",
    )


def check_runtime_config(store: RuntimeConfigStore) -> CheckResult:
    store.current()
    path = store.path
    if store.error:
        return CheckResult(
            "runtime config", "fail", f"{path}: {store.describe_state()}; fix the file and retry"
        )
    if not store.from_file:
        return CheckResult(
            "runtime config", "ok", f"no {path} yet; defaults in force (`run` writes it)"
        )
    if store.unknown_keys:
        return CheckResult(
            "runtime config",
            "warn",
            f"{path}: unknown keys ignored: {', '.join(store.unknown_keys)} "
            "(`mnemobot config docs` lists every key)",
        )
    return CheckResult("runtime config", "ok", f"{path} is valid")


async def check_llm(settings: Settings, model: str, model_source: str, emit: Emit) -> CheckResult:
    where = endpoint_for_display(settings.openai_base_url)
    emit(f"...  llm: asking {where} for its models (up to {NETWORK_CHECK_SECONDS:g} s)")
    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    try:
        listed = await list_models(settings.openai_base_url, api_key, where)
    except ProbeError as error:
        return CheckResult("llm", "fail", str(error))
    served = listed.serves(model)
    if served is None:
        return CheckResult(
            "llm",
            "warn",
            f"{where} answers but has no models list, so whether it serves {model!r} "
            f"({model_source}) is unchecked",
        )
    if not served:
        return CheckResult(
            "llm",
            "fail",
            f"{where} does not serve {model!r} ({model_source}); it offers: "
            f"{listed.describe()}; set {model_source} to one of them",
        )
    return CheckResult("llm", "ok", f"{where} serves {model!r}")


async def check_context_window(
    settings: Settings, model: str, paths: WorkspacePaths, store: RuntimeConfigStore, emit: Emit
) -> CheckResult:
    """The window the bot will use for `model`, and where that figure comes from (also
    before the first `run`, when the workspace that keeps learned windows does not exist
    yet: it is not made here)."""
    where = endpoint_for_display(settings.openai_base_url or "https://api.openai.com/v1")
    emit(f"...  context window: asking {where} (up to {NETWORK_CHECK_SECONDS:g} s)")
    llm = OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        base_url=settings.openai_base_url,
        max_retries=0,
        timeout_seconds=NETWORK_CHECK_SECONDS,
        windows=ModelWindowStore.in_workspace(paths.root) if paths.root.is_dir() else None,
    )
    try:
        window = await asyncio.wait_for(llm.context_window(model), NETWORK_CHECK_SECONDS)
        unstated = llm.window_unstated(model)
    except (TimeoutError, LLMError) as error:
        return CheckResult("context window", "warn", f"{model}: not learned ({error})")
    finally:
        await llm.close()
    if window is None:
        limit = store.current().llm.max_input_tokens
        why = "assumed: the server does not say" if unstated else "the server did not answer"
        return CheckResult(
            "context window",
            "ok",
            f"{model}: {limit:,} tokens ({why}; llm.maxInputTokens), used until an overflow "
            "error states the real window",
        )
    return CheckResult("context window", "ok", f"{model} has {window.describe()}")


async def check_tools(settings: Settings, model: str, emit: Emit) -> CheckResult:
    """Whether the server passes tools to `model` (`tool_support`): one or two short
    requests, each within CHECK_TIMEOUT_SECONDS (a model on a busy CPU answers slowly)."""
    where = endpoint_for_display(settings.openai_base_url or "https://api.openai.com/v1")
    emit(
        f"...  tools: asking {model} at {where} to call a test tool "
        f"(up to {2 * CHECK_TIMEOUT_SECONDS:g} s)"
    )
    llm = OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        base_url=settings.openai_base_url,
        max_retries=0,
        timeout_seconds=CHECK_TIMEOUT_SECONDS,
    )
    try:
        found = await check_tool_support(llm, model, CHECK_TIMEOUT_SECONDS)
    except LLMError as error:
        return CheckResult("tools", "warn", f"not checked ({error})")
    finally:
        await llm.close()
    return CheckResult("tools", "ok" if found.verdict == "passes" else "warn", found.line)


async def check_telegram(settings: Settings, emit: Emit) -> CheckResult:
    if settings.telegram_bot_token is None:
        return CheckResult("telegram", "ok", "no TELEGRAM_BOT_TOKEN set (only needed for `run`)")
    where = endpoint_for_display(settings.telegram_api_base_url)
    emit(f"...  telegram: asking {where} whose token this is (up to {NETWORK_CHECK_SECONDS:g} s)")
    try:
        username = await telegram_username(
            settings.telegram_bot_token.get_secret_value(), settings.telegram_api_base_url, where
        )
    except ProbeError as error:
        return CheckResult("telegram", "fail", str(error))
    return CheckResult("telegram", "ok", f"token valid for @{username}")


async def check_redis(settings: Settings, emit: Emit) -> CheckResult:
    """With BOT_REDIS_URL: Redis answers, and keeps what it acknowledged (appendonly)."""
    url = settings.bot_redis_url.get_secret_value()  # type: ignore[union-attr]
    where = redis_display(url)
    emit(f"...  redis: connecting to {where} (up to {NETWORK_CHECK_SECONDS:g} s)")
    client = Redis.from_url(
        url,
        socket_timeout=NETWORK_CHECK_SECONDS,
        socket_connect_timeout=NETWORK_CHECK_SECONDS,
    )
    try:
        async with asyncio.timeout(NETWORK_CHECK_SECONDS):
            await client.ping()
            # Keys and values are bytes (the client decodes nothing), str if it did.
            config: dict[Any, Any] = await client.config_get("appendonly")
    except (RedisError, OSError, TimeoutError) as exc:
        reason = redact(str(exc) or type(exc).__name__, secrets_of(settings))
        return CheckResult(
            "redis", "fail", f"{where} does not answer ({reason}); check BOT_REDIS_URL"
        )
    finally:
        with contextlib.suppress(RedisError, OSError):
            await client.aclose()
    appendonly = config.get(b"appendonly", config.get("appendonly", b""))
    if appendonly not in (b"yes", "yes"):
        return CheckResult(
            "redis",
            "warn",
            f"{where} answers but runs without appendonly: a Redis restart could lose "
            "accepted messages; start it with --appendonly yes",
        )
    return CheckResult("redis", "ok", f"{where} answers, appendonly yes (replicas share it)")


async def check_schedule(settings: Settings) -> CheckResult:
    """How many scheduled tasks wait, and the soonest (reads, writes nothing)."""
    redis_url = settings.bot_redis_url.get_secret_value() if settings.bot_redis_url else None
    try:
        async with asyncio.timeout(NETWORK_CHECK_SECONDS):
            line = await workspace_summary(settings.bot_workspace, redis_url, SYSTEM_CLOCK())
    except (OSError, RedisError, TimeoutError) as exc:
        reason = redact(str(exc) or type(exc).__name__, secrets_of(settings))
        return CheckResult("schedule", "warn", f"scheduled tasks cannot be read ({reason})")
    return CheckResult("schedule", "ok", line.removeprefix("Scheduled: "))


async def check_mcp_servers(store: RuntimeConfigStore, emit: Emit) -> AsyncIterator[CheckResult]:
    """Start each configured MCP server, list its tools, stop it; one line per server."""
    settings = mcp_config(store.current())
    environment = bot_environment()
    for name, server in settings.servers.items():
        check = f"mcp {name}"
        if not server.enabled:
            yield CheckResult(check, "ok", "disabled (enabled: false)")
            continue
        verb = "starting" if server.command is not None else "connecting to"
        emit(
            f"...  {check}: {verb} {where(server)} and listing its tools "
            f"(up to {DEFAULT_MCP_TIMING.start_timeout_seconds:g} s)"
        )
        probe = await probe_server(name, server, environment)
        yield CheckResult(check, "ok" if probe.ok else "fail", probe.detail)
        if probe.literal_secrets:
            yield CheckResult(
                check,
                "warn",
                f"{', '.join(probe.literal_secrets)} written into the config file; put "
                'the secret in the environment or env file and write "${NAME}" instead',
            )


async def run_checks(settings: Settings, emit: Emit) -> list[CheckResult]:
    results: list[CheckResult] = []

    def record(result: CheckResult) -> None:
        results.append(result)
        emit(result.line())

    record(check_settings(settings))
    record(check_allowed_users(settings))
    record(check_operators(settings))
    record(check_workspace(settings.bot_workspace))
    store = open_runtime_config(WorkspacePaths(settings.bot_workspace).runtime_config)
    record(check_runtime_config(store))
    if settings.bot_redis_url is not None:
        record(await check_redis(settings, emit))
    llm = store.current().llm
    model, source = llm.chat_model_name(settings.bot_model), llm.chat_model_source()
    llm_result = await check_llm(settings, model, source, emit)
    record(llm_result)
    # After the llm check: by default the transcription server is the chat model's.
    speech = await check_speech(
        settings,
        store.current().media.transcription,
        emit,
        chat_server_answers=llm_result.status != "fail",
    )
    record(CheckResult("speech to text", *speech))
    paths = WorkspacePaths(settings.bot_workspace)
    # Also when the server has no models list (it answered) and before the first `run`.
    if llm_result.status != "fail":
        record(await check_context_window(settings, model, paths, store, emit))
        record(await check_tools(settings, model, emit))
    if not store.error:
        offer = llm_result.status == "ok"
        status, detail = await check_embeddings(settings, store, emit, offer=offer)
        record(CheckResult("embeddings", status, detail))
    record(await check_telegram(settings, emit))
    record(await check_schedule(settings))
    if not store.error:
        async for result in check_mcp_servers(store, emit):
            record(result)
    return results


def doctor(out: TextIO) -> int:
    def emit(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    try:
        settings = load_settings()
    except SettingsError as exc:
        emit(CheckResult("settings", "fail", str(exc)).line())
        return 1
    configure_logging(
        settings.bot_log_level, secrets_of(settings), stderr_level=quiet_level(settings)
    )
    # Each check reports its own failure; these loggers would say it a second time. Their
    # levels come back after: `run` goes on to start the bot after its first-time checks.
    quiet = [
        logging.getLogger(name)
        for name in (
            "mnemobot.bot.llm.client",
            "mnemobot.bot.media.transcription",
            "mnemobot.config.runtime_store",
            "mcp",
        )
    ]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.CRITICAL)
    try:
        results = asyncio.run(run_checks(settings, emit))
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)
    return 0 if all(r.ok for r in results) else 1


def doctor_command(args: argparse.Namespace) -> int:
    """`mnemobot doctor`: every check, one line each, on stdout."""
    return doctor(sys.stdout)
