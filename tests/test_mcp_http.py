"""An MCP server over streamable HTTP on 127.0.0.1: headers or a URL with a secret from
the environment, and a server that dies mid-call and comes back."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote

import pytest

from mnemobot.bot.app import build_app
from mnemobot.bot.cli.logging_setup import configure_logging
from mnemobot.bot.mcp.config import McpTiming
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    tool_call,
)
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config
from tests.mcp_harness import (
    answer_with_tool_result,
    calls_logged,
    http_server,
    wait_ready,
    wait_until,
)

TOKEN = "http-token-9c2e7d41b8"


async def test_a_remote_server_gets_its_secret_header_and_survives_a_restart(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REMOTE_TOKEN", TOKEN)
    log = tmp_path / "calls.log"
    with http_server(log) as server, caplog.at_level(logging.DEBUG):
        entry = {"url": server.url, "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}
        write_runtime_config(workspace, {"mcp": {"servers": {"remote": entry}}})
        app = build_app(
            make_settings(workspace, openai_server),
            tuning=Tuning(mcp=McpTiming(restart_first_seconds=0.2)),
        )
        app.start_background()
        try:
            await wait_ready(app, "remote")
            openai_server.responder = answer_with_tool_result
            openai_server.script(tool_call("mcp_remote_authorization_length", {}))
            header = await ask(app, "check the header")
            assert header == f"Result: the authorization header has {7 + len(TOKEN)} characters"

            openai_server.script(tool_call("mcp_remote_die", {}))
            died = await ask(app, "crash it")
            assert "error: the MCP server remote stopped during the call" in died
            assert died.endswith(
                "(The tool server remote stopped during a call; it is being restarted.)"
            )
            supervisor = app.mcp.supervisors["remote"]
            await wait_until(lambda: supervisor.failures_in_a_row >= 1, 10, "the failure")
            status = await app.commands.run(CONSOLE_CHAT, ParsedCommand("status", ""))
            assert "MCP servers: remote down (" in status

            server.start()
            await wait_ready(app, "remote", timeout=30)
            openai_server.script(tool_call("mcp_remote_add", {"a": 20, "b": 22}))
            assert await ask(app, "add") == "Result: 42"
        finally:
            await app.close()
    assert calls_logged(log) == ["authorization_length", "die", "add 20 22"]
    assert TOKEN not in caplog.text and TOKEN not in status


# "+" and "/" reach the server as written only if the bot percent-encodes what it fills in.
URL_KEY = "url-key+4f/9a1c27"


async def test_a_key_in_the_url_comes_from_the_environment_and_stays_out_of_status_and_logs(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = "wrong-key-0c5d1e83"
    monkeypatch.setenv("SEARCH_KEY", wrong)
    # The bot's own log, at its most talkative: the SDK logs the URL it connects to (an
    # earlier test's bot, not at debug level, may have quietened the SDK's logger).
    configure_logging("DEBUG")
    caplog.set_level(logging.DEBUG, logger="mcp")
    log = tmp_path / "calls.log"
    with http_server(log, MCP_TEST_URL_KEY=URL_KEY) as server:
        entry = {"url": f"{server.url}?api_key=${{SEARCH_KEY}}"}
        pauses = McpTiming(restart_first_seconds=0.2, restart_max_seconds=0.5)
        write_runtime_config(workspace, {"mcp": {"servers": {"search": entry}}})
        app = build_app(make_settings(workspace, openai_server), tuning=Tuning(mcp=pauses))
        app.start_background()
        try:
            supervisors = app.mcp.supervisors
            await wait_until(
                lambda: "search" in supervisors and supervisors["search"].failures_in_a_row >= 1,
                20,
                "the refused start",
            )
            status = app.commands.status_text(CONSOLE_CHAT)
            # The right key, read at the server's next start.
            monkeypatch.setenv("SEARCH_KEY", URL_KEY)
            await wait_ready(app, "search")
            openai_server.responder = answer_with_tool_result
            openai_server.script(tool_call("mcp_search_add", {"a": 40, "b": 2}))
            assert await ask(app, "add") == "Result: 42"
        finally:
            await app.close()
    logged = capsys.readouterr().err
    assert calls_logged(log) == ["add 40 2"]
    assert "MCP servers: search down (it answered: " in status
    assert "api_key=[REDACTED]" in logged
    for secret in (wrong, URL_KEY, quote(URL_KEY, safe="")):
        assert secret not in logged and secret not in status
