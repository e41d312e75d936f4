"""Scheduled tasks on an injected clock: late after downtime, across a DST change, listed
and cancelled, limited. The real bot against the fake Bot API and the fake model."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from mnemobot.bot.schedule.limits import ScheduleLimits
from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call, tool_calls
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.schedule_harness import SteppedClock, nothing_waits_async
from tests.telegram_harness import RunningBot, StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

BERLIN = "Europe/Berlin"
RUNTIME = {"assistant": {"timezone": BERLIN}}
CHAT = 901


def at(*parts: int) -> float:
    return datetime(*parts, tzinfo=ZoneInfo(BERLIN)).timestamp()  # type: ignore[misc]


def texts(telegram: TelegramServer, chat: int = CHAT) -> list[str]:
    return [m["plain_text"] for m in telegram.sent_messages(chat)]


async def say(telegram: TelegramServer, text: str, chat: int = CHAT, **extra: object) -> str:
    """Send `text`; the bot's next message to the chat."""
    seen = len(telegram.sent_messages(chat))
    telegram.send_text(text, chat_id=chat, **extra)  # type: ignore[arg-type]
    sent = await telegram.wait_for_messages_async(chat, seen + 1, timeout=10)
    return str(sent[seen]["plain_text"])


async def move_to(bot: RunningBot, clock: SteppedClock, when: float) -> None:
    clock.now = when
    assert bot.app.schedule is not None
    bot.app.schedule.scheduler.wake()


