"""A workspace deleted under a running bot is said in the log, and still has one bot."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemobot.bot.channels.dispatch import STORAGE_WAIT_TEXT
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot, subprocess_env

USER = 6006


@pytest.fixture
def telegram() -> Iterator[TelegramServer]:
    with TelegramServer() as server:
        yield server


def inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


def wait_until(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)


@pytest.mark.slow
def test_a_deleted_workspace_is_logged_recreated_and_still_refuses_a_second_run(
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
    first = subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workspace.parent,
    )
    try:
        telegram.wait_for_call("getUpdates", timeout=30)
        telegram.send_text("before", chat_id=USER)
        telegram.wait_for_messages(USER, 1, timeout=15)
        lock = workspace / ".run.lock"
        held = inode(lock)
        # As `rm -rf` would: the bot may be writing meanwhile, so delete until it is gone.
        while inode(lock) == held:
            shutil.rmtree(workspace, ignore_errors=True)
        # Nothing but the guard makes a lock file in the emptied workspace. (Not "an inode
        # other than the old one": the file system may give the new file the old number.)
        wait_until(lock.exists, 15, "the workspace's lock file coming back")

        second = run_mnemobot("run", timeout=60, **{k: env[k] for k in env if k.isupper()})
        telegram.send_text("after", chat_id=USER)
        # The message may first meet the emptied workspace (its sessions folder not made
        # again yet): then it is told to wait and answered once it can be stored.
        wait_until(
            lambda: any(m["plain_text"] == "echo: after" for m in telegram.sent_messages(USER)),
            30,
            "the answer to the message sent after the deletion",
        )
        answers = [m for m in telegram.sent_messages(USER) if m["plain_text"] != STORAGE_WAIT_TEXT]
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=20)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()

    assert second.returncode == 2
    assert "another `mnemobot run` is serving workspace" in second.stderr
    assert answers[1]["plain_text"] == "echo: after"
    assert (workspace / "sessions" / f"telegram:{USER}.json").exists()
    assert err.count("was deleted or moved while the bot was running") == 1
    assert "Traceback" not in err
