"""Scheduled tasks where they meet other features: group permissions, erasure, /stop, the
heartbeat, failing tasks, the chat's own time zone."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from mnemobot.bot.schedule.limits import ScheduleLimits
from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    context_text,
    error,
    gated,
    reply,
    tool_call,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.schedule_harness import SteppedClock
from tests.telegram_harness import StartBot, start_bot, telegram
from tests.test_console_lanes import OpenTerminal, open_terminal
from tests.test_schedule_clock import RUNTIME, at, move_to, say, texts

__all__ = ["open_terminal", "start_bot", "telegram"]  # fixtures used by name below

GROUP = -3001
MEMBER, ADMIN = 21, 22
CHAT = 902


def tool_results(server: FakeOpenAIServer) -> list[str]:
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


async def test_in_a_group_only_admins_schedule_and_cancel_and_forget_me_erases_the_tasks(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    bot = await start_bot(runtime=RUNTIME, clock=clock, allowed=f"{MEMBER},{ADMIN}")
    telegram.set_member_status(GROUP, ADMIN, "administrator")
    schedule = tool_call("schedule", {"when": "12:00", "text": "lunch order"})

    def in_group(text: str, user: int) -> dict[str, object]:
        return {"chat": GROUP, "user_id": user, "chat_type": "group", "text": text}

    openai_server.script(schedule, reply("Hmm."))
    await say(telegram, "@mnemo_test_bot remind us at 12", GROUP, user_id=MEMBER, chat_type="group")
    [refusal] = tool_results(openai_server)
    assert "only this group's administrators" in refusal and "permissions.schedule" in refusal
    # Nor may a member move everyone's reminders to another time zone (found in live QA).
    openai_server.script(
        tool_call("schedule", {"action": "set_timezone", "timezone": "Asia/Tokyo"}),
        reply("Hmm."),
    )
    await say(telegram, "@mnemo_test_bot we are in Tokyo", GROUP, user_id=MEMBER, chat_type="group")
    refusal = tool_results(openai_server)[-1]
    assert "only this group's administrators" in refusal
    openai_server.script(schedule, reply("Set for everyone."))
    answer = await say(
        telegram, "@mnemo_test_bot remind us at 12", GROUP, user_id=ADMIN, chat_type="group"
    )
    assert "✅ Reminder #1 set for Tuesday 24 November, 12:00 (Europe/Berlin)" in answer
    listing = await say(telegram, "/reminders", GROUP, user_id=MEMBER, chat_type="group")
    assert "#1 Tuesday 24 November, 12:00" in listing  # everyone may look
    refused = await say(telegram, "/reminders cancel 1", GROUP, user_id=MEMBER, chat_type="group")
    assert refused.startswith("In this group only this group's administrators")

    await say(telegram, "/forget_me", GROUP, user_id=ADMIN, chat_type="group")
    erased = await say(telegram, "/forget_me confirm", GROUP, user_id=ADMIN, chat_type="group")
    assert erased == "Erased. I no longer remember anything of this chat."
    assert not list((workspace / "schedule").glob("*.json"))
    seen = len(telegram.sent_messages(GROUP))
    await move_to(bot, clock, at(2026, 11, 24, 12, 0, 1))
    assert "Nothing is scheduled" in await say(
        telegram, "/reminders", GROUP, user_id=ADMIN, chat_type="group"
    )
    assert not any("lunch" in t for t in texts(telegram, GROUP)[seen:])


async def test_a_heartbeat_speaks_only_when_there_is_something_to_say(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    bot = await start_bot(runtime=RUNTIME, clock=clock)
    openai_server.script(reply("Good luck at the dentist."))
    await say(telegram, "I have a dentist appointment on Thursday", CHAT)
    await say(telegram, "/new", CHAT)  # from here on only memory holds it
    on = await say(telegram, "/reminders heartbeat on", CHAT)
    assert on.startswith("Heartbeat on: #1 Tuesday 24 November, 09:00 (Europe/Berlin)")

    quiet = threading.Event()
    openai_server.script(gated(quiet, reply("NO_REPLY")))
    calls = len(openai_server.requests)
    await move_to(bot, clock, at(2026, 11, 24, 9, 0, 1))
    quiet.set()
    await openai_server.wait_for_requests_async(calls + 1)
    request = openai_server.requests[calls]
    assert "heartbeat check-in" in request["messages"][-1]["content"]
    assert "dentist" in context_text(request)  # it looks at the chat's memory
    # Nothing said; the next message's request does not carry the check-in either.
    openai_server.script(reply("ok"))
    assert await say(telegram, "thanks", CHAT) == "ok"
    last = openai_server.requests[-1]["messages"]
    assert not any("heartbeat" in str(m.get("content")) for m in last)
    assert not any("NO_REPLY" in str(m.get("content")) for m in last)
    # Nor does memory: a check-in with nothing to say is not a turn to remember.
    remembered = b"".join(p.read_bytes() for p in (workspace / "memory").rglob("*") if p.is_file())
    assert b"dentist" in remembered and b"NO_REPLY" not in remembered

    openai_server.script(reply("Your dentist appointment is tomorrow."))
    await move_to(bot, clock, at(2026, 11, 25, 9, 0, 1))
    sent = await telegram.wait_for_messages_async(CHAT, 5, timeout=10)
    assert sent[4]["plain_text"] == "Your dentist appointment is tomorrow."
    assert await say(telegram, "/reminders heartbeat off", CHAT) == "Heartbeat off."


async def test_a_task_that_keeps_failing_is_paused_and_the_chat_told(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    runtime = {**RUNTIME, "llm": {"maxRetries": 0}}
    limits = Tuning(schedule=ScheduleLimits(pause_after_failures=2))
    bot = await start_bot(runtime=runtime, clock=clock, tuning=limits)
    openai_server.script(
        tool_call("schedule", {"repeat": "0 9 * * *", "kind": "task", "text": "news digest"}),
        reply("Daily."),
    )
    await say(telegram, "every day at 9 send me a news digest", CHAT)
    for day, seen in ((24, 1), (25, 2)):
        openai_server.script(error(500, "model down"))
        await move_to(bot, clock, at(2026, 11, day, 9, 0, 1))
        await telegram.wait_for_messages_async(CHAT, 1 + seen, timeout=10)
    told = await telegram.wait_for_messages_async(CHAT, 4, timeout=10)
    assert told[1]["plain_text"] == (
        "Scheduled task #1 (news digest) did not run: the model is unavailable right now."
    )
    assert told[3]["plain_text"] == (
        "I paused scheduled task #1: it failed 2 times in a row. /reminders resume 1 starts "
        "it again."
    )
    listing = await say(telegram, "/reminders", CHAT)
    assert "#1 paused after 2 failures" in listing
    resumed = await say(telegram, "/reminders resume 1", CHAT)
    assert resumed.startswith("Resumed: #1 Thursday 26 November, 09:00")


async def test_stop_cancels_a_running_task_and_a_chat_sets_its_own_zone(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    bot = await start_bot(runtime=RUNTIME, clock=clock)
    openai_server.script(
        tool_call("schedule", {"action": "set_timezone", "timezone": "Asia/Tokyo"}),
        tool_call("schedule", {"when": "18:00", "kind": "task", "text": "plan dinner"}),
        reply("Set."),
    )
    answer = await say(telegram, "I live in Tokyo now; at 6 pm help me plan dinner", CHAT)
    # 08:00 in Berlin is 16:00 in Tokyo: 18:00 is today there.
    assert "#1 set for Tuesday 24 November, 18:00 (Asia/Tokyo)" in answer
    slow = threading.Event()
    openai_server.script(gated(slow, reply("too late")))
    calls = len(openai_server.requests)
    await move_to(bot, clock, at(2026, 11, 24, 10, 0, 1))  # 18:00:01 in Tokyo
    await openai_server.wait_for_requests_async(calls + 1)
    assert await say(telegram, "/stop", CHAT) == "Stopped the reply in progress."
    slow.set()
    openai_server.script(reply("fine"))
    assert await say(telegram, "ok", CHAT) == "fine"
    assert "too late" not in texts(telegram)
    # Later turns read the time in the chat's own zone.
    assert "Time now: 18:00 JST" in context_text(openai_server.requests[-1])
    assert "Today is Tuesday, 2026-11-24 (JST)" in context_text(openai_server.requests[-1])


async def test_a_reminder_fires_at_the_console(
    open_terminal: OpenTerminal, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(
        tool_call("schedule", {"when": "in 1 second", "text": "breathe"}), reply("Sure.")
    )
    terminal = open_terminal()
    terminal.type("remind me in a second to breathe")
    await terminal.shows("✅ Reminder #1 set for")
    await terminal.shows("bot> ⏰ Reminder: breathe", timeout=10)


async def test_a_group_upgraded_to_a_supergroup_keeps_its_tasks(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    group, supergroup = -4001, -1000004001
    clock = SteppedClock(at(2026, 11, 24, 8, 0))
    runtime = {**RUNTIME, "permissions": {"schedule": "members"}}
    bot = await start_bot(runtime=runtime, clock=clock)
    openai_server.script(
        tool_call("schedule", {"when": "12:00", "text": "order lunch"}), reply("Will do.")
    )
    await say(telegram, "@mnemo_test_bot remind us at 12", group, user_id=31, chat_type="group")
    telegram.upgrade_group(group, supergroup, user_id=31)
    moved = workspace / "schedule" / f"telegram:{supergroup}.json"
    for _ in range(200):
        if moved.exists():
            break
        await asyncio.sleep(0.02)
    listing = await say(telegram, "/reminders", supergroup, user_id=31, chat_type="supergroup")
    assert "#1 Tuesday 24 November, 12:00 (Europe/Berlin) — reminder: order lunch" in listing
    assert not (workspace / "schedule" / f"telegram:{group}.json").exists()
    await move_to(bot, clock, at(2026, 11, 24, 12, 0, 1))
    sent = await telegram.wait_for_messages_async(supergroup, 2, timeout=10)
    assert sent[1]["plain_text"] == "⏰ Reminder for Test: order lunch"
