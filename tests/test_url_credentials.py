"""Credentials in URLs work where they mean something and are never printed; a model
server that answers with something else than JSON costs a plain apology."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from mnemobot.bot.app import build_app
from mnemobot_tooling.fakes.openai_server import ErrorResponse, FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import ask, make_settings, run_mnemobot

PASSWORD = "pa@ss-w0rd-secret"


def with_credentials(url: str) -> str:
    return url.replace("http://", "http://proxyuser:pa%40ss-w0rd-secret@")


async def test_a_base_url_with_credentials_is_basic_auth_and_never_logged(
    workspace: Path, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(
        workspace, openai_server, openai_base_url=with_credentials(openai_server.base_url)
    )
    app = build_app(settings)
    try:
        with caplog.at_level(logging.DEBUG):
            answer = await ask(app, "hello")
    finally:
        await app.close()

    assert answer == "echo: hello"
    expected = base64.b64encode(f"proxyuser:{PASSWORD}".encode()).decode()
    chat = [r for r in openai_server.recorded_requests if "messages" in r.body][-1]
    assert chat.headers["authorization"] == f"Basic {expected}"
    assert PASSWORD not in caplog.text and "pa%40ss" not in caplog.text


def test_doctor_checks_a_base_url_with_credentials_without_a_traceback(
    tmp_path: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    with TelegramServer() as telegram:
        result = run_mnemobot(
            "doctor",
            BOT_WORKSPACE=str(workspace),
            OPENAI_BASE_URL=with_credentials(openai_server.base_url),
            TELEGRAM_BOT_TOKEN=telegram.token,
            TELEGRAM_API_BASE_URL=telegram.base_url,
            TELEGRAM_ALLOWED_USERS="42",
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "ok   llm:" in result.stdout
    assert "Traceback" not in output
    assert PASSWORD not in output and "pa%40ss" not in output


@pytest.mark.slow
def test_an_invalid_webhook_url_is_refused_without_printing_it(workspace: Path) -> None:
    result = run_mnemobot(
        "run",
        "--webhook",
        BOT_WORKSPACE=str(workspace),
        TELEGRAM_BOT_TOKEN="123456:TEST-TOKEN",
        BOT_WEBHOOK_URL="ftp://hookuser:hook-secret-42@bot.example.com/telegram",
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("mnemobot: BOT_WEBHOOK_URL is invalid")
    assert "hook-secret-42" not in result.stderr and "hookuser" not in result.stderr


async def test_a_model_server_answering_html_gets_an_apology_and_no_traceback(
    workspace: Path, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.script(ErrorResponse(200, "<html><body>502 Bad Gateway</body></html>"))
    app = build_app(make_settings(workspace, openai_server))
    try:
        with caplog.at_level(logging.INFO):
            answer = await ask(app, "hello")
    finally:
        await app.close()
    assert answer.startswith("Sorry, the model is unavailable right now.")
    assert "ToolLoop" not in answer
    assert all(record.exc_info is None for record in caplog.records)
    assert "OPENAI_BASE_URL" in caplog.text
