"""A long text pasted into Telegram arrives cut into several messages sent at once: the bot
answers it as one turn, not its first piece alone (the real PTB Application against the
fake Bot API and the fake model server over HTTP)."""

from __future__ import annotations

from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, user_texts
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram
from tests.test_telegram_media import one_by_one

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4343


async def test_a_paste_cut_into_two_messages_is_one_turn(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(timing=TelegramTiming(burst_seconds=1.0))
    # As Telegram's apps cut it: a full first message, then the rest.
    first = ("The lease says the notice period is three months. " * 80)[:4096]
    rest = "And the deposit is returned within thirty days. What do I owe when I move out?"
    await one_by_one(telegram, lambda: telegram.send_text(first, chat_id=USER))
    await one_by_one(telegram, lambda: telegram.send_text(rest, chat_id=USER))
    await telegram.wait_for_messages_async(USER, 1)

    assert len(openai_server.requests) == 1
    [text] = user_texts(openai_server.last_request())
    assert text.startswith(first[:100]) and text.endswith(rest)


async def test_a_short_message_is_answered_without_waiting_for_more(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # A long burst window: a short typed message must not wait it out.
    await start_bot(timing=TelegramTiming(burst_seconds=30.0))
    telegram.send_text("What is the notice period?", chat_id=USER)
    [answer] = await telegram.wait_for_messages_async(USER, 1, timeout=10)
    assert answer["plain_text"] == "echo: What is the notice period?"
