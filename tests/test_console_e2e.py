"""`mnemobot chat` with piped input, against the fake OpenAI server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, user_texts
from tests.conftest import run_mnemobot


def run_chat(
    stdin: str, workspace: Path, server: FakeOpenAIServer | None, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    base = {
        "BOT_WORKSPACE": str(workspace),
        "OPENAI_API_KEY": "sk-test-secret-value",
        "OPENAI_BASE_URL": server.base_url if server else "http://127.0.0.1:9/v1",
    }
    base.update(env)
    return run_mnemobot("chat", *args, input=stdin, cwd=workspace.parent, **base)


def answers(stdout: str) -> list[str]:
    """Piped `chat`'s answers: each ends with a line holding only the record separator."""
    *each, rest = stdout.split("\x1e\n")
    assert rest == "", f"output after the last answer: {rest!r}"
    return [answer.removesuffix("\n") for answer in each]


def test_piped_lines_are_answered_on_stdout_and_a_script_tells_answers_apart(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(reply("Hi! I am the fake model.\n\nA second paragraph.\x1e"))
    result = run_chat("hello\n\n   \nsecond line\n", workspace, openai_server)
    assert result.returncode == 0, result.stderr
    assert answers(result.stdout) == [
        "Hi! I am the fake model.\n\nA second paragraph.",
        "echo: second line",
    ]
    assert [user_texts(r)[-1] for r in openai_server.requests] == ["hello", "second line"]
    assert "sk-test-secret-value" not in result.stderr + result.stdout


def test_commands_work_in_the_console(workspace: Path, openai_server: FakeOpenAIServer) -> None:
    result = run_chat("hello\n/status\n/new\n/help\n", workspace, openai_server)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "echo: hello" in out
    assert "Model: gpt-4o-mini" in out and "Session: 2 messages" in out
    assert "Runtime config: values of runtime-config.json in force" in out
    assert "Workspace: ok" in out
    assert "Files: this chat's own folder" in out
    # /status is read by everyone in a group: nothing of the file system shows.
    status = out[out.index("Model:") : out.index("Started a new conversation")]
    assert not any(part in status for part in workspace.parts[1:-1])
    assert "Started a new conversation (2 messages cleared)" in out
    assert "/compact" in out and "/stop" in out


@pytest.mark.slow
def test_the_conversation_continues_after_a_restart(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    run_chat("my name is Ada\n", workspace, openai_server)
    run_chat("what is my name?\n", workspace, openai_server)
    assert user_texts(openai_server.last_request()) == ["my name is Ada", "what is my name?"]


@pytest.mark.slow
def test_chat_ids_have_separate_sessions(workspace: Path, openai_server: FakeOpenAIServer) -> None:
    run_chat("secret plan\n", workspace, openai_server, "--chat-id", "a")
    run_chat("hello\n", workspace, openai_server, "--chat-id", "b")
    assert user_texts(openai_server.last_request()) == ["hello"]


def test_model_unreachable_gets_a_short_reply(workspace: Path) -> None:
    result = run_chat("hello\n", workspace, None)
    assert result.returncode == 0
    assert "model is unavailable" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_bad_settings_stop_with_one_line(workspace: Path) -> None:
    result = run_chat("hello\n", workspace, None, TELEGRAM_ALLOWED_USERS="alice,bob")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "TELEGRAM_ALLOWED_USERS" in lines[0] and "comma-separated" in lines[0]
    assert result.stdout == ""


def test_an_unusable_workspace_or_chat_id_gets_one_line(workspace: Path, tmp_path: Path) -> None:
    not_a_dir = tmp_path / "plain-file"
    not_a_dir.write_text("x")
    result = run_chat("hello\n", not_a_dir, None)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"mnemobot: BOT_WORKSPACE {not_a_dir} is not a writable directory (Not a directory); "
        "point it at a directory you can write to"
    ]
    result = run_chat("hello\n", workspace, None, "--chat-id", "a/b")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "--chat-id" in result.stderr


@pytest.mark.slow
def test_two_consoles_on_one_chat_lose_no_message(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    import json
    from concurrent.futures import ThreadPoolExecutor

    def lines(who: str) -> str:
        return "".join(f"{who} line {n}\n" for n in range(8))

    with ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(
                lambda who: run_chat(lines(who), workspace, openai_server, "--chat-id", "shared"),
                ["first", "second"],
            )
        )
    for result in runs:
        assert result.returncode == 0, result.stderr
    session = json.loads((workspace / "sessions" / "console:shared.json").read_text())
    users = [m["content"] for m in session["messages"] if m["role"] == "user"]
    assert sorted(users) == sorted(
        [f"first line {n}" for n in range(8)] + [f"second line {n}" for n in range(8)]
    )
    # Each process's own lines stay in the order it sent them.
    assert [u for u in users if u.startswith("first")] == [f"first line {n}" for n in range(8)]
