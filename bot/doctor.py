"""`mnemobot doctor`: one line per check, exit 1 if any fails."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TextIO

import telegram
from telegram.error import InvalidToken, TelegramError

from bot.llm_client import OpenAIChatModel
from bot.logging_setup import configure_logging
from bot.startup import secrets_of, workspace_problem
from config.runtime_store import RuntimeConfigStore
from config.settings import Settings, SettingsError, load_settings
from config.workspace import WorkspacePaths
from memory.model_windows import ModelWindowStore
from systems.llm import ChatRequest, LLMError


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


def check_workspace(paths: WorkspacePaths) -> CheckResult:
    problem = workspace_problem(paths)
    if problem:
        return CheckResult("workspace", False, problem)
    return CheckResult("workspace", True, f"{paths.root} is writable")


def check_runtime_config(paths: WorkspacePaths) -> CheckResult:
    store = RuntimeConfigStore(paths.runtime_config)
    store.ensure_file()
    store.current()
    if store.error:
        return CheckResult("runtime config", False, f"{store.error}; fix the file and retry")
    return CheckResult("runtime config", True, f"{paths.runtime_config} is valid")


async def check_llm(settings: Settings, model: str) -> CheckResult:
    llm = OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        base_url=settings.openai_base_url,
        max_retries=0,
        timeout_seconds=15,
    )
    where = settings.openai_base_url or "the OpenAI API"
    try:
        try:
            models = await llm.list_models()
            detail = f"{where} answers; {len(models)} models listed"
        except LLMError:
            # Some servers have no /models; a one-token completion proves the endpoint.
            await llm.complete(
                ChatRequest(
                    messages=[{"role": "user", "content": "ping"}],
                    model=model,
                    temperature=0,
                    max_output_tokens=1,
                    timeout_seconds=15,
                )
            )
            detail = f"{where} answers a chat completion"
    except LLMError as error:
        return CheckResult("llm", False, f"{where}: {error.user_text()} ({error.detail[:120]})")
    finally:
        await llm.close()
    return CheckResult("llm", True, detail)


async def check_context_window(
    settings: Settings, model: str, paths: WorkspacePaths
) -> CheckResult:
    """The window the bot will use for `model`, and where that figure comes from."""
    llm = OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        base_url=settings.openai_base_url,
        max_retries=0,
        timeout_seconds=15,
        windows=ModelWindowStore.in_workspace(paths.root),
    )
    try:
        window = await llm.context_window(model)
    finally:
        await llm.close()
    if window is None:
        limit = RuntimeConfigStore(paths.runtime_config).current().llm.max_input_tokens
        return CheckResult(
            "context window",
            True,
            f"{model}: not reported by the server; llm.maxInputTokens ({limit:,}) is used "
            "until an overflow error states the real window",
        )
    return CheckResult("context window", True, f"{model} has {window.describe()}")


async def check_telegram(settings: Settings) -> CheckResult:
    if settings.telegram_bot_token is None:
        return CheckResult("telegram", True, "no TELEGRAM_BOT_TOKEN set (only needed for `run`)")
    bot = telegram.Bot(
        settings.telegram_bot_token.get_secret_value(), base_url=settings.telegram_api_base_url
    )
    try:
        async with bot:
            me = await bot.get_me()
    except InvalidToken:
        return CheckResult("telegram", False, "token rejected; get a new one from @BotFather")
    except TelegramError as exc:
        return CheckResult("telegram", False, f"Bot API unreachable: {exc}")
    return CheckResult("telegram", True, f"token valid for @{me.username}")


async def run_checks(settings: Settings | None, settings_error: str | None) -> list[CheckResult]:
    if settings is None:
        return [CheckResult("settings", False, settings_error or "invalid settings")]
    results = [CheckResult("settings", True, "environment and .env are valid")]
    paths = WorkspacePaths(settings.bot_workspace)
    workspace = check_workspace(paths)
    results.append(workspace)
    if workspace.ok:
        results.append(check_runtime_config(paths))
    else:
        results.append(CheckResult("runtime config", False, "skipped: no usable workspace"))
    store = RuntimeConfigStore(paths.runtime_config)
    model = store.current().llm.model or settings.bot_model
    results.append(await check_llm(settings, model))
    if workspace.ok and results[-1].ok:
        results.append(await check_context_window(settings, model, paths))
    results.append(await check_telegram(settings))
    return results


def doctor(out: TextIO) -> int:
    try:
        settings: Settings | None = load_settings()
        error = None
    except SettingsError as exc:
        settings, error = None, str(exc)
    if settings is not None:
        configure_logging(settings.bot_log_level, secrets_of(settings))
        # The llm check reports a failed call itself; its warning would say it twice.
        logging.getLogger("bot.llm_client").setLevel(logging.ERROR)
    results = asyncio.run(run_checks(settings, error))
    for result in results:
        out.write(f"{'ok  ' if result.ok else 'FAIL'} {result.name}: {result.detail}\n")
    return 0 if all(r.ok for r in results) else 1
