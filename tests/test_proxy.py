"""Behind a proxy, every Bot API call and every LLM call goes through it."""

from __future__ import annotations

import pytest

from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot_tooling.fakes.logging_proxy import LoggingProxy
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]


async def test_every_call_goes_through_the_configured_proxy(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LoggingProxy() as proxy:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
            monkeypatch.delenv(name, raising=False)
        bot = await start_bot(timing=TelegramTiming(typing_interval_seconds=0.2))
        telegram.send_text("hello through the proxy", chat_id=4242)
        [answer] = await telegram.wait_for_messages_async(4242, 1)
        assert answer["plain_text"] == "echo: hello through the proxy"
        await bot.shutdown()
        methods = {path.rsplit("/", 1)[-1] for path in proxy.paths()}
    direct = {call["method"] for call in telegram.calls()} - methods
    assert {"getMe", "setMyCommands", "getUpdates", "sendMessage"} <= methods
    assert "completions" in methods  # the LLM's /v1/chat/completions
    assert direct == set(), f"called without the proxy: {direct}"
