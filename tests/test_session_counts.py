"""/new and /status count messages as the user sees them in the chat: theirs and the
bot's replies. A turn where the model searched memory first stored four messages (the
question, the tool call, its result, the answer) and /new said "4 messages cleared"
for one question and one answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from tests.conftest import CONSOLE_CHAT, ask, make_settings


@pytest.fixture
async def app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[App]:
    built = build_app(make_settings(workspace, openai_server))
    yield built
    await built.close()


async def test_a_tool_using_turn_counts_as_one_question_and_one_answer(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(
        tool_call("memory", {"operation": "search", "query": "dentist"}),
        reply("Your dentist is on Thursday."),
        reply("You're welcome."),
    )
    await ask(app, "When is my dentist appointment?")
    await ask(app, "thanks")
    status = await app.commands.run(CONSOLE_CHAT, ParsedCommand("status", ""))
    assert "Session: 4 messages" in str(status)
    cleared = await app.commands.run(CONSOLE_CHAT, ParsedCommand("new", ""))
    assert "(4 messages cleared)" in str(cleared)
    # Nothing is left to count after /new.
    status = await app.commands.run(CONSOLE_CHAT, ParsedCommand("status", ""))
    assert "Session: 0 messages" in str(status)
