"""What `mnemobot` says about itself: bare, top-level help, a command's help."""

from __future__ import annotations

import argparse
import subprocess
import sys

from mnemobot.bot.cli.main import build_parser
from tests.conftest import run_mnemobot


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def memory_actions() -> list[str]:
    memory = subparser(build_parser(), "memory")
    actions = next(a for a in memory._actions if isinstance(a, argparse._SubParsersAction))
    return list(actions.choices)


def test_bare_mnemobot_prints_the_help_listing_every_memory_action() -> None:
    result = run_mnemobot()
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: mnemobot")
    assert result.stderr == ""
    listed = " ".join(result.stdout.split())
    assert len(memory_actions()) >= 10
    for action in memory_actions():
        assert action in listed, action


def test_doctor_help_says_what_it_checks() -> None:
    described = " ".join(subparser(build_parser(), "doctor").format_help().split())
    assert "Changes nothing on disk" in described and "Telegram token" in described
    checked = ("Redis", "MCP server", "embeddings", "speech to text", "scheduled tasks")
    assert all(check in described for check in checked), described
    # The one line of the top-level help names them too, not only the first few.
    listed = " ".join(build_parser().format_help().split())
    line = listed.split(" doctor ", 1)[1].split(" memory ", 1)[0]
    assert line == (
        "check settings, workspace, model, Telegram token, Redis, MCP servers, embeddings "
        "and speech to text"
    )


def test_help_and_a_mistyped_command_load_none_of_the_bot() -> None:
    # The model client, Telegram and memory cost a fresh Python seconds of CPU: the command
    # line imports a command's module only when that command runs.
    probe = (
        "import sys\n"
        "from mnemobot.bot.cli.main import main\n"
        "for words in (['--help'], ['memory', 'nonsense']):\n"
        "    try:\n"
        "        main(words)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = {'openai', 'telegram', 'numpy', 'mnemobot.bot.app',"
        " 'mnemobot.memory.services.workspace_memory'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "usage: mnemobot" in done.stdout
    assert "invalid choice: 'nonsense'" in done.stderr
