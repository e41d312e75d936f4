"""What a chat user is told when something outside the conversation fails.

Users get one short plain line; what the operator must check goes to the log, once.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, error, reply, user_texts
from tests.conftest import CONSOLE_CHAT, ask, make_settings, subprocess_env, write_runtime_config

STORAGE_LINE = (
    "Sorry, I could not save this conversation (the bot's storage is failing); "
    "please try again later."
)


async def test_a_refused_api_key_is_an_operator_hint_in_the_log_not_in_the_chat(
    app: App, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.script(
        error(401, "Incorrect API key provided: sk-te****key", code="invalid_api_key")
    )
    with caplog.at_level(logging.INFO):
        answer = await ask(app, "hello")
    assert answer.startswith("Sorry, the model is not available right now.")
    assert "kept" in answer
    assert "OPENAI_API_KEY" not in answer and "credentials" not in answer
    hints = [r for r in caplog.records if "check OPENAI_API_KEY" in r.getMessage()]
    assert len(hints) == 1 and hints[0].levelno == logging.WARNING
    assert "401" in hints[0].getMessage()


# Runs `mnemobot chat` as a person would, but with a file-size limit of one byte: every
# write of data fails with EFBIG, as on a full disk (and, unlike permissions, also as root).
FULL_DISK_CHAT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1, 1))
from mnemobot.bot.cli.main import main
sys.exit(main(["chat"]))
"""


def test_a_full_disk_gets_one_line_for_the_user_and_one_for_the_log(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # Written before the limit applies: startup itself needs no write then.
    write_runtime_config(workspace, {})
    result = subprocess.run(
        [sys.executable, "-c", FULL_DISK_CHAT],
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(
            BOT_WORKSPACE=str(workspace),
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=openai_server.base_url,
        ),
        cwd=workspace.parent,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    # One answer, ended as every piped answer is (a line holding the record separator).
    assert result.stdout == f"{STORAGE_LINE}\n\x1e\n"
    # The start-up line aside, one line says what failed.
    log_lines = [line for line in result.stderr.strip().splitlines() if " INFO " not in line]
    assert len(log_lines) == 1, result.stderr
    assert "could not store the session" in log_lines[0] and "File too large" in log_lines[0]
    # Nothing unsaved was sent to the model.
    assert openai_server.requests == []


async def test_a_vanished_sessions_folder_gets_the_storage_line_without_a_traceback(
    app: App, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sessions = workspace / "sessions"
    shutil.rmtree(sessions)
    sessions.write_text("not a folder")
    with caplog.at_level(logging.INFO):
        assert await ask(app, "hello") == STORAGE_LINE
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None


async def test_a_failing_memory_write_still_answers_and_says_it_was_not_remembered(
    app: App, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert await ask(app, "first") == "echo: first"
    memory = workspace / "memory"
    shutil.rmtree(memory)
    memory.write_text("not a folder")
    with caplog.at_level(logging.INFO):
        answer = await ask(app, "my cat is called Tom")
    assert answer.startswith("echo: my cat is called Tom")
    assert answer.endswith("(I could not save this to memory: the bot's storage is failing.)")
    memory_lines = [r for r in caplog.records if "memory write failed" in r.getMessage()]
    assert len(memory_lines) == 1 and memory_lines[0].exc_info is None


async def test_a_corrupt_session_that_was_set_aside_is_mentioned_once(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    sessions = workspace / "sessions"
    sessions.mkdir()
    (sessions / f"{CONSOLE_CHAT.key}.json").write_text('{"id": "console:local", "messages": [')
    openai_server.script(reply("Hello again."))
    app = build_app(make_settings(workspace, openai_server))
    try:
        first = await ask(app, "hi")
        second = await ask(app, "and now?")
    finally:
        await app.close()
    aside = [p.name for p in sessions.glob("*.corrupt-*")]
    assert len(aside) == 1
    note, _, answer = first.partition("\n\n")
    assert answer == "Hello again."
    assert aside[0] in note and "could not read our earlier conversation" in note
    assert "memory" in note.lower() and "unaffected" in note
    assert str(workspace) not in first and "/" not in note
    assert second == "echo: and now?"
    # The note is gone for good: a restart does not bring it back.
    app = build_app(make_settings(workspace, openai_server))
    try:
        assert await ask(app, "after restart") == "echo: after restart"
    finally:
        await app.close()
    assert user_texts(openai_server.last_request()) == ["hi", "and now?", "after restart"]


async def test_new_on_failing_storage_gets_the_storage_line(
    app: App, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert await ask(app, "hello") == "echo: hello"
    sessions = workspace / "sessions"
    shutil.rmtree(sessions)
    sessions.write_text("not a folder")
    with caplog.at_level(logging.INFO):
        answer = await app.commands.run(CONSOLE_CHAT, ParsedCommand("new", ""))
    assert answer == STORAGE_LINE
    assert all(r.exc_info is None for r in caplog.records)


async def test_status_shows_nothing_of_the_file_system_even_when_the_config_is_broken(
    app: App, workspace: Path
) -> None:
    config = workspace / "preferences" / "runtime-config.json"
    config.unlink()
    config.mkdir()  # unreadable as a file: the OS error names the full path
    status = await app.commands.run(CONSOLE_CHAT, ParsedCommand("status", ""))
    assert "Runtime config: INVALID" in status and "runtime-config.json" in status
    assert "Workspace: ok" in status
    assert not any(part in status for part in workspace.parts[1:-1])