async def test_tasks_due_while_the_bot_was_offline_fire_late_or_are_reported_once(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    bot = await start_bot(runtime=RUNTIME, clock=clock)
    openai_server.script(
        tool_calls(
            [
                tool_call("schedule", {"when": "09:00", "text": "call the landlord"}),
                tool_call("schedule", {"when": "09:10", "text": "stretch"}),
            ]
        ),
        reply("Both set."),
    )
    confirmed = await say(telegram, "remind me at 9 to call the landlord and at 9:10 to stretch")
    assert "Reminder #1 set for Tuesday 24 November, 09:00 (Europe/Berlin)" in confirmed
    assert "Reminder #2 set for Tuesday 24 November, 09:10 (Europe/Berlin)" in confirmed
    await bot.shutdown()

    # Back at 15:05: 09:00 is past the 6-hour grace period, 09:10 is not.
    clock.now = at(2026, 11, 24, 15, 5)
    await start_bot(runtime=RUNTIME, clock=clock)
    await telegram.wait_for_messages_async(CHAT, 3, timeout=10)
    await nothing_waits_async(workspace)
    assert texts(telegram)[1:] == [
        "I was offline at 09:00 and missed reminder #1: call the landlord",
        "⏰ Reminder: stretch\n(late: I was offline at 09:10)",
    ]


async def test_a_daily_task_fires_at_nine_local_time_on_both_sides_of_a_dst_change(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    clock = SteppedClock(at(2026, 3, 28, 8, 0))  # clocks go forward tomorrow at 02:00
    bot = await start_bot(runtime=RUNTIME, clock=clock)
    openai_server.script(
        tool_call("schedule", {"repeat": "0 9 * * *", "text": "morning pages"}),
        reply("Every day at 9."),
    )
    confirmed = await say(telegram, "every day at 9 remind me to write my morning pages")
    assert "#1 set for Saturday 28 March, 09:00 (Europe/Berlin), every day at 09:00" in confirmed

    await move_to(bot, clock, at(2026, 3, 28, 9, 0, 1))
    await telegram.wait_for_messages_async(CHAT, 2, timeout=10)
    listing = await say(telegram, "/reminders")
    assert "#1 Sunday 29 March, 09:00 (Europe/Berlin), every day at 09:00" in listing
    # 09:00 summer time is 07:00 UTC; a fixed winter offset would wait until 10:00.
    await move_to(bot, clock, at(2026, 3, 29, 9, 0, 1))
    await telegram.wait_for_messages_async(CHAT, 4, timeout=10)
    assert [t for t in texts(telegram) if t.startswith("⏰")] == [
        "⏰ Reminder: morning pages\n🔁 next: Sun 09:00",
        "⏰ Reminder: morning pages\n🔁 next: Mon 09:00",
    ]


async def test_reminders_lists_and_cancels_and_the_limits_hold(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    limits = Tuning(schedule=ScheduleLimits(max_tasks_per_chat=2, min_interval_minutes=30))
    bot = await start_bot(runtime=RUNTIME, clock=clock, tuning=limits)
    openai_server.script(
        tool_calls(
            [
                tool_call("schedule", {"when": "in 1 hour", "text": "call the landlord"}),
                tool_call("schedule", {"when": "10:00", "text": "stand up", "kind": "task"}),
                tool_call("schedule", {"when": "11:00", "text": "one too many"}),
                tool_call("schedule", {"repeat": "*/10 * * * *", "text": "too often"}),
            ]
        ),
        reply("Done what I could."),
    )
    await say(telegram, "remind me of four things")
    results = [m["content"] for m in openai_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[0].startswith("Scheduled.") and results[1].startswith("Scheduled.")
    assert "already has 2 scheduled tasks" in results[2], results[2]
    assert "repeats too often" in results[3] and "shortest interval allowed is 30" in results[3]

    listing = await say(telegram, "/reminders")
    assert listing.splitlines()[1:3] == [
        "#1 Tuesday 24 November, 09:00 (Europe/Berlin) — reminder: call the landlord",
        "#2 Tuesday 24 November, 10:00 (Europe/Berlin) — task: stand up",
    ]
    assert await say(telegram, "/reminders cancel 1") == "Cancelled #1: call the landlord."
    assert (await say(telegram, "/reminders cancel 7")).startswith("There is no task #7")
    assert "call the landlord" not in await say(telegram, "/reminders")
    assert "Scheduled: 1 waiting, next Tuesday 24 November, 10:00" in await say(telegram, "/status")

    calls = len(openai_server.requests)
    await move_to(bot, clock, at(2026, 11, 24, 9, 30))  # the cancelled one would be due
    openai_server.script(reply("Stand-up time: say what you did yesterday."))
    await move_to(bot, clock, at(2026, 11, 24, 10, 0, 1))
    task_answer = (await telegram.wait_for_messages_async(CHAT, 7, timeout=10))[6]
    assert task_answer["plain_text"] == "Stand-up time: say what you did yesterday."
    # The task ran as a turn: its words reached the model, with the chat's conversation.
    [request] = openai_server.requests[calls:]
    assert "[Scheduled task #2" in request["messages"][-1]["content"]
    assert "stand up" in request["messages"][-1]["content"]
    assert not any("⏰" in t for t in texts(telegram))
    assert "Nothing is scheduled" in await say(telegram, "/reminders")


async def test_a_task_of_a_user_no_longer_allowed_does_not_fire(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    bot = await start_bot(runtime=RUNTIME, clock=clock, allowed=f"{CHAT},77")
    openai_server.script(tool_call("schedule", {"when": "09:00", "text": "pay"}), reply("Ok."))
    await say(telegram, "remind me at 9 to pay")
    openai_server.script(tool_call("schedule", {"when": "09:00", "text": "lunch"}), reply("Ok."))
    await say(telegram, "remind me at 9 about lunch", 77)
    await bot.shutdown()
    clock.now = at(2026, 11, 24, 9, 0, 1)
    await start_bot(runtime=RUNTIME, clock=clock, allowed="77")
    await telegram.wait_for_messages_async(77, 2, timeout=10)
    await nothing_waits_async(Path(bot.settings.bot_workspace))
    assert texts(telegram, 77)[1] == "⏰ Reminder: lunch"
    assert texts(telegram)[1:] == []
