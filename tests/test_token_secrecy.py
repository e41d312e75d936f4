"""A token Telegram rejects is never printed, and start-up fails with one clean line."""

from __future__ import annotations

from pathlib import Path

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
