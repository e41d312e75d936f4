"""Scheduled tasks across SIGKILLs of `mnemobot run`: fired once, with crash points injected.

Each start is a real `mnemobot run` process against the fake Bot API and model; a crash
point (tests/schedule_crash_points.py, run by its text: the child needs no path to the
tests) makes the process SIGKILL itself at an exact moment.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests import schedule_crash_points
from tests.conftest import subprocess_env
from tests.schedule_harness import wait_until_nothing_waits
from tests.telegram_harness import telegram

__all__ = ["telegram"]  # fixture used by name below

CHAT = 801
CRASH_POINTS = Path(schedule_crash_points.__file__).read_text(encoding="utf-8")


def start(
    workspace: Path, telegram: TelegramServer, llm: FakeOpenAIServer, crash_at: str | None = None
) -> subprocess.Popen[str]:
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=llm.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS="*",
        BOT_LOG_LEVEL="WARNING",
    )
    command = ["-m", "mnemobot", "run"]
    if crash_at is not None:
        command = ["-c", CRASH_POINTS, crash_at, "run"]
    polls = len(telegram.calls("getUpdates"))
    process = subprocess.Popen(
        [sys.executable, *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workspace.parent,
    )
    if crash_at is None:
        telegram.wait_for_call("getUpdates", timeout=30, count=polls + 1)
    # With a crash point it may die before polling (a task already due fires first).
    return process


def reminders(telegram: TelegramServer, chat: int = CHAT) -> list[str]:
    return [m["plain_text"] for m in telegram.sent_messages(chat) if "⏰" in m["plain_text"]]


def crashed(process: subprocess.Popen[str], timeout: float = 20) -> None:
    """Wait for the process to reach its crash point (it kills itself)."""
    process.wait(timeout=timeout)
    assert process.returncode == -signal.SIGKILL, process.stderr.read() if process.stderr else ""


def schedule_a_reminder(
    workspace: Path, telegram: TelegramServer, llm: FakeOpenAIServer, crash_at: str | None = None
) -> subprocess.Popen[str]:
    llm.script(
        tool_call("schedule", {"when": "in 2 seconds", "text": "water the plants"}),
        reply("Will do."),
    )
    bot = start(workspace, telegram, llm, crash_at)
    telegram.send_text("remind me in 2 seconds to water the plants", chat_id=CHAT)
    # With streaming (private chats' default) the confirmation edits the preview in.
    deadline = time.monotonic() + 15
    confirmed = "✅ Reminder #1 set for"
    while not any(confirmed in m["plain_text"] for m in telegram.sent_messages(CHAT)):
        assert time.monotonic() < deadline, telegram.sent_messages(CHAT)
        time.sleep(0.05)
    assert len(telegram.sent_messages(CHAT)) == 1
    return bot


@pytest.mark.slow
def test_kills_between_scheduling_firing_and_marking_fire_the_reminder_once(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Killed right after confirming: the task was on disk before the confirmation.
    bot = schedule_a_reminder(workspace, telegram, openai_server)
    bot.send_signal(signal.SIGKILL)
    bot.wait()
    assert reminders(telegram) == []
    # Killed when the firing is in the inbox and the task not yet moved past it.
    crashed(start(workspace, telegram, openai_server, "after-handover"))
    # Killed when its reply was delivered and marked, the firing not yet marked done.
    crashed(start(workspace, telegram, openai_server, "after-delivery"))
    assert reminders(telegram) == ["⏰ Reminder: water the plants"]
    calls = len(openai_server.requests)
    bot = start(workspace, telegram, openai_server)
    try:
        wait_until_nothing_waits(workspace)
    finally:
        bot.send_signal(signal.SIGTERM)
        _, err = bot.communicate(timeout=30)
    assert bot.returncode == 0, err
    assert reminders(telegram) == ["⏰ Reminder: water the plants"]
    # A plain reminder never asks the model, not even when it is replayed.
    assert len(openai_server.requests) == calls


@pytest.mark.slow
def test_a_kill_between_delivery_and_its_mark_sends_it_at_most_once_more(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    crashed(schedule_a_reminder(workspace, telegram, openai_server, "before-delivery-mark"))
    assert reminders(telegram) == ["⏰ Reminder: water the plants"]
    bot = start(workspace, telegram, openai_server)
    try:
        wait_until_nothing_waits(workspace)
    finally:
        bot.send_signal(signal.SIGTERM)
        bot.communicate(timeout=30)
    # The outbox's own guarantee: the one reply Telegram took but the outbox had not
    # marked goes out once more, and only that.
    assert reminders(telegram) == ["⏰ Reminder: water the plants"] * 2
