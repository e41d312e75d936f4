"""A tool's effect happens at most once per request, across SIGKILLs of `mnemobot run`.

Each start is a real `mnemobot run` process against the fake Bot API and model. The model
asks for a tool call; the tool runs; the model's next request (the one that carries the
tool's result) is held by the fake model server, and the test kills the bot right then
(SIGKILL): the tool has run, the turn's reply is not stored, the user's message is still
in the inbox. The next start hands the message over again.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mnemobot.bot.app import build_app
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    gated,
    hang,
    reply,
    tool_call,
    tool_messages,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import CONSOLE_CHAT, make_settings, subprocess_env, write_runtime_config
from tests.mcp_harness import calls_logged, stdio_server
from tests.replicas_harness import (
    FAST_LEASES,
    post_until_taken,
    redis_url,
    spawn_replica,
    stop_all,
    wait_until,
)
from tests.telegram_harness import telegram

__all__ = ["redis_url", "telegram"]  # fixtures used by name below

CHAT = 901
REMIND = tool_call("schedule", {"when": "in 3 hours", "text": "call the dentist"})

# `python -c "<this>"`: `mnemobot run` that SIGKILLs itself right after the schedule tool
# has stored its task, before the call's result is on record: the worst instant.
RUN_DYING_AFTER_SCHEDULING = """
import os, signal, sys
from mnemobot.bot.schedule.tool import ScheduleTool
schedule = ScheduleTool.handle
async def schedule_then_die(self, arguments, ctx):
    await schedule(self, arguments, ctx)
    os.kill(os.getpid(), signal.SIGKILL)
ScheduleTool.handle = schedule_then_die
from mnemobot.bot.cli.main import main
sys.exit(main(["run"]))
"""


# Every `mnemobot run` a test started: one a failed test leaves running is killed after it.
_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def no_bot_left() -> Iterator[None]:
    yield
    while _started:
        bot = _started.pop()
        if bot.poll() is None:
            bot.kill()
            bot.wait(timeout=30)


def start(
    workspace: Path,
    telegram: TelegramServer,
    llm: FakeOpenAIServer,
    runtime: dict[str, Any] | None = None,
    script: str | None = None,
) -> subprocess.Popen[str]:
    if runtime is not None:
        preferences = workspace / "preferences"
        preferences.mkdir(exist_ok=True)
        (preferences / "runtime-config.json").write_text(json.dumps(runtime))
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=llm.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS=str(CHAT),
        BOT_LOG_LEVEL="WARNING",
    )
    command = ["-c", script] if script is not None else ["-m", "mnemobot", "run"]
    bot = subprocess.Popen(
        [sys.executable, *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workspace.parent,
    )
    _started.append(bot)
    return bot


def after_tool(request: dict[str, Any]) -> bool:
    """The model is asked to go on after a tool ran (the request ends with its result)."""
    messages = request.get("messages") or []
    return bool(messages) and messages[-1].get("role") == "tool"


class ToolThenAnswer:
    """The fake model: a message gets `call` (once `ready` is set: the tool is there); once a
    tool ran, the answer `answer`, or, while `holding`, no answer at all (the request waits
    until the test has killed the bot)."""

    def __init__(self, call: Step, answer: str) -> None:
        self.call = call
        self.answer = answer
        self.holding = True
        self.ready = threading.Event()
        self.ready.set()

    def __call__(self, request: dict[str, Any]) -> Step:
        if after_tool(request):
            return hang() if self.holding else reply(self.answer)
        return gated(self.ready, self.call)


def kill_when(
    bot: subprocess.Popen[str], condition: Callable[[], bool], timeout: float = 90
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert bot.poll() is None, bot.stderr.read() if bot.stderr else ""
        assert time.monotonic() < deadline, "the bot never got there"
        time.sleep(0.02)
    bot.send_signal(signal.SIGKILL)
    bot.wait(timeout=10)


def held_requests(llm: FakeOpenAIServer) -> int:
    return sum(1 for request in llm.requests if after_tool(request))


def stop(bot: subprocess.Popen[str]) -> None:
    bot.send_signal(signal.SIGTERM)
    _, err = bot.communicate(timeout=30)
    assert bot.returncode == 0, err


def wait_for_text(telegram: TelegramServer, needle: str, timeout: float = 90) -> list[str]:
    """The texts of the chat (as edited last) once one holds `needle`."""
    deadline = time.monotonic() + timeout
    while True:
        texts = [m["plain_text"] for m in telegram.sent_messages(CHAT) if not m["deleted"]]
        if any(needle in text for text in texts):
            return texts
        assert time.monotonic() < deadline, texts
        time.sleep(0.05)


def reminders_listed(telegram: TelegramServer) -> str:
    """What /reminders answered."""
    heading = "Scheduled in this chat:"
    return next(text for text in wait_for_text(telegram, heading) if heading in text)


def wait_for_tool(telegram: TelegramServer, name: str, timeout: float = 90) -> None:
    """Until /tools lists `name` (an MCP server's tools come once it has started)."""
    deadline = time.monotonic() + timeout
    while True:
        asked = len(telegram.sent_messages(CHAT))
        telegram.send_text("/tools", chat_id=CHAT)
        answer = telegram.wait_for_messages(CHAT, asked + 1, timeout=timeout)[asked:]
        if any(name in message["plain_text"] for message in answer):
            return
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)


