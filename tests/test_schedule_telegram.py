"""Reminders and tasks through the real clients: the fake Bot API, the fake model, the bot."""

from __future__ import annotations

from pathlib import Path

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.schedule_harness import nothing_waits_async
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

CHAT = 701


def texts(telegram: TelegramServer, chat: int = CHAT) -> list[str]:
    return [m["plain_text"] for m in telegram.sent_messages(chat)]


async def test_a_reminder_due_in_two_seconds_fires_once_with_no_model_call(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    await start_bot()
    openai_server.script(
        tool_call("schedule", {"when": "in 2 seconds", "text": "call the landlord"}),
        reply("I will remind you."),
    )
    telegram.send_text("remind me in 2 seconds to call the landlord", chat_id=CHAT)
    [confirmation] = await telegram.wait_for_messages_async(CHAT, 1)
    assert "I will remind you." in confirmation["plain_text"]
    assert "✅ Reminder #1 set for" in confirmation["plain_text"]
    calls = len(openai_server.requests)
    await telegram.wait_for_messages_async(CHAT, 2, timeout=10)
    await nothing_waits_async(workspace)
    assert texts(telegram)[1:] == ["⏰ Reminder: call the landlord"]
    assert len(openai_server.requests) == calls
