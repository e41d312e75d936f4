"""What every CLI command does first: settings (or one clear line and exit 2), logging."""

from __future__ import annotations

import sys

from bot.logging_setup import configure_logging
from config.settings import Settings, SettingsError, load_settings


def secrets_of(settings: Settings) -> list[str]:
    values = [settings.telegram_bot_token, settings.openai_api_key, settings.bot_webhook_secret]
    return [v.get_secret_value() for v in values if v is not None]


def settings_or_exit() -> Settings:
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"mnemobot: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(settings.bot_log_level, secrets_of(settings))
    return settings


def fail(message: str, code: int = 2) -> int:
    """Print one line for a person and return the exit code."""
    print(f"mnemobot: {message}", file=sys.stderr)
    return code
