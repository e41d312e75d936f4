"""A bot killed (SIGKILL) while a reply streams: after the restart the whole answer arrives
as an edit of the preview the user already sees, never as a second copy beside it."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from mnemobot.bot.channels.telegram.markdown_html import markdown_to_telegram_html
from mnemobot.bot.channels.telegram.split import split_for_telegram
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import telegram
from tests.test_crash_recovery import start_bot

__all__ = ["telegram"]  # fixture used by name below

USER = 6100
ANSWER = "The **whole** answer: " + " ".join(f"part{i}" for i in range(40)) + "."


def wait_for(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


@pytest.mark.parametrize("more_while_down", [False, True], ids=["alone", "with-more"])
@pytest.mark.slow
def test_a_kill_mid_stream_ends_in_one_complete_reply(
    workspace: Path,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    more_while_down: bool,
) -> None:
    config = workspace / "preferences" / "runtime-config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"telegram": {"streaming": "edit"}}))
    openai_server.tokens_per_second = 10
    openai_server.responder = lambda body: reply(ANSWER)

    bot = start_bot(workspace, telegram, openai_server)
    try:
        telegram.send_text("tell me everything", chat_id=USER)
        # Killed while the model is still writing: the preview was shown and edited.
        wait_for(lambda: telegram.calls("editMessageText"))
        if more_while_down:
            # Kept in the inbox and waiting behind the streaming turn: after the restart
            # both come back as one turn whose newest message is this one, and the answer
            # must still land in the preview already shown.
            telegram.send_text("and one more thing", chat_id=USER)
            inbox = workspace / "delivery" / "telegram-inbox.jsonl"
            wait_for(lambda: inbox.exists() and "and one more thing" in inbox.read_text())
        bot.send_signal(signal.SIGKILL)
        bot.wait()
        [preview] = telegram.sent_messages(USER)
        assert preview["parse_mode"] is None and "part39" not in preview["plain_text"]

        bot = start_bot(workspace, telegram, openai_server)
        wait_for(lambda: telegram.sent_messages(USER)[-1]["parse_mode"] == "HTML")
        bot.send_signal(signal.SIGTERM)
        _, err = bot.communicate(timeout=30)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.communicate()
    assert bot.returncode == 0, err
    [message] = telegram.sent_messages(USER)
    assert message["message_id"] == preview["message_id"]
    expected = [chunk.html for chunk in split_for_telegram(markdown_to_telegram_html(ANSWER))]
    assert [message["text"]] == expected
    if more_while_down:
        asked = [m for m in openai_server.last_request()["messages"] if m["role"] == "user"]
        assert "and one more thing" in asked[-1]["content"]
