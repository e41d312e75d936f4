"""A model server that drops tools silently (llama-cpp-python) is found out and named.

llama-cpp-python's server answers a request with tools as one without unless it runs a
function-calling chat format, and with `--chat_format chatml-function-calling` it still
drops them from a request that does not say `tool_choice`. The fake server does both
(`tools_dropped`); the bot, doctor and `run` talk to it through the real openai client.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mnemobot.bot.app import build_app
from mnemobot.bot.cli.doctor import run_checks
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.bot.llm.tool_support import TEST_TOOL_NAME
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.model.vision import ModelVisionStore
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    error,
    gated,
    reply,
    system_text,
    tool_call,
    tool_messages,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import (
    CONSOLE_CHAT,
    LogLines,
    ask,
    make_settings,
    start_run,
    write_runtime_config,
)
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below


@pytest.fixture(autouse=True)
def checks_reach_the_model(openai_server: FakeOpenAIServer) -> None:
    """These tests are of the check itself: the fake model answers it as a server would."""
    openai_server.answers_tool_checks = False


def tools_check(server: FakeOpenAIServer, workspace: Path) -> str:
    results = asyncio.run(run_checks(make_settings(workspace, server), lambda line: None))
    [check] = [r for r in results if r.name == "tools"]
    return check.line()


def reminding_model(request: dict[str, object]) -> Step:
    """A model that sets the reminder when it has the tool, and talks when it has none."""
    if tool_messages(request):
        return reply("Done: I will remind you.")
    if request.get("tools"):
        return tool_call("schedule", {"when": "in 2 minutes", "text": "stretch"})
    return reply("Sure, I will remind you to stretch!")


@pytest.mark.parametrize(
    ("dropped", "line"),
    [
        ("never", "ok   tools: the server passes tools to gpt-4o-mini: it called the test tool"),
        # The flag docs/local-models.md names: tool_choice "auto" makes it pass them.
        (
            "without_tool_choice",
            "ok   tools: the server passes tools to gpt-4o-mini: it called the test tool",
        ),
    ],
)
def test_doctor_says_the_server_passes_tools(
    workspace: Path, openai_server: FakeOpenAIServer, dropped: str, line: str
) -> None:
    openai_server.tools_dropped = dropped  # type: ignore[assignment]
    assert tools_check(openai_server, workspace) == line
    [asked] = [r for r in openai_server.requests if r.get("tools")]
    assert asked["tool_choice"] == "auto"


def test_doctor_does_not_blame_the_server_when_the_model_answers_nothing(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # llama-cpp-python with chatml-function-calling and a very small model: an empty
    # answer to the check. Asked again without tool_choice, that server would drop the
    # tool, and the check took it for a server that drops tools (the flag it already has).
    openai_server.tools_dropped = "without_tool_choice"
    openai_server.responder = lambda body: reply("" if body.get("tools") else "ok")
    line = tools_check(openai_server, workspace)
    assert line.startswith("WARN tools: the server passes tools to gpt-4o-mini (")
    assert "it answered nothing when told to call it" in line


def test_doctor_warns_of_a_server_that_drops_tools_and_names_the_fix(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tools_dropped = "always"
    line = tools_check(openai_server, workspace)
    assert line.startswith("WARN tools: the server drops tools: a request with the test tool")
    assert "reminders and the memory tool cannot work" in line
    assert "--chat_format chatml-function-calling (docs/local-models.md)" in line
    # Two short requests, nothing more.
    assert [r["max_tokens"] for r in openai_server.requests] == [32, 1]


def test_doctor_says_what_it_cannot_tell_and_what_the_server_refuses(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # The model gets the tool (the prompt is longer with it) but answers in text.
    openai_server.responder = lambda body: reply("I am ready!")
    line = tools_check(openai_server, workspace)
    assert line.startswith("WARN tools: the server passes tools to gpt-4o-mini (")
    assert "a model this small may not use its tools" in line
    # Ollama with a model whose template has no tools.
    openai_server.responder = lambda body: error(
        400, "registry.ollama.ai/library/gemma:2b does not support tools"
    )
    line = tools_check(openai_server, workspace)
    assert line.startswith(
        "WARN tools: the server refuses a request with tools (registry.ollama.ai/library/"
        "gemma:2b does not support tools)"
    )


async def test_remind_me_sets_a_reminder_on_llama_cpp_python_with_function_calling(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """`--chat_format chatml-function-calling` drops the tools of a request that does not
    say `tool_choice`: "remind me" got a friendly promise and no reminder. And its server
    refuses the tool call sent back with `content: null` (measured, llama-cpp-python
    0.3.36)."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    openai_server.tools_dropped = "without_tool_choice"
    # Nor does it take the tool call back with a null content: the turn failed, HTTP 500.
    openai_server.null_content_refused = True
    openai_server.responder = reminding_model
    app = build_app(make_settings(workspace, openai_server))
    try:
        answer = await ask(app, "remind me in 2 minutes to stretch")
        listing = await app.commands.run(CONSOLE_CHAT, ParsedCommand("reminders", ""))
    finally:
        await app.close()
    assert answer.startswith("Done: I will remind you.")
    assert "Reminder #1 set for" in answer
    assert "stretch" in listing and "Nothing is scheduled" not in listing


