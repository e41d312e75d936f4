"""The model's answer read as a stream: text as it is written, tool-call deltas, and servers
that do not stream or cut a stream short; through the real openai client and the fake server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.model.vision import ModelVisionStore
from mnemobot.systems.core.llm import ChatRequest, LLMFailureKind
from mnemobot.systems.core.reply_stream import STOPPED_MARK
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    cut_stream,
    overflow,
    reply,
    tool_call,
    tool_messages,
)
from tests.conftest import CONSOLE_CHAT as CHAT
from tests.conftest import make_settings, write_runtime_config

LONG_ANSWER = " ".join(f"word{i}" for i in range(40))


class ShownText:
    """What a channel would show while the answer is written (the ReplyStream side)."""

    def __init__(self) -> None:
        self.shown: list[tuple[float, str]] = []
        self.statuses: list[str] = []
        self.stop_requested = False

    def show(self, text: str) -> None:
        self.shown.append((time.time(), text))

    def tool_running(self, status: str) -> None:
        self.statuses.append(status)


def request(on_text: object = None) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "user", "content": "hi"}],
        model="m",
        temperature=0.2,
        max_output_tokens=500,
        timeout_seconds=10,
        on_text=on_text,  # type: ignore[arg-type]
    )


@pytest.fixture
async def model(openai_server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    client = OpenAIChatModel(api_key="k", base_url=openai_server.base_url, max_retries=0)
    yield client
    await client.close()


async def test_text_is_heard_while_the_model_writes(
    model: OpenAIChatModel, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 100
    openai_server.script(reply(LONG_ANSWER))
    heard: list[tuple[float, str]] = []
    response = await model.complete(request(lambda text: heard.append((time.time(), text))))
    finished = time.time()
    assert response.content == LONG_ANSWER and response.finish_reason == "stop"
    assert openai_server.last_request()["stream"] is True
    texts = [text for _, text in heard]
    # Growing prefixes of the answer, the first long before the last token was written.
    assert len(texts) >= 20 and texts[-1] == LONG_ANSWER
    assert all(LONG_ANSWER.startswith(text) for text in texts)
    assert heard[0][0] < finished - 0.2


async def test_tool_call_deltas_become_a_call(app: App, openai_server: FakeOpenAIServer) -> None:
    openai_server.tokens_per_second = 200
    openai_server.script(
        tool_call("memory", {"operation": "search", "query": "a rather long query " * 4}),
        reply("Found nothing."),
    )
    shown = ShownText()
    outcome = await app.assistant.handle_text(CHAT, "look it up", reply_stream=shown)
    assert outcome is not None and outcome.reply == "Found nothing."
    # The arguments came in fragments; the tool got them whole and answered.
    [result] = tool_messages(openai_server.requests[1])
    assert not result["content"].startswith("error")
    assert shown.statuses == ["🔎 searching memory…"]
    assert shown.shown[-1][1] == "Found nothing."


async def test_a_server_that_does_not_stream_still_answers(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.streams = False
    openai_server.script(tool_call("datetime", {}), reply("It is **late**."))
    shown = ShownText()
    outcome = await app.assistant.handle_text(CHAT, "time?", reply_stream=shown)
    assert outcome is not None and outcome.reply == "It is **late**."
    assert all(body["stream"] is True for body in openai_server.requests)


async def test_a_cut_stream_is_asked_again_without_streaming(
    model: OpenAIChatModel, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(cut_stream("Half an ans"), reply("A whole answer."))
    heard: list[str] = []
    response = await model.complete(request(heard.append))
    assert response.content == "A whole answer."
    first, second = openai_server.requests
    assert first["stream"] is True and not second.get("stream")


async def test_an_overflowing_stream_with_an_empty_body_is_an_overflow(
    model: OpenAIChatModel, openai_server: FakeOpenAIServer
) -> None:
    # llama-cpp-python answers a streamed request that does not fit with an empty 200.
    openai_server.empty_stream_on_overflow = True
    step = overflow("openai", context_tokens=2048, prompt_tokens=2231)
    openai_server.script(step, step)
    with pytest.raises(Exception) as raised:
        await model.complete(request(lambda text: None))
    assert getattr(raised.value, "kind", None) is LLMFailureKind.CONTEXT_OVERFLOW
    assert getattr(raised.value, "context_window", None) == 2048


async def test_stop_mid_stream_keeps_what_was_shown_marked_stopped(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 20
    openai_server.script(reply(LONG_ANSWER))
    shown = ShownText()
    turn = asyncio.create_task(app.assistant.handle_text(CHAT, "talk", reply_stream=shown))
    while len(shown.shown) < 3:
        await asyncio.sleep(0.02)
    shown.stop_requested = True
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    last = shown.shown[-1][1]
    assert last.endswith(STOPPED_MARK) and last.startswith("word0 word1")
    stored = app.sessions.get(CHAT.key).messages[-1]
    assert stored["role"] == "assistant" and stored.get("stopped") is True
    assert str(stored["content"]).endswith(STOPPED_MARK)


async def test_a_server_that_cannot_stream_tool_choice_is_asked_once_per_turn(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    # llama-cpp-python with chatml-function-calling: a streamed request with tool_choice
    # gets an empty 200 before the model runs, and every model call was made twice.
    openai_server.streams_tool_choice = False
    openai_server.script(reply("First."), reply("Second."), reply("Third."))
    for text, answer in (("one", "First."), ("two", "Second."), ("three", "Third.")):
        outcome = await app.assistant.handle_text(CHAT, text, reply_stream=ShownText())
        assert outcome is not None and outcome.reply == answer
    sent = openai_server.recorded_requests
    # The first call streamed (refused), then went whole; the later ones went whole at once.
    assert [(bool(r.body.get("stream")), r.rejected) for r in sent] == [
        (True, True),
        (False, False),
        (False, False),
        (False, False),
    ]


async def test_a_restart_remembers_that_the_server_cannot_stream_tool_choice(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Learned per process, every restart cost one refused streamed request (found live
    with llama-cpp-python: "Automatic streaming tool choice is not supported"). It is kept
    beside what the server's model refused before, per server and model."""
    openai_server.streams_tool_choice = False
    openai_server.script(reply("First."), reply("Again."), reply("Other."))
    for runtime, answer in ((None, "First."), (None, "Again."), ("other-model", "Other.")):
        if runtime is not None:
            write_runtime_config(workspace, {"llm": {"model": runtime}})
        app = build_app(make_settings(workspace, openai_server))
        try:
            outcome = await app.assistant.handle_text(CHAT, "hi", reply_stream=ShownText())
        finally:
            await app.close()
        assert outcome is not None and outcome.reply == answer
    sent = [
        (r.body["model"], bool(r.body.get("stream")), r.rejected)
        for r in (openai_server.recorded_requests)
    ]
    assert sent == [
        ("gpt-4o-mini", True, True),
        ("gpt-4o-mini", False, False),
        # Restarted: the same model at the same server goes whole at once ...
        ("gpt-4o-mini", False, False),
        # ... another model is asked as before.
        ("other-model", True, True),
        ("other-model", False, False),
    ]


def test_a_server_found_not_to_stream_tool_choice_is_asked_again_after_a_week(
    tmp_path: Path,
) -> None:
    """One empty stream may be one the server broke off for another request: what it
    taught holds across restarts for a week, not for good."""
    now = [1_800_000_000.0]
    base = "http://127.0.0.1:8081/v1"
    store = ModelVisionStore.in_workspace(tmp_path, clock=lambda: now[0])
    store.remember_no_tool_choice_streams(base, "smollm")
    now[0] += 6 * 86_400
    reopened = ModelVisionStore.in_workspace(tmp_path, clock=lambda: now[0])
    assert not reopened.streams_tool_choice(base, "smollm")
    assert reopened.streams_tool_choice(base, "another-model")
    now[0] += 2 * 86_400
    assert ModelVisionStore.in_workspace(tmp_path, clock=lambda: now[0]).streams_tool_choice(
        base, "smollm"
    )
