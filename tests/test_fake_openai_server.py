"""The fake OpenAI server, driven through the real ``openai`` SDK the bot uses.

If these pass, a test written against the fake sees what the SDK would show for a real server.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Usage,
    delay,
    disconnect,
    error,
    gated,
    hang,
    overflow,
    reply,
    request_chars,
    system_text,
    tool_call,
    tool_calls,
    tool_messages,
    user_texts,
)

MODEL = "gpt-4o-mini"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    yield sdk
    await sdk.close()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def ask(sdk: openai.AsyncOpenAI, text: str, **kwargs: Any) -> Any:
    return await sdk.chat.completions.create(model=MODEL, messages=[user(text)], **kwargs)


# -- plain answers ---------------------------------------------------------------------------


async def test_scripted_reply_parses_as_a_chat_completion_with_usage(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(reply("Hello, Ann!"))

    completion = await ask(client, "hi, I am Ann")

    choice = completion.choices[0]
    assert choice.message.content == "Hello, Ann!"
    assert choice.finish_reason == "stop"
    assert completion.model == MODEL
    assert completion.usage is not None
    assert completion.usage.prompt_tokens > 0
    assert completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    record = server.recorded_requests[0]
    assert record.body["messages"] == [user("hi, I am Ann")]
    assert record.headers["authorization"] == "Bearer test"
    assert not record.rejected


async def test_explicit_usage_and_length_finish_reason_are_reported(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(reply("cut sh", finish_reason="length", usage=Usage(49_000, 2048)))

    completion = await ask(client, "write a novel")

    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.prompt_tokens == 49_000
    assert completion.usage.completion_tokens == 2048


async def test_empty_script_echoes_the_last_user_message(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(reply("scripted"))
    history = [
        {"role": "system", "content": "You are terse."},
        user("first"),
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "second "}, {"type": "text", "text": "part"}],
        },
    ]

    first = await client.chat.completions.create(model=MODEL, messages=history)
    second = await client.chat.completions.create(model=MODEL, messages=history)

    assert first.choices[0].message.content == "scripted"
    assert second.choices[0].message.content == "echo: second part"
    assert server.pending_steps == []
    assert user_texts(server.last_request()) == ["first", "second part"]
    assert system_text(server.last_request()) == "You are terse."


async def test_responder_answers_from_the_request_when_script_is_empty(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.responder = lambda body: reply(
        f"{len(body['messages'])} messages, model {body['model']}"
    )

    completion = await ask(client, "count")

    assert completion.choices[0].message.content == f"1 messages, model {MODEL}"


def test_sync_client_works_from_a_plain_test(server: FakeOpenAIServer) -> None:
    sdk = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    with sdk:
        completion = sdk.chat.completions.create(model=MODEL, messages=[user("sync")])
    assert completion.choices[0].message.content == "echo: sync"
    assert server.wait_for_requests(1) == [{"model": MODEL, "messages": [user("sync")]}]


async def test_models_endpoint_lists_the_configured_names(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.models = ["qwen2.5-7b", "llama-3.1-8b"]

    page = await client.models.list()

    assert [model.id for model in page.data] == ["qwen2.5-7b", "llama-3.1-8b"]
    assert server.requests == []  # only chat requests are recorded


async def test_wrong_base_path_is_a_not_found_error(server: FakeOpenAIServer) -> None:
    # A base URL without /v1 is the usual misconfiguration; it must fail loudly.
    async with openai.AsyncOpenAI(
        base_url=server.base_url.removesuffix("/v1"), api_key="test", max_retries=0
    ) as sdk:
        with pytest.raises(openai.NotFoundError):
            await ask(sdk, "hello")


# -- tool calls --------------------------------------------------------------------------------


async def test_tool_call_with_dict_arguments(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(tool_call("remember", {"fact": "likes green tea", "tags": ["drink"]}, "call_1"))

    completion = await ask(client, "remember that I like green tea")

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.id == "call_1"
    assert call.function.name == "remember"
    assert json.loads(call.function.arguments) == {"fact": "likes green tea", "tags": ["drink"]}


async def test_tool_call_with_invalid_json_arguments_is_sent_verbatim(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(tool_call("remember", '{"fact": "unterminated'))

    completion = await ask(client, "go")

    [call] = completion.choices[0].message.tool_calls
    assert call.function.arguments == '{"fact": "unterminated'
    assert call.id  # an id is generated when none is given


async def test_several_tool_calls_in_one_response_get_distinct_ids(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(
        tool_calls(
            [tool_call("search_memory", {"query": "tea"}), tool_call("get_time", {})],
            content="Let me check.",
        )
    )

    completion = await ask(client, "what do I drink, and when?")

    message = completion.choices[0].message
    assert message.content == "Let me check."
    assert [c.function.name for c in message.tool_calls] == ["search_memory", "get_time"]
    assert len({c.id for c in message.tool_calls}) == 2


async def test_tool_result_round_trip_is_recorded(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(tool_call("get_time", {}, "call_t"), reply("It is noon."))
    first = await ask(client, "time?")
    assistant = first.choices[0].message.model_dump(exclude_none=True)
    tool_result = {"role": "tool", "tool_call_id": "call_t", "content": "12:00"}

    second = await client.chat.completions.create(
        model=MODEL, messages=[user("time?"), assistant, tool_result]
    )

    assert second.choices[0].message.content == "It is noon."
    assert tool_messages(server.last_request()) == [tool_result]


async def test_orphan_tool_message_is_rejected_like_openai_does(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(reply("must not be used"))
    orphan = {"role": "tool", "tool_call_id": "call_gone", "content": "12:00"}

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[user("time?"), orphan])

    assert "must be a response to a preceeding message with 'tool_calls'" in caught.value.message
    assert server.recorded_requests[0].rejection == "invalid_request"
    assert server.pending_steps == [reply("must not be used")]


async def test_unanswered_tool_call_is_rejected_unless_validation_is_off(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    call = {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [user("a"), {"role": "assistant", "tool_calls": [call]}, user("b")]

    with pytest.raises(openai.BadRequestError, match="call_x"):
        await client.chat.completions.create(model=MODEL, messages=messages)
    server.validate_messages = False
    completion = await client.chat.completions.create(model=MODEL, messages=messages)

    assert completion.choices[0].message.content == "echo: b"


# -- streaming ---------------------------------------------------------------------------------


async def test_streamed_reply_arrives_in_pieces_and_ends_with_usage(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    text = "Tea it is.  You told me so on Monday.\nAnything else?"
    server.script(reply(text))

    stream = await ask(client, "drink?", stream=True, stream_options={"include_usage": True})
    pieces: list[str] = []
    finish_reasons: list[str] = []
    usage = None
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finish_reasons.append(choice.finish_reason)
        usage = chunk.usage or usage

    assert "".join(pieces) == text
    assert len(pieces) > 1
    assert finish_reasons == ["stop"]
    assert usage is not None and usage.completion_tokens > 0
    assert server.last_request()["stream"] is True


async def test_streamed_tool_calls_accumulate_by_index(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    long_arguments = {"fact": "the user's cat is called Professor Whiskers"}
    server.script(
        tool_calls([tool_call("remember", long_arguments, "call_a"), tool_call("get_time", "{}")])
    )

    stream = await ask(client, "note my cat's name", stream=True)
    calls: dict[int, dict[str, str]] = {}
    finish_reason = None
    async for chunk in stream:
        choice = chunk.choices[0]
        finish_reason = choice.finish_reason or finish_reason
        for delta in choice.delta.tool_calls or []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += delta.id or ""
            call["name"] += (delta.function and delta.function.name) or ""
            call["arguments"] += (delta.function and delta.function.arguments) or ""

    assert finish_reason == "tool_calls"
    assert calls[0]["id"] == "call_a"
    assert calls[0]["name"] == "remember"
    assert json.loads(calls[0]["arguments"]) == long_arguments
    assert calls[1]["name"] == "get_time"
    assert calls[1]["arguments"] == "{}"
    assert calls[1]["id"] and calls[1]["id"] != "call_a"


async def test_stream_helper_of_the_sdk_assembles_the_final_message(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(reply("All assembled."))

    async with client.chat.completions.stream(model=MODEL, messages=[user("x")]) as stream:
        final = await stream.get_final_completion()

    assert final.choices[0].message.content == "All assembled."


# -- errors ------------------------------------------------------------------------------------


async def test_rate_limit_with_retry_after(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(error(429, "Rate limit reached", code="rate_limit_exceeded", retry_after=7))

    with pytest.raises(openai.RateLimitError) as caught:
        await ask(client, "hi")

    assert caught.value.status_code == 429
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after"] == "7"
    assert "Rate limit reached" in caught.value.message


async def test_sdk_retries_after_a_rate_limit_get_the_next_step(server: FakeOpenAIServer) -> None:
    server.script(error(429, "slow down", retry_after=0.01), reply("second try"))

    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=1) as sdk:
        completion = await ask(sdk, "hi")

    assert completion.choices[0].message.content == "second try"
    assert len(server.requests) == 2


async def test_server_error(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.script(error(500, "The server had an error while processing your request."))

    with pytest.raises(openai.InternalServerError) as caught:
        await ask(client, "hi")

    assert caught.value.status_code == 500
    assert caught.value.type == "server_error"


async def test_required_api_key_rejects_a_wrong_key(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.required_api_key = "sk-right"

    with pytest.raises(openai.AuthenticationError) as caught:
        await ask(client, "hi")

    assert caught.value.code == "invalid_api_key"
    assert server.recorded_requests[0].rejection == "unauthorized"


@pytest.mark.parametrize(
    ("form", "code", "error_type", "message_part"),
    [
        ("openai", "context_length_exceeded", "invalid_request_error", "maximum context length"),
        ("vllm", "400", "BadRequestError", "maximum context length"),
        ("llamacpp", "400", "exceed_context_size_error", "exceeds the available context size"),
    ],
)
async def test_overflow_forms_expose_what_a_classifier_needs(
    server: FakeOpenAIServer,
    client: openai.AsyncOpenAI,
    form: str,
    code: str,
    error_type: str,
    message_part: str,
) -> None:
    server.script(overflow(form, context_tokens=4096, prompt_tokens=5000))  # type: ignore[arg-type]

    with pytest.raises(openai.BadRequestError) as caught:
        await ask(client, "hi")

    exc = caught.value
    assert exc.status_code == 400
    assert exc.code == code
    assert exc.type == error_type
    assert message_part in exc.message
    assert isinstance(exc.body, dict)
    if form == "llamacpp":
        assert exc.body["n_ctx"] == 4096
        assert exc.body["n_prompt_tokens"] == 5000
    if form == "vllm":
        assert exc.body["object"] == "error"
        assert "you requested 5000 tokens" in exc.message


async def test_max_request_chars_rejects_long_requests_before_the_script(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    short_body = {"messages": [user("short")]}
    server.max_request_chars = request_chars(short_body) + 10
    server.overflow_form = "llamacpp"
    server.script(reply("kept for later"))

    with pytest.raises(openai.BadRequestError) as caught:
        await ask(client, "a much longer message that does not fit")
    completion = await ask(client, "short")

    assert caught.value.type == "exceed_context_size_error"
    assert completion.choices[0].message.content == "kept for later"
    first, second = server.recorded_requests
    assert first.rejected and first.rejection == "context_overflow"
    assert user_texts(first.body) == ["a much longer message that does not fit"]
    assert not second.rejected


async def test_tools_count_towards_max_request_chars(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.max_request_chars = request_chars({"messages": [user("hi")]}) + 5
    tool = {"type": "function", "function": {"name": "remember", "parameters": {"type": "object"}}}

    with pytest.raises(openai.BadRequestError) as caught:
        await ask(client, "hi", tools=[tool])

    assert caught.value.code == "context_length_exceeded"


# -- waiting, timeouts, connection loss --------------------------------------------------------


async def test_delay_longer_than_client_timeout_raises_api_timeout(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(delay(30, reply("too late")), reply("on time"))

    with pytest.raises(openai.APITimeoutError):
        await ask(client, "slow", timeout=0.2)
    completion = await ask(client, "fast")

    assert completion.choices[0].message.content == "on time"
    assert user_texts(server.requests[0]) == ["slow"]
    # The first request's handler is still sleeping; stop() must wake it (it raises if not).
    await asyncio.to_thread(server.stop)


async def test_short_delay_then_answers(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(delay(0.05, tool_call("get_time", {})))

    completion = await ask(client, "time?")

    assert completion.choices[0].message.tool_calls[0].function.name == "get_time"


async def test_stop_while_a_request_hangs_returns_and_drops_the_connection() -> None:
    hanging_server = FakeOpenAIServer().start()
    hanging_server.script(hang())
    sdk = openai.AsyncOpenAI(base_url=hanging_server.base_url, api_key="test", max_retries=0)
    try:
        in_flight = asyncio.create_task(ask(sdk, "are you there?"))
        await hanging_server.wait_for_requests_async(1)

        # The wait_for bound only keeps a broken stop() from hanging the suite.
        await asyncio.wait_for(asyncio.to_thread(hanging_server.stop), timeout=10)

        with pytest.raises(openai.APIConnectionError):
            await asyncio.wait_for(in_flight, timeout=10)
    finally:
        hanging_server.stop()
        await sdk.close()


async def test_gated_request_stays_in_flight_until_released(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    release = threading.Event()
    server.script(gated(release, reply("released")))

    in_flight = asyncio.create_task(ask(client, "long job"))
    await server.wait_for_requests_async(1)
    still_waiting = not in_flight.done()
    release.set()
    completion = await in_flight

    assert still_waiting
    assert completion.choices[0].message.content == "released"


async def test_disconnect_is_a_connection_error(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(disconnect())

    with pytest.raises(openai.APIConnectionError):
        await ask(client, "hi")
    completion = await ask(client, "again")

    assert completion.choices[0].message.content == "echo: again"


def test_wait_for_requests_fails_clearly_when_nothing_arrives(server: FakeOpenAIServer) -> None:
    with pytest.raises(AssertionError, match=r"expected 1 chat requests within 0\.05s, got 0"):
        server.wait_for_requests(1, timeout=0.05)


async def test_clear_forgets_requests_but_keeps_the_script(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script(reply("one"), reply("two"))
    await ask(client, "first")

    server.clear()

    assert server.requests == []
    assert (await ask(client, "second")).choices[0].message.content == "two"
    assert len(server.requests) == 1


def test_broken_responder_surfaces_as_a_server_error(
    server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(body: dict[str, Any]) -> Any:
        raise KeyError("no such scenario")

    server.responder = broken
    sdk = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    with sdk, pytest.raises(openai.InternalServerError, match="no such scenario"):
        sdk.chat.completions.create(model=MODEL, messages=[user("hi")])
    assert "KeyError" in capsys.readouterr().err


# -- running by hand ---------------------------------------------------------------------------


def test_module_runs_as_a_program_until_interrupted() -> None:
    program = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mnemobot_tooling.fakes.openai_server",
            "--reply",
            "hi from the fake",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert program.stdout is not None
        base_url = program.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        with openai.OpenAI(base_url=base_url, api_key="t", max_retries=0) as sdk:
            completion = sdk.chat.completions.create(model=MODEL, messages=[user("hello")])
        assert completion.choices[0].message.content == "hi from the fake"

        program.send_signal(signal.SIGINT)  # what Ctrl-C does
        assert program.wait(timeout=10) == 0
    finally:
        if program.poll() is None:
            program.kill()
            program.wait()
        for stream in (program.stdout, program.stderr):
            if stream is not None:
                stream.close()
