"""Strangers hear that the bot is private once a day, in private or when they address it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram, until_nothing_pending

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

OWNER = 1
STRANGER = 777
GROUP = -1001


async def owner_is_answered(
    telegram: TelegramServer, workspace: Path, chat_id: int, count: int
) -> None:
    """Updates are taken in order: once the owner's answer is out, the earlier ones are in
    the bot's inbox; once nothing waits there or in its outbox, every one was answered (a
    refusal sent, or not) and no refusal is still on its way."""
    await telegram.wait_for_messages_async(chat_id, count)
    await until_nothing_pending(workspace)


async def test_a_stranger_is_refused_once_even_across_a_restart(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    bot = await start_bot(allowed=str(OWNER))
    telegram.send_text("hi", chat_id=STRANGER)
    telegram.send_text("hello??", chat_id=STRANGER)
    telegram.send_text("ping", chat_id=OWNER)
    await owner_is_answered(telegram, workspace, OWNER, 1)
    assert len(telegram.sent_messages(STRANGER)) == 1
    assert "will not reply" in telegram.sent_messages(STRANGER)[0]["plain_text"]

    await bot.shutdown()
    await start_bot(allowed=str(OWNER))
    telegram.send_text("are you there?", chat_id=STRANGER)
    telegram.send_text("ping again", chat_id=OWNER)
    await owner_is_answered(telegram, workspace, OWNER, 2)
    assert len(telegram.sent_messages(STRANGER)) == 1
    assert len(openai_server.requests) == 2  # the owner's two messages only


async def test_a_stranger_is_told_again_the_next_day(
    start_bot: StartBot, telegram: TelegramServer, workspace: Path
) -> None:
    told = workspace / "telegram" / "refused-users.json"
    told.parent.mkdir(parents=True)
    told.write_text(json.dumps({str(STRANGER): time.time() - 25 * 3600}))
    await start_bot(allowed=str(OWNER))
    telegram.send_text("hi again", chat_id=STRANGER)
    [refusal] = await telegram.wait_for_messages_async(STRANGER, 1)
    assert str(STRANGER) in refusal["plain_text"]


async def test_in_a_group_a_stranger_is_refused_only_when_addressing_the_bot_and_once(
    start_bot: StartBot, telegram: TelegramServer, workspace: Path
) -> None:
    await start_bot(allowed=str(OWNER))

    def say(text: str, user_id: int, **extra: object) -> None:
        telegram.send_text(text, chat_id=GROUP, user_id=user_id, chat_type="supergroup", **extra)

    say("lunch anyone?", STRANGER)
    say("@mnemo_test_bot who are you?", STRANGER)
    say("hey @mnemo_test_bot?", STRANGER)
    say("still nothing?", STRANGER, reply_to_bot=True)
    say("@mnemo_test_bot what is BM25?", OWNER)
    await owner_is_answered(telegram, workspace, GROUP, 2)
    sent = [m["plain_text"] for m in telegram.sent_messages(GROUP)]
    assert len(sent) == 2
    assert sum(str(STRANGER) in text for text in sent) == 1
    assert "echo: Test: what is BM25?" in sent
