"""What every CLI command does first: settings (or one clear line and exit 2), logging."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from urllib.parse import unquote, urlsplit

from mnemobot.bot.cli.logging_setup import configure_logging
from mnemobot.bot.turn.commands import endpoint_for_display
from mnemobot.config.runtime import LlmConfig
from mnemobot.config.runtime_store import RuntimeConfigError, parse_runtime_config
from mnemobot.config.settings import Settings, SettingsError, env_files_found, load_settings
from mnemobot.config.workspace import WorkspacePaths

log = logging.getLogger(__name__)


def secrets_of(settings: Settings) -> list[str]:
    values = [
        settings.telegram_bot_token,
        settings.openai_api_key,
        settings.bot_transcription_api_key,
        settings.bot_embeddings_api_key,
        settings.bot_webhook_secret,
        settings.bot_redis_url,
        settings.mnemobot_web_token,
        settings.mnemobot_web_tokens,
    ]
    found = [v.get_secret_value() for v in values if v is not None]
    urls = [
        settings.openai_base_url,
        settings.telegram_api_base_url,
        settings.telegram_api_file_url,
        settings.bot_webhook_url,
    ]
    if settings.bot_redis_url is not None:
        # redis-py's errors name the URL's parts, the password among them.
        urls.append(settings.bot_redis_url.get_secret_value())
    for url in urls:
        # A `user:password@` in any URL is a credential, whatever the setting is for.
        try:
            password = urlsplit(url).password if url else None
        except ValueError:
            password = None
        if password:
            found += [password, unquote(password)]
    return found


def workspace_problem(paths: WorkspacePaths) -> str | None:
    """Why the workspace cannot be used, in one line, or None when it can."""
    try:
        paths.create()
        fd, probe = tempfile.mkstemp(dir=paths.root, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return (
            f"BOT_WORKSPACE {paths.root} is not a writable directory ({reason}); "
            "point it at a directory you can write to"
        )
    return None


def quiet_level(settings: Settings) -> str:
    """What a one-off command shows on stderr: warnings and errors, unless BOT_LOG_LEVEL
    was set (then that level): its INFO lines are a service's log, not its answer."""
    if "bot_log_level" in settings.model_fields_set:
        return settings.bot_log_level
    return logging.getLevelName(max(logging.WARNING, logging.getLevelName(settings.bot_log_level)))


def settings_or_exit(*, log_all: bool = False) -> Settings:
    """Settings and a usable workspace, or one clear line on stderr and exit 2.

    Logging goes to stderr: at `quiet_level`, or every record of BOT_LOG_LEVEL with
    `log_all` (`run`, `chat`: their log is what the operator reads)."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"mnemobot: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(
        settings.bot_log_level,
        secrets_of(settings),
        stderr_level=None if log_all else quiet_level(settings),
    )
    problem = workspace_problem(WorkspacePaths(settings.bot_workspace))
    if problem:
        print(f"mnemobot: {problem}", file=sys.stderr)
        raise SystemExit(2)
    return settings


def log_startup(settings: Settings) -> None:
    """One line saying which settings are in force, so a wrong file or model shows at once.

    `run` and `chat` log it once their input is checked (bad input gets its one line alone).
    """
    paths = WorkspacePaths(settings.bot_workspace)
    try:
        llm = parse_runtime_config(paths.runtime_config.read_bytes()).config.llm
    except (OSError, RuntimeConfigError):
        llm = LlmConfig()  # the app's own load reports what is wrong with the file
    model = llm.chat_model_name(settings.bot_model)
    env_files = ", ".join(str(p) for p in env_files_found()) or "none (environment only)"
    log.info(
        "starting: workspace %s, runtime config %s, model %s at %s, settings from %s",
        paths.root,
        paths.runtime_config,
        model,
        endpoint_for_display(settings.openai_base_url),
        env_files,
    )
    if not settings.operators and len(settings.telegram_allowed_users) > 1:
        log.warning("operators: %s", no_operator_line(settings))


def no_operator_line(settings: Settings) -> str:
    """Why the bot has no operator, and how to name one: `doctor` says it, and `run` when
    several people are allowed (adding a second took the first's operator rights)."""
    allowed = settings.telegram_allowed_users
    why = (
        f"TELEGRAM_ALLOWED_USERS names {len(allowed)} users, so none is an operator by default; "
        if len(allowed) > 1
        else ""
    )
    return (
        f"none: {why}set TELEGRAM_OPERATORS to your user id to /export or /forget_me a "
        "memory all chats share, and to act in groups you do not administer"
    )


def token_rejected_line(settings: Settings) -> str:
    """What `run` says when Telegram rejects the token: where, and how to fix it; no token."""
    parts = urlsplit(settings.telegram_api_base_url)
    # Host and port only: a base URL may carry credentials.
    host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    return (
        f"mnemobot: TELEGRAM_BOT_TOKEN was rejected by {host}; copy it again from @BotFather "
        "(https://t.me/BotFather) and check `mnemobot doctor`."
    )


def fail(message: str, code: int = 2) -> int:
    """Print one line for a person and return the exit code."""
    print(f"mnemobot: {message}", file=sys.stderr)
    return code
