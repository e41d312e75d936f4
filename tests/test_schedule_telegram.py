"""Reminders and tasks through the real clients: the fake Bot API, the fake model, the bot."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemobot.bot.mcp.config import McpTiming
from mnemobot.bot.schedule.cron_words import Monthly, read_cron
from mnemobot.bot.schedule.tasks import Schedule, TaskChat
from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.mcp_harness import calls_logged, stdio_server, wait_ready
from tests.schedule_harness import due_now, nothing_waits_async
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


RUSSIAN_DAYS = ("пн", "вт", "ср", "чт", "пт", "сб", "вс")


async def test_a_repeating_reminder_says_it_repeats_and_when_it_comes_next(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    """Found live: a fired repeating reminder read "⏰ <text>" alone, as a one-off does."""
    bot = await start_bot()
    assert bot.app.schedule is not None
    every_two_days = Schedule(type="every", days=2, anchor=time.time())
    for number, language, text in ((1, None, "call mom"), (2, "ru", "позвонить маме")):
        chat = TaskChat(channel="telegram", chat_id=str(CHAT), user_id=str(CHAT), language=language)
        task = replace(due_now(f"t-{number}", chat, text), number=number, schedule=every_two_days)
        await bot.app.schedule.store.add(task, max_per_chat=25)
    bot.app.schedule.scheduler.wake()
    sent = await telegram.wait_for_messages_async(CHAT, 2, timeout=10)

    following = datetime.fromtimestamp(every_two_days.anchor + 2 * 86_400, UTC)  # type: ignore[operator]
    clock = f"{following:%H:%M}"
    assert sorted(m["plain_text"] for m in sent) == [
        f"⏰ Reminder: call mom\n🔁 next: {following:%a} {clock}",
        f"⏰ позвонить маме\n🔁 в следующий раз: {RUSSIAN_DAYS[following.weekday()]} {clock}",
    ]


@pytest.mark.slow
async def test_a_reminder_that_says_ok_does_not_answer_a_tool_waiting_for_confirmation(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    # A firing reaches the chat's lane like a message, but it is not the user speaking: its
    # words must never confirm a tool the user was asked about.
    log = tmp_path / "calls.log"
    mcp = {"servers": {"mail": stdio_server(log, confirmTools=["*"])}}
    quick = Tuning(mcp=McpTiming(confirm_timeout_seconds=3))
    bot = await start_bot(allowed="21", runtime={"mcp": mcp}, tuning=quick)
    bot.app.mcp.start()
    await wait_ready(bot.app, "mail")
    openai_server.script(tool_call("mcp_mail_add", {"a": 1, "b": 2}), reply("done"))
    telegram.send_text("add 1 and 2", chat_id=21)
    [question] = await telegram.wait_for_messages_async(21, 1)
    assert question["plain_text"].startswith("May I run add")
    # While the question is open, a reminder of this user's that says "ok" comes due.
    assert bot.app.schedule is not None
    chat = TaskChat(channel="telegram", chat_id="21", user_id="21", user_name="Test")
    reminder = due_now("t-ok", chat, "ok")
    await bot.app.schedule.store.add(reminder, max_per_chat=25)
    bot.app.schedule.scheduler.wake()

    # Nobody answers: the question times out, then the reminder waiting behind it is sent.
    sent = await telegram.wait_for_messages_async(21, 3, timeout=20)
    assert sent[2]["plain_text"] == "⏰ Reminder: ok"
    assert calls_logged(log) == []


RUSSIAN_MONTHS = [
    "января",
    "февраля",
    "марта",
    "апреля",
    "мая",
    "июня",
    "июля",
    "августа",
    "сентября",
    "октября",
    "ноября",
    "декабря",
]


async def test_a_russian_user_reads_when_in_russian_from_the_confirmation_to_the_reminder(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    # The user's Telegram is set to Russian: the lines we word ourselves carry the date in
    # Russian and no English sentence around it.
    await start_bot()
    openai_server.script(
        tool_call("schedule", {"when": "in 2 seconds", "text": "позвонить арендодателю"}),
        reply("Напомню."),
        tool_call(
            "schedule",
            {"when": "tomorrow at 9", "repeat": "every 3 days", "text": "полить цветы"},
        ),
        reply("Хорошо."),
    )
    telegram.send_text(
        "напомни через 2 секунды позвонить арендодателю", chat_id=CHAT, language_code="ru"
    )
    [confirmation] = await telegram.wait_for_messages_async(CHAT, 1)
    line = confirmation["plain_text"].splitlines()[-1]
    assert line.startswith("✅ #1 ⏰ ")
    assert any(month in line for month in RUSSIAN_MONTHS), line
    assert "Reminder" not in confirmation["plain_text"]
    await telegram.wait_for_messages_async(CHAT, 2, timeout=10)
    assert texts(telegram)[1] == "⏰ позвонить арендодателю"

    telegram.send_text("каждые три дня в 9 — полить цветы", chat_id=CHAT, language_code="ru")
    await telegram.wait_for_messages_async(CHAT, 3)
    assert "🔁 каждые 3 дня в 09:00: полить цветы" in texts(telegram)[2]
    telegram.send_text("/reminders", chat_id=CHAT, language_code="ru")
    await telegram.wait_for_messages_async(CHAT, 4)
    listing = texts(telegram)[3].splitlines()
    assert listing[1].startswith("#2 ⏰ ") and listing[1].endswith(
        "🔁 каждые 3 дня в 09:00: полить цветы"
    )
    assert "Scheduled" not in texts(telegram)[3]

    # Someone whose Telegram is in English reads the same task in English.
    telegram.send_text("/reminders", chat_id=CHAT, language_code="en")
    await telegram.wait_for_messages_async(CHAT, 5)
    assert "every 3 days at 09:00 — reminder: полить цветы" in texts(telegram)[4]


async def test_a_repeating_reminder_set_with_cron_reads_in_words_not_the_expression(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    # Most models answer "every morning at 8:30" with cron: the user reads when, not "30 8 * * *".
    await start_bot()
    openai_server.script(
        tool_call("schedule", {"repeat": "30 8 * * *", "text": "выпить таблетки"}),
        reply("Хорошо."),
        tool_call("schedule", {"repeat": "0 8 * * 1-5", "text": "stand-up meeting"}),
        reply("Done."),
    )
    telegram.send_text("каждое утро в 8:30 — выпить таблетки", chat_id=CHAT, language_code="ru")
    [confirmation] = await telegram.wait_for_messages_async(CHAT, 1)
    assert confirmation["plain_text"].endswith("🔁 каждый день в 08:30: выпить таблетки")
    assert "30 8 * * *" not in confirmation["plain_text"]

    telegram.send_text("stand-up every weekday at 8", chat_id=CHAT, language_code="en")
    await telegram.wait_for_messages_async(CHAT, 2)
    assert texts(telegram)[1].endswith(", Monday to Friday at 08:00: stand-up meeting")

    telegram.send_text("/reminders", chat_id=CHAT, language_code="en")
    await telegram.wait_for_messages_async(CHAT, 3)
    listing = texts(telegram)[2]
    assert "every day at 08:30 — reminder: выпить таблетки" in listing
    assert "Monday to Friday at 08:00 — reminder: stand-up meeting" in listing
    assert "* *" not in listing
    telegram.send_text("/reminders", chat_id=CHAT, language_code="ru")
    await telegram.wait_for_messages_async(CHAT, 4)
    assert "🔁 по будням в 08:00: stand-up meeting" in texts(telegram)[3]


async def test_a_repeat_the_model_passes_in_the_users_words_is_scheduled(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    # A small local model passes the user's words as they are: "every Monday at 8" was
    # refused as "neither a 5-field cron expression nor an interval".
    await start_bot()
    openai_server.script(
        tool_call("schedule", {"repeat": "every Monday at 8 pm", "text": "put the bins out"}),
        reply("Done."),
        tool_call("schedule", {"repeat": "по будням в 9:30", "text": "планёрка"}),
        reply("Готово."),
        tool_call("schedule", {"repeat": "every day at 9 and 18", "text": "water"}),
        reply("Could not."),
        tool_call("schedule", {"repeat": "1" * 5_000, "text": "loop"}),
        reply("Could not."),
    )
    telegram.send_text("remind me every Monday at 8pm to put the bins out", chat_id=CHAT)
    [bins] = await telegram.wait_for_messages_async(CHAT, 1)
    assert bins["plain_text"].endswith(", every Monday at 20:00: put the bins out")
    telegram.send_text("по будням в 9:30 — планёрка", chat_id=CHAT, language_code="ru")
    await telegram.wait_for_messages_async(CHAT, 2)
    assert texts(telegram)[1].endswith("🔁 по будням в 09:30: планёрка")
    # Two times in words: refused in one line that says what to give; nothing scheduled.
    telegram.send_text("water the plants at 9 and 18", chat_id=CHAT)
    await telegram.wait_for_messages_async(CHAT, 3)
    results = [m for m in openai_server.last_request()["messages"] if m["role"] == "tool"]
    refusal = str(results[-1]["content"])
    assert refusal.startswith("error: repeat 'every day at 9 and 18' is neither"), refusal
    assert "'every Monday at 08:00'" in refusal and "\n" not in refusal
    # A model looping on one character gets one short line, not the characters back.
    telegram.send_text("remind me of the loop", chat_id=CHAT)
    await telegram.wait_for_messages_async(CHAT, 4)
    results = [m for m in openai_server.last_request()["messages"] if m["role"] == "tool"]
    refusal = str(results[-1]["content"])
    assert "5,000 characters long" in refusal and len(refusal) < 300, refusal
    telegram.send_text("/reminders", chat_id=CHAT)
    await telegram.wait_for_messages_async(CHAT, 5)
    assert "water" not in texts(telegram)[4] and "loop" not in texts(telegram)[4]


async def test_a_day_of_every_month_is_a_monthly_repeat_read_back_in_words(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    # Found live: "каждого пятого числа", "every month on the 3rd" were refused, and the
    # tool's description gave the model no monthly example to follow.
    await start_bot()
    openai_server.script(
        tool_call("schedule", {"repeat": "каждого пятого числа в 9", "text": "оплатить квартиру"}),
        reply("Готово."),
        # The days in `repeat`, the time in `when`, as a small model splits them.
        tool_call(
            "schedule", {"repeat": "every month on the 3rd", "when": "09:30", "text": "pay rent"}
        ),
        reply("Done."),
    )
    telegram.send_text(
        "каждого пятого числа в 9 — оплатить квартиру", chat_id=CHAT, language_code="ru"
    )
    [flat] = await telegram.wait_for_messages_async(CHAT, 1)
    assert flat["plain_text"].endswith("🔁 5-го числа каждого месяца в 09:00: оплатить квартиру")
    [schedule] = [
        tool["function"]
        for tool in openai_server.requests[0]["tools"]
        if tool["function"]["name"] == "schedule"
    ]
    examples = re.findall(r"'([^']+)'", schedule["description"])
    assert any(isinstance(read_cron(example), Monthly) for example in examples), examples
    telegram.send_text("remind me to pay rent every month on the 3rd at 9:30", chat_id=CHAT)
    await telegram.wait_for_messages_async(CHAT, 2)
    assert texts(telegram)[1].endswith(", on day 3 of every month at 09:30: pay rent")
    telegram.send_text("/reminders", chat_id=CHAT, language_code="en")
    await telegram.wait_for_messages_async(CHAT, 3)
    listing = texts(telegram)[2]
    assert "on day 5 of every month at 09:00 — reminder: оплатить квартиру" in listing
    assert "on day 3 of every month at 09:30 — reminder: pay rent" in listing


async def test_a_late_day_of_every_month_says_it_falls_on_a_shorter_months_last_day(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    # Found live: "on the 31st of every month" skipped five months a year without a word.
    await start_bot()
    openai_server.script(
        tool_call("schedule", {"repeat": "on the 31st of every month at 9", "text": "invoice"}),
        reply("Done."),
        tool_call("schedule", {"repeat": "0 9 30 * *", "text": "счётчики"}),
        reply("Готово."),
    )
    telegram.send_text("send the invoice on the 31st of every month at 9", chat_id=CHAT)
    [invoice] = await telegram.wait_for_messages_async(CHAT, 1)
    assert invoice["plain_text"].endswith(
        ", on day 31 of every month at 09:00 (in shorter months, on the last day): invoice"
    )
    telegram.send_text("30-го числа каждого месяца — счётчики", chat_id=CHAT, language_code="ru")
    await telegram.wait_for_messages_async(CHAT, 2)
    assert texts(telegram)[1].endswith(
        "🔁 30-го числа каждого месяца в 09:00 (в более коротких месяцах — в последний день): "
        "счётчики"
    )
