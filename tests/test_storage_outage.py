"""A disk that stops taking writes under a running bot: commands still answer, messages
are answered once storage works again, once, and no one is asked to send them again."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import subprocess_env

USER = 5005

# `mnemobot run`, with SIGUSR1 making every write of data fail with EFBIG, as a full disk
# does (a file-size limit of one byte; unlike permissions it also binds root), and SIGUSR2
# lifting it. Each says so on stdout once it applies.
RUN_WITH_A_DISK_THAT_FILLS = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
def full(*_):
    resource.setrlimit(resource.RLIMIT_FSIZE, (1, hard))
    print("full", flush=True)
def free(*_):
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    print("free", flush=True)
signal.signal(signal.SIGUSR1, full)
signal.signal(signal.SIGUSR2, free)
from mnemobot.bot.cli.main import main
sys.exit(main(["run"]))
"""


@pytest.fixture
def telegram() -> Iterator[TelegramServer]:
    with TelegramServer() as server:
        yield server


def read_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no line from the bot within {timeout} s"
    return process.stdout.readline().strip()


@pytest.mark.slow
def test_a_full_disk_keeps_commands_answered_and_answers_messages_once_it_has_room(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=openai_server.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS=str(USER),
    )
    bot = subprocess.Popen(
        [sys.executable, "-c", RUN_WITH_A_DISK_THAT_FILLS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workspace.parent,
    )
    try:
        telegram.wait_for_call("getUpdates", timeout=30)
        telegram.send_text("hello", chat_id=USER)
        telegram.wait_for_messages(USER, 1, timeout=15)
        bot.send_signal(signal.SIGUSR1)
        assert read_line(bot, 10) == "full"

        telegram.send_text("second message", chat_id=USER)
        telegram.send_text("/status", chat_id=USER)
        during = [m["plain_text"] for m in telegram.wait_for_messages(USER, 3, timeout=15)]
        bot.send_signal(signal.SIGUSR2)
        assert read_line(bot, 10) == "free"
        after = [m["plain_text"] for m in telegram.wait_for_messages(USER, 4, timeout=30)]
        bot.send_signal(signal.SIGTERM)
        _, err = bot.communicate(timeout=20)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.communicate()

    assert any(text.startswith("Model: ") for text in during[1:])  # /status answered
    assert any("no need to send it again" in text for text in during[1:])
    assert after[3] == "echo: second message"
    assert not any("try again" in text for text in after)
    assert after.count("echo: second message") == 1
    session = (workspace / "sessions" / f"telegram:{USER}.json").read_text()
    assert session.count("second message") == 2  # the question and the echo, once each
    assert "Traceback" not in err
    assert err.count("cannot write the inbox") == 1
    assert err.count("could not store the session") == 1
