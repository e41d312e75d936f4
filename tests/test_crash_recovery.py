"""Killing `mnemobot run` (SIGKILL) at random moments never loses a message Telegram accepted.

Twenty chats keep writing while the bot is killed and restarted again and again (twice by
default, ten times in the slow run; `mnemobot bench crash` does fifty), with a model that
takes 0.3 s a turn, so messages pile up in every chat. Telegram (the fake Bot
API) counts an update as accepted once a later getUpdates moves past it; the bot must
answer every one of them (messages that waited together may share one answer), never
refuse one, keep each chat's order, send at most one duplicate reply per chat per kill
(the instant between a send and its mark), and leave every file readable.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemobot.base.atomic_file import read_jsonl
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, Step, delay, echo_responder
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import subprocess_env
from tests.telegram_harness import telegram

__all__ = ["telegram"]  # fixture used by name below

CHATS = [5000 + n for n in range(20)]
MODEL_SECONDS = 0.3
_SENT = re.compile(r"\bm\d+\b")


def slow_echo(request: dict[str, object]) -> Step:
    return delay(MODEL_SECONDS, echo_responder(request))


def answered_in_order(replies: list[str]) -> list[str]:
    """The messages the replies answer, each once, in the order first answered.

    An answer is "echo: <text>"; messages that waited together are answered at once,
    "echo: m3\n\nm7". Anything else (a refusal, an apology) answers nothing.
    """
    seen: list[str] = []
    for text in replies:
        if text.startswith("echo: "):
            seen += [m for m in _SENT.findall(text) if m not in seen]
    return seen


def start_bot(
    workspace: Path, telegram: TelegramServer, llm: FakeOpenAIServer
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
    return subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workspace.parent,
    )


@pytest.mark.parametrize(
    "kills", [2, pytest.param(10, marks=pytest.mark.slow)], ids=lambda n: f"{n}-kills"
)
@pytest.mark.slow
def test_random_kills_lose_no_accepted_message(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer, kills: int
) -> None:
    openai_server.responder = slow_echo
    rng = random.Random(7)
    sent: dict[int, list[str]] = {chat: [] for chat in CHATS}
    counter = 0

    def send_some(n: int) -> None:
        nonlocal counter
        for _ in range(n):
            chat = rng.choice(CHATS)
            counter += 1
            text = f"m{counter}"
            sent[chat].append(text)
            telegram.send_text(text, chat_id=chat)

    for _kill in range(kills):
        bot = start_bot(workspace, telegram, openai_server)
        polls = len(telegram.calls("getUpdates"))
        telegram.wait_for_call("getUpdates", timeout=30, count=polls + 1)
        deadline = time.monotonic() + rng.uniform(0.2, 1.2)
        while time.monotonic() < deadline:
            send_some(rng.randint(2, 8))
            time.sleep(0.05)
        bot.send_signal(signal.SIGKILL)
        bot.wait()

    polls = len(telegram.calls("getUpdates"))
    bot = start_bot(workspace, telegram, openai_server)
    try:
        telegram.wait_for_call("getUpdates", timeout=30, count=polls + 1)
        deadline = time.monotonic() + 60
        for chat in CHATS:
            while time.monotonic() < deadline:
                got = answered_in_order([m["plain_text"] for m in telegram.sent_messages(chat)])
                if set(sent[chat]) <= set(got):
                    break
                time.sleep(0.1)
        bot.send_signal(signal.SIGTERM)
        _, err = bot.communicate(timeout=30)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.communicate()

    assert bot.returncode == 0, err
    duplicates = 0
    for chat in CHATS:
        replies = [m["plain_text"] for m in telegram.sent_messages(chat)]
        assert all(text.startswith("echo: ") for text in replies), f"chat {chat}: {replies}"
        assert answered_in_order(replies) == sent[chat], f"chat {chat}: missing or out of order"
        # A reply that answers a message again (the same answer sent twice, or a turn cut
        # by a kill and answered again with the messages that waited with it).
        duplicates_here = sum(
            1
            for n, text in enumerate(replies)
            if set(_SENT.findall(text)) & set(answered_in_order(replies[:n]))
        )
        assert duplicates_here <= kills, f"chat {chat}: {duplicates_here} duplicates"
        duplicates += duplicates_here
    # Every file is readable: JSON whole, JSONL with at most a torn last line per kill.
    for path in workspace.rglob("*.json"):
        json.loads(path.read_text())
    for path in workspace.rglob("*.jsonl"):
        assert read_jsonl(path).skipped <= kills, path
    print(f"{counter} messages, {kills} kills, {duplicates} duplicate replies")
