"""Commands never hold up the intake: one chat's running reply never delays another chat."""

from __future__ import annotations

import threading
from pathlib import Path

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, gated, reply
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

A, B, C = 501, 502, 503


async def test_forget_me_confirm_during_a_running_reply_does_not_freeze_other_chats(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("a long story")))
    await start_bot()
    try:
        telegram.send_text("tell me a long story", chat_id=A)
        await openai_server.wait_for_requests_async(1)
        telegram.send_text("/forget_me", chat_id=A)
        telegram.send_text("/forget_me confirm", chat_id=A)
        telegram.send_text("/status", chat_id=B)
        telegram.send_text("/help", chat_id=C)
        # Answered while chat A's reply is still being written.
        [status] = await telegram.wait_for_messages_async(B, 1)
        [help_] = await telegram.wait_for_messages_async(C, 1)
        assert telegram.sent_messages(A) == []
    finally:
        release.set()
    story, asked, erased = await telegram.wait_for_messages_async(A, 3)

    assert "Chat: telegram:502" in status["plain_text"]
    assert help_["plain_text"].startswith("Commands:")
    # Chat A's commands waited for its turn, in order, and the erasure came after the reply.
    assert story["plain_text"] == "a long story"
    assert "/forget_me confirm" in asked["plain_text"]
    assert erased["plain_text"].startswith("Erased.")
    assert not (workspace / "sessions" / f"telegram:{A}.json").exists()
