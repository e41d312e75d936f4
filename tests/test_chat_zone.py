"""A chat that set its own time zone reads its dates in it everywhere, not only in its
turns: the daily notes of an edit and of the facts a compaction keeps, and the dates shown
for forwards. The real bot on an injected clock, the fake Bot API and the fake model."""

from __future__ import annotations

from pathlib import Path

from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    echo_responder,
    reply,
    tool_call,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.schedule_harness import SteppedClock
from tests.telegram_harness import StartBot, start_bot, telegram
from tests.test_compaction import is_flush_request, is_summary_request
from tests.test_schedule_clock import RUNTIME, at, say

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

CHAT = 903


def answer(body: dict[str, object]) -> object:
    if is_flush_request(body):
        return reply("- The user's bike is green.")
    if is_summary_request(body):
        return reply("SESSION INTENT: bikes\nSUMMARY: a bike\nARTIFACTS: none\nNEXT STEPS: none")
    return echo_responder(body)


# A bound, not a pause: the replies come in well under a second, but a loaded 2-core
# machine (a parallel suite, another job) has taken over 5 s for one.
REPLY_BOUND = 60.0


async def test_a_chat_in_its_own_zone_gets_every_daily_note_and_date_in_it(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # 20:00 in Berlin, the configured zone, is 04:00 the next day in Tokyo.
    clock = SteppedClock(at(2026, 11, 24, 20, 0))
    bot = await start_bot(runtime=RUNTIME, clock=clock, tuning=Tuning(background_quiet_seconds=0))
    openai_server.script(
        tool_call("schedule", {"action": "set_timezone", "timezone": "Asia/Tokyo"}),
        reply("Noted."),
    )
    await say(telegram, "I live in Tokyo now", CHAT)
    openai_server.responder = answer  # type: ignore[assignment]
    first = telegram.send_text("My bike is red.", chat_id=CHAT)
    await telegram.wait_for_messages_async(CHAT, 2, timeout=REPLY_BOUND)
    telegram.edit_message(first, "My bike is green.")
    # Written at 19:00 in Berlin: 03:00 in Tokyo.
    telegram.send_forward(
        "Dinner at eight?", chat_id=CHAT, author="Alice", date=int(at(2026, 11, 24, 19, 0))
    )
    await telegram.wait_for_messages_async(CHAT, 3, timeout=REPLY_BOUND)
    assert (await say(telegram, "/compact 1", CHAT)).startswith("Compacted")
    # The memory flush follows on this local (one-slot) server.
    assert bot.app.maintenance is not None
    await bot.app.maintenance.settled()

    assert user_texts(openai_server.requests[-3])[-1] == (
        "[forwarded from Alice, 2026-11-25 03:00] Dinner at eight?"
    )
    folder = workspace / "memory" / f"telegram:{CHAT}"
    tokyo = (folder / "2026-11-25.md").read_text()
    # Only the turn that set the zone was dated before it did.
    assert "I live in Tokyo now" in (folder / "2026-11-24.md").read_text()
    assert "[04:00] User: My bike is red." in tokyo
    assert "[04:00] User: (edited an earlier message) My bike is green." in tokyo
    assert "[04:00] Noted from the conversation: The user's bike is green." in tokyo
