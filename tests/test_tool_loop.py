"""The ToolLoop end to end through the real openai client and the fake server."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from mnemobot.bot.app import App, build_app
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.conversation.session import Message
from mnemobot.systems.core.tool_runner import Tool
from mnemobot.systems.model_call.repeated_calls import same_calls_streak
from mnemobot.systems.model_call.tool_limits import ToolLimits
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    error,
    hang,
    newest_context,
    reply,
    tool_call,
    tool_calls,
    tool_messages,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import CONSOLE_CHAT as CHAT
from tests.conftest import AppFactory, ask, make_settings, run_mnemobot, write_runtime_config
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below


async def test_plain_answer_round_trip(app: App, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(reply("Hello there!"))
    assert await ask(app, "hi") == "Hello there!"
    request = openai_server.last_request()
    assert user_texts(request) == ["hi"]
    assert {t["function"]["name"] for t in request["tools"]} >= {"datetime", "files"}
    session = app.sessions.get(CHAT.key)
    assert [m["role"] for m in session.messages] == ["user", "assistant"]


async def test_tool_results_go_back_to_the_model(app: App, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(tool_call("datetime", {}), reply("It is late."))
    assert await ask(app, "what time is it?") == "It is late."
    second = openai_server.requests[1]
    results = tool_messages(second)
    assert len(results) == 1
    assert "T" in results[0]["content"] and "error" not in results[0]["content"]


async def test_invalid_json_and_unknown_tools_go_back_as_tool_errors(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(
        tool_calls([tool_call("datetime", '{"timezone": '), tool_call("launch_rockets", {})]),
        reply("Sorry, my tools misbehaved."),
    )
    assert await ask(app, "go") == "Sorry, my tools misbehaved."
    results = [m["content"] for m in tool_messages(openai_server.requests[1])]
    assert results[0].startswith("error: arguments are not valid JSON")
    assert results[1].startswith("error: unknown tool 'launch_rockets'")


async def test_llm_call_limit_stops_the_turn_and_says_why(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"toolLoop": {"maxLlmCalls": 3}, "llm": {"maxRetries": 0}})
    app = build_app(make_settings(workspace, openai_server))
    openai_server.responder = lambda body: tool_call("datetime", {})
    answer = await ask(app, "loop forever")
    await app.close()
    assert len(openai_server.requests) == 3
    assert "stopped" in answer and "3 model calls" in answer and "toolLoop.maxLlmCalls" in answer


async def test_tool_execution_limit_stops_the_turn(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    two_runs = Tuning(tool_limits=ToolLimits(max_tool_executions=2))
    app = build_app(make_settings(workspace, openai_server), tuning=two_runs)
    openai_server.script(
        tool_calls(
            [tool_call("datetime", {}), tool_call("datetime", {}), tool_call("datetime", {})]
        )
    )
    answer = await ask(app, "three clocks please")
    await app.close()
    assert "reached the limit of 2 tool runs" in answer
    session = app.sessions.get(CHAT.key)
    results = [m["content"] for m in session.messages if m["role"] == "tool"]
    assert len(results) == 3 and results[2].startswith("error: not run")


async def test_model_outage_keeps_the_message_and_the_next_turn_carries_on(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(error(500, "boom"))
    answer = await ask(app, "first message")
    assert "unavailable" in answer and "kept" in answer
    openai_server.script(reply("Back again."))
    assert await ask(app, "second message") == "Back again."
    assert user_texts(openai_server.last_request()) == ["first message", "second message"]


async def test_rate_limit_is_retried_by_the_sdk(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 2}})
    app = build_app(make_settings(workspace, openai_server))
    openai_server.script(error(429, "slow down", retry_after=0), reply("Made it."))
    assert await ask(app, "hi") == "Made it."
    await app.close()
    assert len(openai_server.requests) == 2


async def test_unreachable_endpoint_without_api_key(workspace: Path) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    app = build_app(make_settings(workspace, None, openai_api_key=None))
    answer = await ask(app, "anyone there?")
    await app.close()
    assert "model is unavailable" in answer and "kept" in answer
    assert app.sessions.get(CHAT.key).messages[-1]["content"] == "anyone there?"


async def test_empty_input_is_ignored_and_huge_input_is_accepted(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    assert await app.assistant.handle_text(CHAT, "   \n\t ") is None
    assert openai_server.requests == []
    big = "word " * 20_000
    answer = await ask(app, big)
    assert answer.startswith("echo: word word")
    assert len(app.sessions.get(CHAT.key).messages[0]["content"]) == len(big.strip())


async def test_a_wrong_api_key_is_reported_as_such(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.required_api_key = "the-right-key"
    answer = await ask(app, "hello")
    # What to fix is for the operator (the log), not for whoever chats with the bot.
    assert answer.startswith("Sorry, the model is not available right now.")
    assert "OPENAI_API_KEY" not in answer and "test-key" not in answer


async def test_a_model_that_never_answers_times_out_with_a_clear_reply(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0, "requestTimeoutSeconds": 0.5}})
    app = build_app(make_settings(workspace, openai_server))
    openai_server.script(hang())
    answer = await ask(app, "are you there?")
    await app.close()
    assert "did not answer in time" in answer and "kept" in answer


class NapArguments(BaseModel):
    seconds: float


async def nap(arguments: NapArguments, ctx: object) -> str:
    await asyncio.sleep(arguments.seconds)
    return f"napped {arguments.seconds}"


async def test_a_tool_is_cut_at_its_time_limit_and_a_turn_at_its_tool_time(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(
        workspace, {"llm": {"maxRetries": 0}, "toolLoop": {"toolTimeoutSeconds": 0.5}}
    )
    one_second = Tuning(tool_limits=ToolLimits(max_tool_seconds=1))
    app = build_app(make_settings(workspace, openai_server), tuning=one_second)
    app.tools.register(Tool("nap", "Sleep a while.", NapArguments, nap))
    openai_server.script(
        tool_call("nap", {"seconds": 30}),
        tool_calls(
            [
                tool_call("nap", {"seconds": 0.1}),
                tool_call("nap", {"seconds": 30}),
                tool_call("nap", {"seconds": 0.01}),
            ]
        ),
    )
    answer = await ask(app, "rest a little")
    await app.close()
    results = [m["content"] for m in app.sessions.get(CHAT.key).messages if m["role"] == "tool"]
    assert results == [
        "error: the tool nap did not finish within 0.5 seconds and was stopped; it may have "
        "done part of its work",
        "napped 0.1",
        "error: the tool nap was stopped: the tools of this turn used up their time; it may "
        "have done part of its work",
        "error: not run, the tool time limit of this turn was reached",
    ]
    assert "took the 1 second one turn may spend on them" in answer
    assert answer.startswith("I stopped before finishing")


async def test_a_tool_that_keeps_failing_is_taken_away_and_the_answer_says_why(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    # A small local model that cannot get a tool's arguments right calls it again and
    # again: after three failures it answers without tools, and the user reads why the
    # tool did nothing (not after every model call the turn may make).
    openai_server.responder = lambda body: (
        tool_call("schedule", {"when": "soon-ish"})
        if body.get("tools")
        else reply("Sorry, I could not set that.")
    )
    answer = await ask(app, "remind me in 2 minutes to stretch")
    requests = openai_server.requests
    assert len(requests) == 4 and all(r.get("tools") for r in requests[:3])
    assert not requests[3].get("tools")
    assert answer.startswith("Sorry, I could not set that.")
    assert "(I could not use the schedule tool: " in answer
    results = [m["content"] for m in app.sessions.get(CHAT.key).messages if m["role"] == "tool"]
    assert len(results) == 3 and all(r.startswith("error:") for r in results)
    # The next turn has its tools again, and a success in between starts the count anew.
    openai_server.responder = None
    openai_server.script(
        tool_call("datetime", '{"x": '),
        tool_call("datetime", '{"x": '),
        tool_call("datetime", {}),
        tool_call("datetime", '{"x": '),
        tool_call("datetime", '{"x": '),
        reply("It is late."),
    )
    assert await ask(app, "what time is it?") == "It is late."
    assert all(r.get("tools") for r in openai_server.requests[4:])


async def test_a_model_calling_the_same_tool_again_and_again_answers_with_what_it_has(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    # Live, a small model called the clock tool with `{}` until the 20-call limit (eight
    # minutes on a home server) and the user read only that the turn stopped. The calls
    # succeed, so the failing-tool rule never ended it.
    openai_server.responder = lambda body: (
        tool_call("datetime", {}) if body.get("tools") else reply("It is a quarter past nine.")
    )
    answer = await ask(app, "what time is it?")
    requests = openai_server.requests
    assert len(requests) == 5 and all(r.get("tools") for r in requests[:4])
    assert not requests[4].get("tools")
    assert answer == "It is a quarter past nine."
    # Different arguments each time are not a circle: the tools stay.
    openai_server.responder = None
    openai_server.script(
        *(
            tool_call("datetime", {"timezone": zone})
            for zone in ("UTC", "Europe/Riga", "Asia/Tokyo", "America/Lima", "Africa/Cairo")
        ),
        reply("Five clocks."),
    )
    assert await ask(app, "what time is it around the world?") == "Five clocks."
    assert all(r.get("tools") for r in openai_server.requests[5:])


async def test_calls_made_together_that_fail_count_once(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    # "What is in a.txt, b.txt and c.txt?": three reads at once, none of the files exists.
    # That is one failed step of the model, which answers with what it learned.
    openai_server.script(
        tool_calls(
            [tool_call("files", {"operation": "read", "path": f"{name}.txt"}) for name in "abc"]
        ),
        reply("None of those files exist."),
    )
    assert await ask(app, "what is in a.txt, b.txt and c.txt?") == "None of those files exist."
    results = [m["content"] for m in tool_messages(openai_server.requests[1])]
    assert len(results) == 3 and all(r.startswith("error:") for r in results)


async def test_a_russian_user_reads_why_the_tool_loop_stopped_in_russian(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # The lines the loop writes itself (it stopped at a limit, a tool kept failing) are in
    # the reader's language, as /status is; the tool's own error stays as it said it.
    await start_bot(runtime={"toolLoop": {"maxLlmCalls": 3}, "llm": {"maxRetries": 0}})
    openai_server.responder = lambda body: tool_call("schedule", {"when": "in 2 minutes"})
    telegram.send_text("напомни через 2 минуты размяться", chat_id=31, language_code="ru")
    [answer] = await telegram.wait_for_messages_async(31, 1)
    text = answer["plain_text"]
    assert text.startswith(
        "Я остановился, не закончив, потому что достигнут предел в 3 вызова модели "
        "(toolLoop.maxLlmCalls). Попросите меня продолжить, если нужно."
    ), text
    assert "(Мне не удалось воспользоваться инструментом schedule: give text: " in text
    assert "I stopped" not in text and "I could not use" not in text

    # Someone whose Telegram is in English reads the same lines in English.
    telegram.send_text("remind me in 2 minutes to stretch", chat_id=32, language_code="en")
    [english] = await telegram.wait_for_messages_async(32, 1)
    assert english["plain_text"].startswith(
        "I stopped before finishing because it reached the limit of 3 model calls"
    )
    assert "(I could not use the schedule tool: give text: " in english["plain_text"]


async def test_a_tool_called_with_bad_arguments_leaves_no_lesson_and_no_stop_note_in_memory(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # A small model calls `schedule` without the text of the reminder until the turn's
    # model calls run out. Its errors are the bot's trouble, and "I stopped before
    # finishing" the bot's own line: neither is the user's memory, nor a how-to for later.
    # The failure the user reported in the same turn is theirs, and is kept.
    app = make_app({"toolLoop": {"maxLlmCalls": 3}})
    openai_server.responder = lambda body: tool_call("schedule", {"when": "in 2 minutes"})
    answer = await ask(
        app,
        "pytest fails with ImportError: No module named 'numpy'. Remind me in 2 minutes to fix it.",
    )
    assert answer.startswith("I stopped before finishing")
    assert "give text: what to say or do at that time" in answer

    await app.close()

    # The next turn, a small model repeating the error it was told (tools taken away).
    app = make_app({})
    echoed = "Sorry: error: give text: what to say or do at that time."
    openai_server.responder = lambda body: (
        tool_call("schedule", {"when": "in 5 minutes"}) if body.get("tools") else reply(echoed)
    )
    assert (await ask(app, "remind me in 5 minutes to stretch")).startswith(echoed)
    openai_server.responder = None

    def search(query: str) -> str:
        result = run_mnemobot(
            "memory", "search", query, "--chat", CHAT.key, BOT_WORKSPACE=str(workspace)
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    # The episode of the second turn holds what the model answered, as the user read it;
    # no item holds the error as a failure, nor the stop line at all.
    found = search("give text what to say or do at that time schedule").splitlines()
    assert not [line for line in found if "give text" in line and "failure" in line]
    assert "stopped before finishing" not in search("stopped before finishing limit calls")
    assert "Remind me in 2 minutes to fix it" in search("remind me to fix pytest numpy")
    procedural = (workspace / "memory" / CHAT.key / "items" / "procedural.jsonl").read_text()
    assert "give text" not in procedural
    assert "ImportError: No module named 'numpy'" in procedural

    # Nor does the next conversation's recall bring them back.
    await app.commands.run(CHAT, ParsedCommand("new", ""))
    openai_server.script(reply("You asked me to remind you to stretch."))
    await ask(app, "what did I ask you to remind me about? the schedule text limit")
    recalled = newest_context(openai_server.last_request())
    assert "stretch" in recalled and "stopped before finishing" not in recalled
    assert not [line for line in recalled.splitlines() if "give text" in line and "ailure" in line]


@given(st.integers(0, 6), st.integers(0, 3), st.sampled_from(["{}", '{"a": 1}']))
def test_the_same_calls_streak_counts_back_to_the_first_other_call(
    same: int, before: int, arguments: str
) -> None:
    def answer(args: str) -> Message:
        call = {"id": "c", "type": "function", "function": {"name": "datetime", "arguments": args}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    result: Message = {"role": "tool", "tool_call_id": "c", "content": "ok"}
    messages: list[Message] = [{"role": "user", "content": "hi"}]
    for _ in range(before):
        messages += [answer('{"other": true}'), result]
    for _ in range(same):
        messages += [answer(arguments), result]
    expected = same if same else (before if before else 0)
    assert same_calls_streak(messages) == expected
    # A new turn starts the count anew.
    assert same_calls_streak([*messages, {"role": "user", "content": "again"}]) == 0
