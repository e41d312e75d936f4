"""/new and /status count messages as the user sees them in the chat: theirs and the
bot's replies. A turn where the model searched memory first stored four messages (the
question, the tool call, its result, the answer) and /new said "4 messages cleared"
for one question and one answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.schedule.tasks import TaskChat
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import CONSOLE_CHAT, ask, make_settings
from tests.schedule_harness import due_now
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

CHAT = 703


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


async def test_a_scheduled_firing_counts_as_what_the_chat_shows(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # A firing keeps a line of its own as the turn's message ("[Scheduled reminder #1 is
    # due]", a task's prompt) that nobody in the chat wrote or saw; /new counted it.
    bot = await start_bot()
    openai_server.script(
        tool_call("schedule", {"when": "in 1 second", "text": "call the landlord"}),
        reply("I will remind you."),
        reply("It is sunny."),
    )
    telegram.send_text("remind me in a second to call the landlord", chat_id=CHAT)
    await telegram.wait_for_messages_async(CHAT, 2, timeout=10)
    assert telegram.sent_messages(CHAT)[1]["plain_text"] == "⏰ Reminder: call the landlord"
    assert bot.app.schedule is not None
    user = TaskChat(channel="telegram", chat_id=str(CHAT), user_id=str(CHAT), user_name="Test")
    await bot.app.schedule.store.add(
        due_now("t-weather", user, "the weather", "task"), max_per_chat=25
    )
    bot.app.schedule.scheduler.wake()
    sent = await telegram.wait_for_messages_async(CHAT, 3, timeout=10)
    assert sent[2]["plain_text"] == "It is sunny."
    # The chat shows the question, the confirmation, the reminder and the task's answer.
    telegram.send_text("/new", chat_id=CHAT)
    sent = await telegram.wait_for_messages_async(CHAT, 4)
    assert "(4 messages cleared)" in sent[3]["plain_text"]