@pytest.mark.slow
def test_a_reminder_asked_once_is_set_once_across_three_kills_after_the_tool_ran(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    model = ToolThenAnswer(REMIND, "Will do.")
    openai_server.responder = model
    bot = start(workspace, telegram, openai_server)
    telegram.send_text("remind me in 3 hours to call the dentist", chat_id=CHAT)
    for kills in range(1, 4):
        # The schedule tool ran; the model is asked to go on with its result: killed then.
        kill_when(bot, lambda kills=kills: held_requests(openai_server) == kills)
        bot = start(workspace, telegram, openai_server)
    model.holding = False
    try:
        # The answer streams in first; the confirmation comes with the reply itself.
        texts = wait_for_text(telegram, "✅ Reminder")
        confirmations = [text for text in texts if "✅ Reminder" in text]
        # One confirmation, of the one reminder: the one the user asked for.
        assert len(confirmations) == 1, texts
        assert "✅ Reminder #1 set for" in confirmations[0], confirmations
        assert confirmations[0].startswith("Will do.")
        assert "call the dentist" in confirmations[0]
        telegram.send_text("/reminders", chat_id=CHAT)
        listing = reminders_listed(telegram)
    finally:
        stop(bot)
    assert listing.count("call the dentist") == 1, listing
    assert "#2" not in listing
    # Each start went on from the call on record: the model was never asked to call again.
    calls = [r for r in openai_server.requests if not after_tool(r)]
    assert len(calls) == 1


@pytest.mark.slow
def test_an_mcp_tool_is_called_once_across_a_kill_even_when_newer_messages_join_the_turn(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "mcp-calls.log"
    runtime = {"mcp": {"servers": {"mail": stdio_server(log)}}}
    model = ToolThenAnswer(
        tool_call("mcp_mail_send_mail", {"to": "ana@example.com", "subject": "Hi"}),
        "Sent, and you are welcome.",
    )
    openai_server.responder = model
    bot = start(workspace, telegram, openai_server, runtime)
    wait_for_tool(telegram, "mcp_mail_send_mail")
    telegram.send_text("mail Ana to say hi", chat_id=CHAT)
    openai_server.wait_for_requests(2, timeout=30)
    assert calls_logged(log) == ["send_mail ana@example.com Hi"]
    # Sent while the bot waits on the model: kept in its inbox (Telegram was told it has
    # it), it is handed over again with the first message after the restart.
    telegram.send_text("thanks!", chat_id=CHAT)
    kill_when(bot, lambda: not telegram.pending_updates())
    model.holding = False
    # Were the call asked for again, it would reach the server: the model asks for it only
    # once the server's tools are there.
    model.ready.clear()
    bot = start(workspace, telegram, openai_server, runtime)
    wait_for_tool(telegram, "mcp_mail_send_mail")
    model.ready.set()
    try:
        wait_for_text(telegram, "Sent, and you are welcome.")
    finally:
        stop(bot)
    assert calls_logged(log) == ["send_mail ana@example.com Hi"]
    # The model read the call as done, both messages once, and was not asked to call again.
    last = openai_server.requests[-1]["messages"]
    users = user_texts(openai_server.requests[-1])
    # The backlog of a sender is one turn: the cut-short turn, now with "thanks!" too.
    assert users == ["mail Ana to say hi\n\nthanks!"], users
    assert [m["content"] for m in last if m["role"] == "tool"] == ["sent to ana@example.com"]
    assert len([r for r in openai_server.requests if not after_tool(r)]) == 1


@pytest.mark.slow
def test_a_kill_between_a_tools_effect_and_its_record_never_runs_it_again(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    model = ToolThenAnswer(REMIND, "I could not tell whether that worked; see /reminders.")
    model.holding = False
    openai_server.responder = model
    bot = start(workspace, telegram, openai_server, script=RUN_DYING_AFTER_SCHEDULING)
    telegram.send_text("remind me in 3 hours to call the dentist", chat_id=CHAT)
    bot.wait(timeout=60)
    assert bot.returncode == -signal.SIGKILL
    bot = start(workspace, telegram, openai_server)
    try:
        wait_for_text(telegram, "see /reminders")
        telegram.send_text("/reminders", chat_id=CHAT)
        listing = reminders_listed(telegram)
    finally:
        stop(bot)
    assert listing.count("call the dentist") == 1, listing
    # The model was told the call was cut off, and was not asked for it again.
    [result] = [m for m in openai_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert result["content"].startswith("error: this call was cut off"), result
    assert len([r for r in openai_server.requests if not after_tool(r)]) == 1


async def test_a_tool_call_that_cannot_be_put_on_record_is_not_run(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    app = build_app(make_settings(workspace, openai_server))
    ready = threading.Event()
    openai_server.script(gated(ready, REMIND), reply("Sorry, I could not do that now."))
    try:
        turn = asyncio.create_task(
            app.assistant.handle_text(CONSOLE_CHAT, "remind me in 3 hours to call the dentist")
        )
        await openai_server.wait_for_requests_async(1, timeout=20)
        # The message is kept; then the sessions' disk stops taking writes.
        shutil.rmtree(app.paths.sessions)
        app.paths.sessions.write_text("not a folder any more")
        ready.set()
        outcome = await turn
        assert app.schedule is not None
        assert await app.schedule.store.tasks(CONSOLE_CHAT.key) == []
    finally:
        await app.close()
    assert outcome is not None and outcome.storage_failed
    [result] = tool_messages(openai_server.requests[1])
    assert result["content"].startswith("error: not run: the bot could not record this call")


@pytest.mark.slow
async def test_a_replica_killed_after_the_tool_ran_leaves_the_one_that_takes_over_one_reminder(
    workspace: Path, redis_url: str, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, FAST_LEASES)
    model = ToolThenAnswer(REMIND, "Will do.")
    openai_server.responder = model
    listening = "listening for Telegram webhooks"
    first = spawn_replica("r1", workspace, redis_url, telegram, openai_server, webhook=True)
    replicas = [first]
    try:
        await asyncio.to_thread(wait_until, lambda: listening in first.log_text(), 60, "r1")
        assert first.url is not None
        ask = telegram.build_update("remind me in 3 hours to call the dentist", chat_id=CHAT)
        async with httpx.AsyncClient(timeout=10) as client:
            await post_until_taken(client, itertools.repeat(first.url), ask)
        # r1 holds the chat and ran the tool; the model is asked to go on.
        await asyncio.to_thread(wait_until, lambda: held_requests(openai_server) == 1, 60, "r1")
        second = spawn_replica("r2", workspace, redis_url, telegram, openai_server, webhook=True)
        replicas.append(second)
        await asyncio.to_thread(wait_until, lambda: listening in second.log_text(), 60, "r2")
        model.holding = False
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
        # r2 takes the chat once r1's lease ends, from the session r1 kept in Redis.
        texts = await asyncio.to_thread(wait_for_text, telegram, "✅ Reminder")
        assert second.url is not None
        async with httpx.AsyncClient(timeout=10) as client:
            listing = telegram.build_update("/reminders", chat_id=CHAT)
            await post_until_taken(client, itertools.repeat(second.url), listing)
        listed = await asyncio.to_thread(reminders_listed, telegram)
    finally:
        await asyncio.to_thread(stop_all, replicas)
    confirmations = [text for text in texts if "✅ Reminder" in text]
    assert len(confirmations) == 1 and "✅ Reminder #1 set for" in confirmations[0], texts
    assert listed.count("call the dentist") == 1, listed
    assert len([r for r in openai_server.requests if not after_tool(r)]) == 1


async def test_a_turn_cut_short_mid_round_goes_on_with_its_results_and_confirmations(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """What a kill leaves in the session when it lands in the second of two rounds of calls,
    the first call of that round done: the turn goes on from there, runs nothing again, and
    still says what the first round scheduled."""
    app = build_app(make_settings(workspace, openai_server))
    confirmation = "✅ Reminder #1 set for Friday 27 November, 12:00 (UTC): call the dentist"
    at = "2026-11-27T09:00:00+00:00"

    def calls(*names: str) -> list[dict[str, Any]]:
        return [
            {"id": f"call_{n}", "type": "function", "function": {"name": n, "arguments": "{}"}}
            for n in names
        ]

    session = app.sessions.get(CONSOLE_CHAT.key)
    session.messages += [
        {"role": "user", "content": "remind me, then note it", "at": at, "refs": ["c:7"]},
        {"role": "assistant", "content": "Setting it.", "tool_calls": calls("schedule"), "at": at},
        {
            "role": "tool",
            "tool_call_id": "call_schedule",
            "name": "schedule",
            "content": f"Scheduled. This line is added to your reply: {confirmation}",
            "notes": [confirmation],
            "at": at,
        },
        {"role": "assistant", "content": None, "tool_calls": calls("memory", "files"), "at": at},
        {"role": "tool", "tool_call_id": "call_memory", "name": "memory", "content": "saved"},
    ]
    await app.sessions.save_async(session)
    openai_server.script(reply("All done."))
    try:
        outcome = await app.assistant.handle_text(
            CONSOLE_CHAT, "remind me, then note it", message_refs=["c:7"]
        )
    finally:
        await app.close()
    assert outcome is not None
    assert outcome.reply == f"Setting it.\n\nAll done.\n\n{confirmation}"
    [request] = openai_server.recorded_requests
    assert not request.rejected, request.rejection
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(request.body)}
    assert results["call_memory"] == "saved"
    assert results["call_files"].startswith("error: this call was cut off")
    assert [m["role"] for m in request.body["messages"][-5:]] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
    ]
