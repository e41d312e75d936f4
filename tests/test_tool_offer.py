"""Tools degrade in order: a large MCP server or a small window never costs the built-in ones.

Real parts throughout: an SDK MCP server over stdio offering 300 tools, the fake model
server over HTTP (reporting its window the way llama.cpp does) through the openai client,
the assistant's turns and the chat commands.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from mnemobot.base.tokens import estimate_tokens
from mnemobot.bot.app import App, build_app
from mnemobot.bot.channels.telegram.split import split_plain_for_telegram
from mnemobot.bot.schedule.tool import BRIEF
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, system_text, tool_call
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config
from tests.mcp_harness import offered_tools, stdio_server, wait_ready

StartApp = Callable[[dict[str, Any]], Any]
BUILT_IN = {
    "datetime",
    "files",
    "memory",
    "session_history",
    "session_search",
    "read_tool_result",
    "schedule",
}
MEMORY_TOOL_TALK = "Use the `memory` tool"


@pytest.fixture
async def start_app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[StartApp]:
    apps: list[App] = []

    async def start(runtime: dict[str, Any]) -> App:
        write_runtime_config(workspace, {"llm": {"maxRetries": 0}, **runtime})
        app = build_app(make_settings(workspace, openai_server))
        app.start_background()
        apps.append(app)
        return app

    yield start
    for app in apps:
        await app.close()


async def command(app: App, name: str, args: str = "") -> str:
    return await app.commands.run(CONSOLE_CHAT, ParsedCommand(name, args))


def schedule_then_answer(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(
        tool_call("schedule", {"text": "call mom", "when": "in 2 hours"}),
        reply("I will remind you."),
    )


def tool_tokens(request: dict[str, Any]) -> int:
    return sum(estimate_tokens(orjson.dumps(tool).decode()) for tool in request["tools"])


async def test_one_large_mcp_server_trims_its_own_tools_not_the_built_in_ones(
    start_app: StartApp,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    big = stdio_server(tmp_path / "calls.log", "--many-tools", "300", allowTools=["catalog_*"])
    app = await start_app({"mcp": {"servers": {"big": big}}})
    # Its 300 tools take the SDK a while to list on a busy machine.
    await wait_ready(app, "big", timeout=60)
    schedule_then_answer(openai_server)

    with caplog.at_level(logging.INFO, logger="mnemobot.bot.tools"):
        answer = await ask(app, "remind me in 2 hours to call mom")
        await ask(app, "thanks")
    tools_text = await command(app, "tools")
    status = await command(app, "status")
    reminders = await command(app, "reminders")

    first = openai_server.requests[0]
    offered = offered_tools(first)
    catalog = [name for name in offered if name.startswith("mcp_big_catalog_")]
    assert set(offered) >= BUILT_IN
    # The server's tools in the order it lists them, as many as fit a third of the window.
    assert 0 < len(catalog) < 300
    assert catalog == [f"mcp_big_catalog_{n}" for n in range(len(catalog))]
    assert tool_tokens(first) <= 128_000 // 3
    assert "✅ Reminder #1 set for" in answer
    assert "call mom" in reminders

    assert f"Tools: {len(offered)} of 307 offered; MCP server big: " in status
    assert f"{300 - len(catalog)} of 300 left out" in status
    # /tools names what the model has now, and only that, in a few messages.
    assert len(split_plain_for_telegram(tools_text)) <= 3
    assert re.findall(r"mcp_big_catalog_\d+", tools_text) == catalog
    assert f"MCP server big: {300 - len(catalog)} of 300 left out" in tools_text
    assert "a third of the model's input limit" in tools_text
    # The decision is logged once, not every turn.
    logged = [r for r in caplog.records if r.getMessage().startswith("tools: ")]
    assert len(logged) == 1
    assert "MCP server big" in logged[0].getMessage()


async def test_a_2048_token_llamacpp_server_gets_the_short_schedule_tool_and_sets_reminders(
    start_app: StartApp, openai_server: FakeOpenAIServer
) -> None:
    openai_server.context_window = 2048
    openai_server.window_reported_by = "llamacpp"
    openai_server.overflow_form = "llamacpp"
    app = await start_app({})
    schedule_then_answer(openai_server)

    answer = await ask(app, "remind me in 2 hours to call mom")
    reminders = await command(app, "reminders")
    tools_text = await command(app, "tools")

    first = openai_server.requests[0]
    [schedule] = [t["function"] for t in first["tools"] if t["function"]["name"] == "schedule"]
    assert schedule["description"] == BRIEF
    # The conversation keeps its room: only the tool a turn most likely needs goes, and
    # the prompt says nothing of the memory tool it goes without.
    assert offered_tools(first) == ["schedule"]
    assert MEMORY_TOOL_TALK not in system_text(first)
    # Never the whole window as one answer, from the first request on.
    assert first["max_tokens"] <= 2048 // 4
    assert not [r for r in openai_server.recorded_requests if r.rejected]
    assert "✅ Reminder #1 set for" in answer
    assert "call mom" in reminders
    assert "unavailable" not in reminders + tools_text
    assert "Tools I can use in this chat (1 of 7: tools may take 153 tokens, a tenth" in (
        tools_text
    )
    assert "- built-in tools: 6 of 7 left out for want of room" in tools_text


async def test_a_window_too_small_for_any_tool_goes_without_tool_talk_and_says_why(
    start_app: StartApp, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.context_window = 160
    openai_server.window_reported_by = "llamacpp"
    openai_server.overflow_form = "llamacpp"
    with caplog.at_level(logging.INFO, logger="mnemobot.bot.tools"):
        app = await start_app({})
        answers = [await ask(app, "remind me in 2 hours to call mom")]
        answers.append(await ask(app, "and tomorrow too"))
    reminders = await command(app, "reminders")
    tools_text = await command(app, "tools")

    chats = [r.body for r in openai_server.recorded_requests if r.path.endswith("/completions")]
    assert chats
    assert all(not body.get("tools") for body in chats)
    assert all(MEMORY_TOOL_TALK not in system_text(body) for body in chats)
    for text in (reminders, tools_text):
        assert (
            "Reminders and scheduled tasks are unavailable with this model's context window "
            "of 160 tokens (reported by the server: /props n_ctx"
        ) in text
        assert "start llama-server with -c 8192" in text
    assert "none: the model's context window leaves no room for tools" in tools_text
    assert "a model with a larger context window, would help" in answers[-1]
    logged = [r for r in caplog.records if r.getMessage().startswith("tools: ")]
    assert [r.levelname for r in logged] == ["WARNING"]
    assert "without schedule and memory" in logged[0].getMessage()
