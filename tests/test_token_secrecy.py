"""A token Telegram rejects is never printed, and start-up fails with one clean line."""

from __future__ import annotations

from pathlib import Path

from mnemobot.bot.cli.startup import secrets_of
from mnemobot.config.settings import Settings
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot

REJECTED_TOKEN = "987654:SECRET-part-that-must-never-show"


def test_a_rejected_token_is_redacted_and_sessions_are_closed(workspace: Path) -> None:
    with TelegramServer() as telegram:
        result = run_mnemobot(
            "run",
            BOT_WORKSPACE=str(workspace),
            BOT_LOG_LEVEL="DEBUG",
            TELEGRAM_BOT_TOKEN=REJECTED_TOKEN,
            TELEGRAM_API_BASE_URL=telegram.base_url,
            OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        )
        assert [call["token_valid"] for call in telegram.calls()] == [False]
    output = result.stdout + result.stderr
    assert result.returncode == 1
    assert "SECRET-part" not in output and "987654:" not in output
    assert "TELEGRAM_BOT_TOKEN was rejected by 127.0.0.1" in output
    assert "@BotFather" in output
    assert "Unclosed" not in output and "Traceback" not in output
    # The start-up line names where everything comes from, and no secret.
    config = workspace / "preferences" / "runtime-config.json"
    assert (
        f"starting: workspace {workspace}, runtime config {config}, model gpt-4o-mini at "
        "http://127.0.0.1:9, settings from none (environment only)"
    ) in result.stderr


def test_every_secret_setting_is_redacted_from_the_logs() -> None:
    """A key added to the settings (speech, embeddings...) joins the log redaction too."""
    secret_fields = [
        name
        for name, field in Settings.model_fields.items()
        if "SecretStr" in str(field.annotation)
    ]
    assert len(secret_fields) >= 5
    values = {name: f"value-of-{name}-1234567" for name in secret_fields}
    values["bot_redis_url"] = "redis://:redis-password-1234567@127.0.0.1:6379/0"
    settings = Settings.model_validate(values)
    redacted = secrets_of(settings)
    missing = [name for name, value in values.items() if value not in redacted]
    assert missing == []
