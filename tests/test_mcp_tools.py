"""MCP servers as tools, end to end: a real SDK server over stdio, the real openai client and
the fake model server, through the assistant's turns."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.mcp import supervisor as supervisor_module
from mnemobot.bot.mcp.config import DEFAULT_MCP_TIMING, McpTiming
from mnemobot.bot.mcp.supervisor import ServerState
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
    offered_tools,
    server_state,
    stdio_server,
    wait_ready,
    wait_until,
)
from tests.test_console_e2e import answers, run_chat

StartApp = Callable[..., Any]


@pytest.fixture
async def start_app(
    workspace: Path, openai_server: FakeOpenAIServer
) -> AsyncIterator[Callable[[dict[str, Any]], Any]]:
    apps: list[App] = []

    async def start(runtime: dict[str, Any], mcp: McpTiming = DEFAULT_MCP_TIMING) -> App:
        """`mcp`: faster pauses than the bot's own."""
        write_runtime_config(workspace, {"llm": {"maxRetries": 0}, **runtime})
        app = build_app(make_settings(workspace, openai_server), tuning=Tuning(mcp=mcp))
        app.start_background()
        apps.append(app)
        return app

    yield start
    for app in apps:
        await app.close()


async def test_the_model_calls_a_server_tool_and_answers_with_its_result(
    start_app: StartApp, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    server = stdio_server(log, denyTools=["delete_*"])
    app = await start_app({"mcp": {"servers": {"shop": server}}})
    await wait_ready(app, "shop")
    openai_server.responder = answer_with_tool_result
    openai_server.script(tool_call("mcp_shop_lookup_order", {"order_id": "A17"}))

    answer = await ask(app, "where is my order A17?")

    assert answer == "Result: Order A17 shipped on Tuesday via Parcelwise, tracking PW-71A."
    assert calls_logged(log) == ["lookup_order A17"]
    [offered] = [
        t["function"]
        for t in openai_server.requests[0]["tools"]
        if t["function"]["name"] == "mcp_shop_lookup_order"
    ]
    assert offered["description"] == "Find an order by its id and say where it is."
    assert offered["parameters"]["properties"]["order_id"]["type"] == "string"
    assert offered["parameters"]["required"] == ["order_id"]
    # A denied tool is never offered, and not run even if the model names it.
    assert "mcp_shop_delete_everything" not in offered_tools(openai_server.requests[0])
    openai_server.script(tool_call("mcp_shop_delete_everything", {}))
    refused = await ask(app, "delete everything")
    assert refused.startswith("Result: error: unknown tool 'mcp_shop_delete_everything'")
    assert "delete_everything" not in calls_logged(log)

    tools = await app.commands.run(CONSOLE_CHAT, ParsedCommand("tools", ""))
    assert "- datetime (built-in): Get the current date, weekday and time." in tools
    assert "- mcp_shop_add (MCP server shop): Add two integers." in tools
    assert "delete_everything" not in tools
    status = await app.commands.run(CONSOLE_CHAT, ParsedCommand("status", ""))
    assert "MCP servers: shop ready (12 tools)" in status

    # A server that changes its tools (tools/list_changed) gets them offered as they are now.
    # The weather call is scripted only once the tool is offered: scripted with the unlock,
    # the unlock turn's second model request took it, before the list came back on a
    # loaded machine (a flake: "unknown tool 'mcp_shop_weather'").
    openai_server.script(tool_call("mcp_shop_unlock", {}))
    assert await ask(app, "unlock the weather") == "Result: unlocked"
    await wait_until(lambda: "mcp_shop_weather" in app.tools.names, 10, "the new tool")
    openai_server.script(tool_call("mcp_shop_weather", {"city": "Oslo"}))
    assert await ask(app, "weather in Oslo?") == "Result: sunny in Oslo"
    assert "mcp_shop_weather" in offered_tools(openai_server.requests[-2])


async def test_results_and_errors_go_through_the_limits_of_every_tool(
    start_app: StartApp, openai_server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    log = tmp_path / "calls.log"
    app = await start_app(
        {
            "mcp": {"servers": {"shop": stdio_server(log)}},
            "toolLoop": {"toolTimeoutSeconds": 1},
        }
    )
    await wait_ready(app, "shop")
    openai_server.responder = answer_with_tool_result

    # A 1 MB result is kept on disk and the conversation gets an excerpt.
    openai_server.script(tool_call("mcp_shop_big", {"chars": 1_000_000}))
    big = await ask(app, "give me the big file")
    assert big.startswith("Result: [This tool result was 1,000,000 characters")
    [stored] = list((workspace / "large_tool_results").rglob("*.txt"))
    assert len(stored.read_text()) == 1_000_000

    # A tool that hangs is cut at toolLoop.toolTimeoutSeconds, and cancelled on the server.
    openai_server.script(tool_call("mcp_shop_slow", {"seconds": 60}))
    slow = await ask(app, "take your time")
    assert slow.startswith("Result: error: the tool mcp_shop_slow did not finish within 1 sec")
    await wait_until(lambda: "cancelled slow" in calls_logged(log), 10, "a server-side cancel")

    # The server's own error reaches the model as a tool error; the server stays usable.
    openai_server.script(tool_call("mcp_shop_fail", {"message": "quota exceeded"}))
    failed = await ask(app, "try the thing that fails")
    assert failed == "Result: error: fail failed: Error executing tool fail: quota exceeded"
    openai_server.script(tool_call("mcp_shop_add", {"a": 2, "b": 40}))
    assert await ask(app, "add them") == "Result: 42"


async def test_a_servers_own_time_limit_cuts_a_call_and_the_next_call_works(
    start_app: StartApp, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    app = await start_app({"mcp": {"servers": {"shop": stdio_server(log, timeoutSeconds=1)}}})
    await wait_ready(app, "shop")
    openai_server.responder = answer_with_tool_result
    openai_server.script(tool_call("mcp_shop_slow", {"seconds": 60}))

    # Well before toolLoop.toolTimeoutSeconds (120 s), and the model is told which setting.
    slow = await ask(app, "take your time")

    assert slow == (
        "Result: error: the MCP server shop did not answer within 1 seconds "
        "(mcp.servers.shop.timeoutSeconds); the call was cancelled"
    )
    await wait_until(lambda: "cancelled slow" in calls_logged(log), 10, "a server-side cancel")
    openai_server.script(tool_call("mcp_shop_add", {"a": 2, "b": 2}))
    assert await ask(app, "add 2 and 2") == "Result: 4"
    assert app.mcp.supervisors["shop"].failures_in_a_row == 0


@pytest.mark.slow
async def test_a_server_that_crashes_mid_call_is_restarted_and_works_again(
    start_app: StartApp,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = tmp_path / "calls.log"
    app = await start_app(
        {"mcp": {"servers": {"shop": stdio_server(log)}}}, McpTiming(restart_first_seconds=0.2)
    )
    await wait_ready(app, "shop")
    openai_server.responder = answer_with_tool_result
    openai_server.script(tool_call("mcp_shop_die", {}))

    with caplog.at_level(logging.INFO, logger="mnemobot.bot.mcp"):
        answer = await ask(app, "do the risky thing")
        await wait_until(lambda: "is back" in caplog.text, 20, "the server's restart")

    assert "error: the MCP server shop stopped during the call" in answer
    assert answer.endswith("(The tool server shop stopped during a call; it is being restarted.)")
    down = [r for r in caplog.records if "is down" in r.getMessage()]
    assert len(down) == 1 and "MCP server shop is down (it exited)" in down[0].getMessage()
    openai_server.script(tool_call("mcp_shop_add", {"a": 2, "b": 3}))
    assert await ask(app, "and now add 2 and 3") == "Result: 5"
    assert calls_logged(log) == ["die", "add 2 3"]


@pytest.mark.slow
async def test_a_server_that_stops_answering_is_cut_at_the_limit_and_restarted(
    start_app: StartApp,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(supervisor_module, "PING_SECONDS", 0.5)
    log = tmp_path / "calls.log"
    app = await start_app(
        {
            "mcp": {"servers": {"shop": stdio_server(log)}},
            "toolLoop": {"toolTimeoutSeconds": 1},
        },
        McpTiming(restart_first_seconds=0.1),
    )
    await wait_ready(app, "shop")
    supervisor = app.mcp.supervisors["shop"]
    openai_server.responder = answer_with_tool_result
    # Frozen long enough to miss the ping, short enough to exit soon after (no kill needed).
    openai_server.script(tool_call("mcp_shop_freeze", {"seconds": 2.5}))

    frozen = await ask(app, "freeze")

    assert frozen.startswith("Result: error: the tool mcp_shop_freeze did not finish within 1 s")
    await wait_until(lambda: supervisor.failures_in_a_row == 1, 10, "the hang noticed")
    assert "stopped answering (no answer to a ping in 0.5 s)" in str(supervisor.reason)
    await wait_ready(app, "shop")
    openai_server.script(tool_call("mcp_shop_add", {"a": 1, "b": 1}))
    assert await ask(app, "add") == "Result: 2"


async def status_while_down(app: App, name: str) -> str:
    """/status in one of the moments between two starts of a failing server."""
    await wait_until(lambda: server_state(app, name) is ServerState.RESTARTING, 20, "a failure")
    return app.commands.status_text(CONSOLE_CHAT)


def failures(app: App, name: str) -> int:
    supervisor = app.mcp.supervisors.get(name)
    return supervisor.failures_in_a_row if supervisor is not None else 0


@pytest.mark.slow
async def test_a_server_that_fails_to_start_is_retried_and_the_bot_answers_anyway(
    start_app: StartApp,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "vault-token-3f9a1c77e2"
    monkeypatch.setenv("VAULT_TOKEN", secret)
    log = tmp_path / "calls.log"
    servers = {
        "vault": stdio_server(log, "--exit-at-start", env={"MCP_TEST_SECRET": "${VAULT_TOKEN}"}),
        "stuck": stdio_server(log, "--hang-at-start"),
    }
    with caplog.at_level(logging.DEBUG):
        # 5 s to start: on a loaded machine vault's Python takes over a second to exit, and
        # a start cut by the limit first would be another reason, logged as a new warning.
        app = await start_app(
            {"mcp": {"servers": servers}},
            McpTiming(restart_first_seconds=0.1, restart_max_seconds=0.4, start_timeout_seconds=5),
        )
        assert await ask(app, "hello?") == "echo: hello?"
        await wait_until(lambda: failures(app, "vault") >= 4, 20, "four failed starts")
        vault_status = await status_while_down(app, "vault")
        stuck_status = await status_while_down(app, "stuck")

    assert not any(name.startswith("mcp_") for name in offered_tools(openai_server.requests[0]))
    vault_lines = [r for r in caplog.records if "MCP server vault is down" in r.getMessage()]
    # One line of the failure; its repeats (same reason) only at debug level.
    assert [r.levelname for r in vault_lines][:4] == ["WARNING", "DEBUG", "DEBUG", "DEBUG"]
    pauses = [r.getMessage().rsplit(" in ", 1)[1] for r in vault_lines[:4]]
    assert pauses == ["0.1 s", "0.2 s", "0.4 s", "0.4 s"]
    assert "it exited; its last words: fatal: cannot log in with [REDACTED]" in (
        vault_lines[0].getMessage()
    )
    assert "MCP servers: vault down (it exited; its last words: fatal: cannot log in with" in (
        vault_status
    )
    assert "stuck down (it did not answer in time), next start in 0 s" in stuck_status
    assert secret not in caplog.text + vault_status + stuck_status


@pytest.mark.slow
async def test_config_edits_start_stop_and_reoffer_servers_without_a_restart(
    start_app: StartApp, openai_server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    log = tmp_path / "calls.log"
    app = await start_app({"mcp": {}}, McpTiming(check_seconds=0.1))
    assert await ask(app, "anything?") == "echo: anything?"
    assert not any(n.startswith("mcp_") for n in offered_tools(openai_server.last_request()))

    config_path = workspace / "preferences" / "runtime-config.json"
    config = json.loads(config_path.read_text())
    config["mcp"]["servers"] = {"shop": stdio_server(log, allowTools=["add"])}
    config_path.write_text(json.dumps(config))
    await wait_ready(app, "shop")
    await ask(app, "and now?")
    assert [n for n in offered_tools(openai_server.last_request()) if n.startswith("mcp_")] == [
        "mcp_shop_add"
    ]

    # Which tools are offered changes at once, without restarting the server.
    supervisor = app.mcp.supervisors["shop"]
    config["mcp"]["servers"]["shop"]["allowTools"] = ["add", "lookup_*"]
    config_path.write_text(json.dumps(config))
    await wait_until(lambda: "mcp_shop_lookup_order" in app.tools.names, 10, "the new offer")
    assert app.mcp.supervisors["shop"] is supervisor

    # Other args and env: the server is started again, and the model gets what it offers now.
    shop = config["mcp"]["servers"]["shop"]
    shop["args"].append("--with-weather")
    shop["env"]["MCP_TEST_SECRET"] = "twelve chars"
    shop["allowTools"] = ["weather", "secret_length"]
    config_path.write_text(json.dumps(config))
    await wait_until(lambda: app.mcp.supervisors.get("shop") is not supervisor, 10, "a restart")
    await wait_ready(app, "shop")
    openai_server.responder = answer_with_tool_result
    openai_server.script(tool_call("mcp_shop_secret_length", {}))
    assert await ask(app, "how long is it?") == "Result: the secret has 12 characters"
    offered = [n for n in offered_tools(openai_server.requests[-2]) if n.startswith("mcp_")]
    assert sorted(offered) == ["mcp_shop_secret_length", "mcp_shop_weather"]

    config["mcp"]["servers"] = {}
    config_path.write_text(json.dumps(config))
    await wait_until(lambda: server_state(app, "shop") is None, 10, "the server's stop")
    await ask(app, "still there?")
    assert not any(n.startswith("mcp_") for n in offered_tools(openai_server.last_request()))


@pytest.mark.slow
def test_a_script_at_the_console_confirms_a_tool_with_a_yes_line(
    workspace: Path, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    server = stdio_server(log, confirmTools=["send_mail"])
    write_runtime_config(workspace, {"mcp": {"servers": {"shop": server}}})
    openai_server.responder = answer_with_tool_result
    openai_server.script(
        tool_call("mcp_shop_send_mail", {"to": "ana@example.com", "subject": "Hi"})
    )

    result = run_chat("mail Ana\nyes\n", workspace, openai_server)

    assert result.returncode == 0, result.stderr
    # The question is the first line's answer; the result, the "yes" line's.
    assert answers(result.stdout) == [
        'May I run send_mail (MCP server shop) with {"subject":"Hi","to":"ana@example.com"}?\n'
        'Reply "yes" to go ahead or "no" to cancel.',
        "Result: sent to ana@example.com",
    ]
    assert calls_logged(log) == ["send_mail ana@example.com Hi"]
