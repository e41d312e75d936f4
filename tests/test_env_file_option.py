"""`--env-file PATH` before or after the command, for every command."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemobot.bot.cli.tool_commands import split_tool_command
from tests.conftest import run_mnemobot

COMMANDS = [
    ["run"],
    ["chat"],
    ["memory", "chats"],
    ["memory", "stats", "--chat", "console:local"],
    ["memory", "maintain"],
]


@pytest.fixture
def bad_env_file(tmp_path: Path) -> Path:
    # A value every command reading settings refuses, naming it: proof the file was read.
    path = tmp_path / "bot.env"
    path.write_text("BOT_LOG_LEVEL=LOUD\n")
    return path


# Before the command it always worked; one case keeps it so (each case is a process start).
CASES = [("before", ["memory", "stats", "--chat", "console:local"])] + [
    ("after", command) for command in COMMANDS
]


@pytest.mark.parametrize(
    ("where", "command"), CASES, ids=lambda v: v if isinstance(v, str) else " ".join(v)
)
def test_every_command_reads_the_env_file_named_before_or_after_it(
    bad_env_file: Path, workspace: Path, command: list[str], where: str
) -> None:
    option = ["--env-file", str(bad_env_file)]
    argv = [*option, *command] if where == "before" else [*command, *option]
    result = run_mnemobot(*argv, BOT_WORKSPACE=str(workspace))
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("mnemobot: BOT_LOG_LEVEL is invalid: 'LOUD'")


def test_doctor_takes_the_env_file_after_the_command(tmp_path: Path, workspace: Path) -> None:
    env_file = tmp_path / "bot.env"
    env_file.write_text(f"BOT_WORKSPACE={workspace}\nOPENAI_BASE_URL=http://127.0.0.1:9/v1\n")
    result = run_mnemobot("doctor", "--env-file", str(env_file))
    assert f"ok   settings: read {env_file}" in result.stdout, result.stdout + result.stderr


def test_two_different_env_files_are_refused(tmp_path: Path) -> None:
    result = run_mnemobot("--env-file", "a.env", "doctor", "--env-file", "b.env")
    assert result.returncode == 2
    assert "--env-file given twice (a.env and b.env)" in result.stderr


def test_a_tool_command_leaves_the_env_file_to_mnemobot() -> None:
    assert split_tool_command(["bench", "telegram", "--env-file", "f.env", "--json"]) == (
        ["--env-file", "f.env", "bench"],
        ["telegram", "--json"],
    )
    assert split_tool_command(["eval", "updates", "--env-file=f.env"]) == (
        ["--env-file=f.env", "eval"],
        ["updates"],
    )
    assert split_tool_command(["bench", "x", "--", "--env-file", "g"])[1] == [
        "x",
        "--",
        "--env-file",
        "g",
    ]