async def test_a_server_that_refuses_tool_choice_gets_requests_without_it(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """vLLM started without --enable-auto-tool-choice refuses it: the turn still goes."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})

    def vllm(body: dict[str, object]) -> Step:
        if "tool_choice" in body:
            return error(
                400,
                '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                "to be set",
            )
        return reply("Hello!")

    openai_server.responder = vllm
    app = build_app(make_settings(workspace, openai_server))
    try:
        assert await ask(app, "hi") == "Hello!"
        assert await ask(app, "hi again") == "Hello!"
    finally:
        await app.close()
    sent = [("tool_choice" in body) for body in openai_server.requests]
    assert sent == [True, False, False]


async def test_a_model_that_answers_nothing_when_it_may_call_tools_is_asked_again_without(
    workspace: Path, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-cpp-python's chatml-function-calling with tool_choice "auto" let SmolLM2 answer
    an empty message on every turn that called no tool (measured live): the user got
    "(the model returned an empty answer)" to "hi". Asked again without tool_choice, the
    server answers; after three such turns the bot stops saying it and logs why once."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})

    def small_model(body: dict[str, object]) -> Step:
        return reply("" if "tool_choice" in body else "Hello!")

    openai_server.responder = small_model
    app = build_app(make_settings(workspace, openai_server))
    try:
        answers = [await ask(app, f"hi {n}") for n in range(4)]
    finally:
        await app.close()
    assert answers == ["Hello!"] * 4
    sent = [("tool_choice" in body) for body in openai_server.requests]
    assert sent == [True, False, True, False, True, False, False]
    warnings = [r for r in caplog.records if "answered nothing 3 times" in r.getMessage()]
    assert len(warnings) == 1


@contextlib.contextmanager
def running_bot(
    workspace: Path, openai_server: FakeOpenAIServer, telegram_server: TelegramServer | None = None
) -> Iterator[tuple[TelegramServer, LogLines]]:
    """`mnemobot run` against the fake Bot API (`telegram_server`, else a new one: a bot
    restarted on its workspace takes a new one's updates for those it has had) and model
    server, stopped by SIGTERM (its log read until it ends)."""
    with contextlib.ExitStack() as stack:
        telegram = telegram_server or stack.enter_context(TelegramServer())
        bot = start_run(
            workspace,
            stdout=subprocess.DEVNULL,
            OPENAI_BASE_URL=openai_server.base_url,
            TELEGRAM_BOT_TOKEN=telegram.token,
            TELEGRAM_API_BASE_URL=telegram.base_url,
            TELEGRAM_ALLOWED_USERS="*",
        )
        log = LogLines(bot)
        try:
            yield telegram, log
        finally:
            bot.send_signal(signal.SIGTERM)
            bot.wait(timeout=30)
            log.join()


def test_run_logs_one_line_when_the_home_server_drops_tools(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tools_dropped = "always"
    with running_bot(workspace, openai_server) as (_telegram, log):
        lines = log.lines
        log.wait_for(" tools: ", 60)
    said = [line for line in lines if " tools: " in line]
    assert len(said) == 1, "".join(lines)
    assert "WARNING mnemobot.bot.llm.tool_support: tools: the server drops tools" in said[0]
    # Asked once: the test tool, then the same without it.
    assert [bool(r.get("tools")) for r in openai_server.requests] == [True, False]


def test_a_server_that_refuses_requests_with_tools_still_answers_every_turn(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Ollama with a model whose template has no tools answers a request with tools with
    a 400: every turn failed with an error line. Found at start, tools are then off."""
    refusal = "registry.ollama.ai/library/gemma:2b does not support tools"
    openai_server.responder = lambda body: (
        error(400, refusal) if body.get("tools") else reply("Hello from gemma.")
    )
    with running_bot(workspace, openai_server) as (telegram, log):
        assert log.wait_for(" tools: ", 60), "".join(log.lines)
        telegram.send_text("hi there", chat_id=41)
        [answer] = telegram.wait_for_messages(41, 1, timeout=30)
        telegram.send_text("/status", chat_id=41)
        status = telegram.wait_for_messages(41, 2, timeout=30)[-1]["plain_text"]
    assert answer["plain_text"] == "Hello from gemma."
    assert "Tools: off" in status, status
    said = [line for line in log.lines if " tools: " in line]
    assert "the server refuses a request with tools" in said[0]
    assert "until the bot is restarted, it offers the model no tools" in said[0]
    [turn] = [r for r in openai_server.requests if "hi there" in str(r["messages"])]
    assert "tools" not in turn


def test_status_says_the_tools_are_being_checked_until_the_server_answers(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Found live: in the first seconds /status said "7 of 7 offered", then "off"."""
    release = threading.Event()
    openai_server.script(gated(release, reply("I am ready!")))
    with running_bot(workspace, openai_server) as (telegram, log):
        try:
            openai_server.wait_for_requests(1, timeout=60)  # the check, held
            telegram.send_text("/status", chat_id=41)
            [early] = telegram.wait_for_messages(41, 1, timeout=30)
            release.set()
            assert log.wait_for(" tools: ", 60), "".join(log.lines)
            telegram.send_text("/status", chat_id=41)
            later = telegram.wait_for_messages(41, 2, timeout=30)[-1]
        finally:
            release.set()
    assert "(checking whether the model server passes them)" in early["plain_text"]
    assert "Tools: " in later["plain_text"] and "checking" not in later["plain_text"]


GROUP = -3001
MEMBER = 31


def test_status_says_tools_are_off_when_the_home_server_drops_them(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Found live: /status said "Tools: 7 of 7 offered" beside the log's "the server drops
    tools". The bot now offers none, says so in the reader's language, and a turn's
    request carries no tools the model would be told of and could not call."""
    openai_server.tools_dropped = "always"
    with running_bot(workspace, openai_server) as (telegram, log):
        assert log.wait_for(" tools: ", 60), "".join(log.lines)
        telegram.send_text("/status", chat_id=41)
        telegram.send_text("/status", chat_id=42, language_code="ru")
        telegram.send_text("remind me in 2 minutes to stretch", chat_id=41)
        telegram.send_text("/tools", chat_id=41)
        telegram.send_text("/reminders", chat_id=41)
        english = telegram.wait_for_messages(41, 4, timeout=30)
        russian = telegram.wait_for_messages(42, 1, timeout=30)
    [status] = [m["plain_text"] for m in english if m["plain_text"].startswith("Model: ")]
    assert (
        "Tools: off, the model server drops them (reminders and the memory tool do not work)"
        in status
    ), status
    assert "offered" not in status
    # /tools and /reminders name the server, not the context window, as the reason.
    texts = [message["plain_text"] for message in english]
    [tools] = [text for text in texts if text.startswith("Tools I can use")]
    [reminders] = [text for text in texts if text.startswith("Nothing is scheduled")]
    assert tools.endswith(
        "- none: the model server drops them (reminders and the memory tool do not work)"
    ), tools
    assert "the model server drops tools, so reminders cannot be set" in reminders, reminders
    assert "context window" not in tools + reminders
    assert "Инструменты: выключены, сервер модели их отбрасывает" in russian[0]["plain_text"]
    [turn] = [r for r in openai_server.requests if "stretch" in str(r["messages"])]
    assert "tools" not in turn and "tool_choice" not in turn
    said = [line for line in log.lines if " tools: " in line]
    assert "until the bot is restarted, it offers the model no tools" in said[0]


async def test_a_group_member_is_not_told_of_memory_rights_when_the_server_drops_tools(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """A member who may not erase the group's memory is told so beside their message
    (SpeakerRights), about tools the model calls. With a server that drops tools no tool
    is offered, and the line only cost prompt tokens; it is left out on every turn."""
    openai_server.tools_dropped = "always"
    running = await start_bot(allowed="*")
    app, llm = running.app, running.app.llm
    assert isinstance(llm, OpenAIChatModel)
    model = app.assistant.model_name(app.runtime.current())
    # What `mnemobot run` does at start for a server on this machine.
    llm.start_tool_check(model)
    await until(lambda: llm.drops_tools(model))
    for n in range(2):
        telegram.send_text(
            f"@mnemo_test_bot note {n}", chat_id=GROUP, user_id=MEMBER, chat_type="group"
        )
        await telegram.wait_for_messages_async(GROUP, n + 1, timeout=15)
    turns = [r for r in openai_server.requests if "note" in str(r["messages"])]
    assert len(turns) == 2
    for turn in turns:
        assert "tools" not in turn
        assert "may not" not in user_texts(turn)[-1], user_texts(turn)[-1]


async def started_on_a_server_that_drops_tools(
    start_bot: StartBot, openai_server: FakeOpenAIServer, answer: str
) -> None:
    """The bot on a server that drops every request's tools and always says `answer`,
    once its check of the tools has found so."""
    openai_server.tools_dropped = "always"
    openai_server.responder = lambda body: reply(answer)
    running = await start_bot()
    app, llm = running.app, running.app.llm
    assert isinstance(llm, OpenAIChatModel)
    llm.start_tool_check(app.assistant.model_name(app.runtime.current()))
    await until(lambda: llm.drops_tools(app.assistant.model_name(app.runtime.current())))


async def test_a_reminder_asked_for_on_a_server_that_drops_tools_is_said_not_set(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """Found live: "Remind me in 5 minutes to call mom" got the model's "Sure, I will
    remind you!" alone, and no reminder ever came. The reply now says none was set, and
    what the operator can do, in the asker's language; a question about what was said
    gets no such line."""
    await started_on_a_server_that_drops_tools(start_bot, openai_server, "Sure, I will remind you!")
    asks = {
        51: ("en", "Remind me in 5 minutes to call mom", "⚠️ No reminder was set"),
        52: ("ru", "Напомни через 5 минут позвонить маме", "⚠️ Напоминание не установлено"),
        53: ("de", "Erinnere mich in 5 Minuten, Mama anzurufen", "⚠️ Keine Erinnerung gesetzt"),
        54: ("es", "Recuérdame en 5 minutos llamar a mamá", "⚠️ No se creó ningún recordatorio"),
        55: ("zh-hans", "5分钟后提醒我给妈妈打电话", "⚠️ 未设置提醒"),
    }
    for chat, (language, text, _) in asks.items():
        telegram.send_text(text, chat_id=chat, language_code=language)
    telegram.send_text("remind me what we said", chat_id=56)
    for chat, (_, _, note) in asks.items():
        [answer] = await telegram.wait_for_messages_async(chat, 1)
        said = answer["plain_text"]
        assert said.startswith("Sure, I will remind you!\n\n" + note), said
        assert "--chat_format chatml-function-calling" in said and "--jinja" in said
    [answer] = await telegram.wait_for_messages_async(56, 1)
    assert answer["plain_text"] == "Sure, I will remind you!"


async def until(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not so after {timeout} s"
        await asyncio.sleep(0.02)


def test_a_restarted_bot_keeps_the_last_verdict_on_tools_until_it_checks_again(
    workspace: Path, openai_server: FakeOpenAIServer, telegram: TelegramServer
) -> None:
    """Found live: after every restart the first turn carried tools and the tools sentence
    again until the check ended, and the next turn's prompt lost them: a home server that
    caches only an unchanged prefix evaluated the whole prompt once more. The last verdict
    is kept, and a server restarted with tools still gets them back at the next start."""
    # Turns do not wait behind the check held below (one slot would make them).
    write_runtime_config(workspace, {"llm": {"serverSlots": 0}})
    release = threading.Event()
    release.set()

    def model(body: dict[str, object]) -> Step:
        if TEST_TOOL_NAME in system_text(body):  # the start-up check
            return gated(release, reply("I am ready!"))
        return reply("Hello!")

    openai_server.responder = model
    openai_server.tools_dropped = "always"

    turns = 0

    def turn(text: str) -> dict[str, object]:
        nonlocal turns
        turns += 1
        telegram.send_text(text, chat_id=41)
        telegram.wait_for_messages(41, turns, timeout=30)
        [sent] = [r for r in openai_server.requests if text in user_texts(r)[-1:]]
        return sent

    with running_bot(workspace, openai_server, telegram) as (_telegram, log):
        assert log.wait_for(" tools: ", 60), "".join(log.lines)
        last = turn("first run")
    release.clear()  # the next start's check is answered only after its first turn
    try:
        with running_bot(workspace, openai_server, telegram) as (_telegram, log):
            first = turn("second run")
            assert not [line for line in log.lines if " tools: " in line]
            release.set()
            assert log.wait_for(" tools: ", 60), "".join(log.lines)
    finally:
        release.set()
    assert "tools" not in last
    assert "tools" not in first
    assert system_text(first) == system_text(last)
    # The server now runs a function-calling chat format: the check at start gives the
    # tools back.
    openai_server.tools_dropped = "never"
    with running_bot(workspace, openai_server, telegram) as (_telegram, log):
        assert log.wait_for(" tools: ", 60), "".join(log.lines)
        again = turn("third run")
    assert again.get("tools")


async def test_a_kept_verdict_that_no_check_renews_leaves_the_tools_offered(
    tmp_path: Path,
) -> None:
    # A server once found to drop tools, since restarted with a function-calling format,
    # that is not up yet when the bot starts: the check gets no answer, and keeping the old
    # verdict would leave tools off for the whole run.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    vision = ModelVisionStore(tmp_path / "model-vision.json")
    vision.remember_tools_verdict(base_url, "home-model", "drops")
    vision.remember_tools_verdict(base_url, "other-model", "drops")
    llm = OpenAIChatModel(base_url=base_url, api_key="none", max_retries=0, vision=vision)
    try:
        llm.start_tool_check("home-model")
        # While the check runs, the last run's verdict holds (the prompt the last run ended
        # with).
        assert llm.checking_tools() and llm.drops_tools("home-model")
        await until(lambda: not llm.checking_tools())
        assert not llm.drops_tools("home-model")
        # A model the check did not ask about is offered its tools too.
        assert not llm.drops_tools("other-model")
    finally:
        await llm.close()


async def test_a_request_to_forget_on_a_server_that_drops_tools_is_said_not_done(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """Found live (llama-cpp-python, SmolLM2): "Forget my locker code." got the model's
    "I don't have a locker code." alone, and the next turn's memory sent the code to the
    model again. The reply now says nothing was forgotten and what can be done, in the
    asker's language; "don't forget to..." gets no such line."""
    await started_on_a_server_that_drops_tools(start_bot, openai_server, "Done, it is forgotten.")
    asks = {
        61: ("en", "Forget my locker code.", "⚠️ Nothing was forgotten"),
        62: ("ru", "Забудь код от моего шкафчика.", "⚠️ Ничего не забыто"),
        63: ("de", "Vergiss meine PIN.", "⚠️ Nichts wurde vergessen"),
        64: ("es", "Olvida mi dirección, por favor.", "⚠️ No se olvidó nada"),
        65: ("zh-hans", "请忘掉我的密码", "⚠️ 没有忘记任何内容"),
    }
    for chat, (language, text, _) in asks.items():
        telegram.send_text(text, chat_id=chat, language_code=language)
    telegram.send_text("Don't forget to call mom", chat_id=66)
    for chat, (_, _, note) in asks.items():
        [answer] = await telegram.wait_for_messages_async(chat, 1)
        said = answer["plain_text"]
        assert said.startswith("Done, it is forgotten.\n\n" + note), said
        assert "mnemobot web" in said and "--chat_format chatml-function-calling" in said
    [answer] = await telegram.wait_for_messages_async(66, 1)
    assert answer["plain_text"] == "Done, it is forgotten."
