"""`mnemobot doctor`: one line per check against real (fake) servers, exit 1 on failure."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import run_mnemobot
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import TelegramServer


def run_doctor(**env: str) -> subprocess.CompletedProcess[str]:
    return run_mnemobot("doctor", **env)


def test_all_checks_pass(workspace: Path, openai_server: FakeOpenAIServer) -> None:
    with TelegramServer() as telegram:
        result = run_doctor(
            BOT_WORKSPACE=str(workspace),
            OPENAI_BASE_URL=openai_server.base_url,
            TELEGRAM_BOT_TOKEN=telegram.token,
            TELEGRAM_API_BASE_URL=telegram.base_url,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ok   settings",
        "ok   workspace",
        "ok   runtime config",
        "ok   llm",
        "ok   context window",
        "ok   telegram",
    ]
    assert "@mnemo_test_bot" in lines[-1]
    assert telegram.token not in result.stdout + result.stderr


def test_failures_are_reported_one_line_each(workspace: Path) -> None:
    (workspace / "preferences").mkdir()
    (workspace / "preferences" / "runtime-config.json").write_text('{"llm": {"temprature": 1}}')
    with TelegramServer() as telegram:
        result = run_doctor(
            BOT_WORKSPACE=str(workspace),
            OPENAI_BASE_URL="http://127.0.0.1:9/v1",
            TELEGRAM_BOT_TOKEN="999:WRONG-TOKEN",
            TELEGRAM_API_BASE_URL=telegram.base_url,
        )
    assert result.returncode == 1
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines())
    assert lines["ok   workspace"]
    assert "llm.temprature: unknown key" in lines["FAIL runtime config"]
    assert "unavailable" in lines["FAIL llm"]
    assert "@BotFather" in lines["FAIL telegram"]
    assert "Traceback" not in result.stdout + result.stderr


def test_invalid_settings_fail_the_first_check() -> None:
    result = run_doctor(BOT_LOG_LEVEL="chatty")
    assert result.returncode == 1
    assert result.stdout.startswith("FAIL settings: BOT_LOG_LEVEL is invalid")
