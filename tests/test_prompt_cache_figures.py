"""/status says how much of the conversation's input the model server took from its cache,
as the server reports it (OpenAI's usage, llama.cpp's timings), streamed or not."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, request_tokens
from tests.conftest import CONSOLE_CHAT, make_settings


class ShownStream:
    """A channel's stream: the request goes out streamed (stream_options asks for usage)."""

    def __init__(self) -> None:
        self.text = ""

    def show(self, text: str) -> None:
        self.text = text

    def tool_running(self, status: str) -> None:
        pass

    @property
    def stop_requested(self) -> bool:
        return False


@pytest.fixture
async def app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[App]:
    built = build_app(make_settings(workspace, openai_server))
    yield built
    await built.close()


async def status(app: App) -> str:
    return await app.commands.run(CONSOLE_CHAT, ParsedCommand("status", ""))


def input_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("Input tokens:"))


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("report", ["openai", "llamacpp"])
async def test_status_shows_cached_and_new_input_tokens(
    app: App, openai_server: FakeOpenAIServer, report: str, streamed: bool
) -> None:
    openai_server.cache_report = report  # type: ignore[assignment]
    assert "no model call" in input_line(await status(app))
    for text in ("My cat is called Miso.", "She likes the balcony.", "What is her name?"):
        stream = ShownStream() if streamed else None
        outcome = await app.assistant.handle_text(CONSOLE_CHAT, text, reply_stream=stream)
        assert outcome is not None and outcome.answered
    served = openai_server.recorded_requests
    assert bool(served[-1].body.get("stream")) is streamed
    cached = sum(record.cached_tokens for record in served)
    assert cached > 0
    line = input_line(await status(app))
    match = re.fullmatch(
        r"Input tokens: ([\d,]+) cached, ([\d,]+) new \((\d+)% from the model server's "
        r"cache\) in 3 model calls",
        line,
    )
    assert match, line
    assert int(match[1].replace(",", "")) == cached
    # /new starts the count again.
    await app.commands.run(CONSOLE_CHAT, ParsedCommand("new", ""))
    assert "no model call" in input_line(await status(app))


async def test_a_server_that_does_not_say_what_it_cached_is_named_so(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.cache_report = None
    outcome = await app.assistant.handle_text(CONSOLE_CHAT, "hello there")
    assert outcome is not None and outcome.answered
    line = input_line(await status(app))
    assert "the model server does not say what it cached" in line and "1 model call" in line


async def test_a_stream_without_usage_is_counted_with_an_estimate_that_says_so(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    """llama-cpp-python sends no usage in a stream, whatever `stream_options` asks:
    /status said "no model call in this conversation yet" after a dozen replies."""
    openai_server.cache_report = None
    openai_server.usage_in_streams = False
    for text in ("My cat is called Miso.", "She likes the balcony."):
        outcome = await app.assistant.handle_text(CONSOLE_CHAT, text, reply_stream=ShownStream())
        assert outcome is not None and outcome.answered
    bodies = [record.body for record in openai_server.recorded_requests]
    assert all(body["stream_options"] == {"include_usage": True} for body in bodies)
    line = input_line(await status(app))
    match = re.fullmatch(
        r"Input tokens: ~([\d,]+) in 2 model calls \(estimated: the model server does not "
        r"say how many\)",
        line,
    )
    assert match, line
    # The bot's own estimate of what it sent: near what the server would have counted.
    counted = sum(request_tokens(body) for body in bodies)
    assert 0.5 * counted < int(match[1].replace(",", "")) < 2 * counted

    # A plain request's answer says its usage: only the streamed ones are estimates.
    outcome = await app.assistant.handle_text(CONSOLE_CHAT, "What is her name?")
    assert outcome is not None and outcome.answered
    line = input_line(await status(app))
    assert line.startswith("Input tokens: ~") and line.endswith(
        "in 3 model calls (2 of them estimated: the model server did not say how many)"
    ), line
