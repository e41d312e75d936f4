"""What one-off CLI commands print: their answer, and on stderr only warnings and errors
(unless BOT_LOG_LEVEL asks for more); `run` and `chat` keep their log."""

from __future__ import annotations

from pathlib import Path

from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import run_mnemobot
from tests.test_console_e2e import run_chat


def test_a_one_off_command_prints_no_info_line_unless_asked(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    run_chat("My favourite colour is teal\n", workspace, openai_server)
    env = {"BOT_WORKSPACE": str(workspace), "OPENAI_BASE_URL": openai_server.base_url}
    result = run_mnemobot("memory", "maintain", "--chat", "console:local", **env)
    assert result.returncode == 0, result.stderr
    assert "consolidate" in result.stdout
    assert " INFO " not in result.stderr, result.stderr
    # Asked for: BOT_LOG_LEVEL set, the command logs at that level.
    chatty = run_mnemobot(
        "memory", "maintain", "--chat", "console:local", BOT_LOG_LEVEL="INFO", **env
    )
    assert " INFO mnemobot." in chatty.stderr


def test_counts_of_one_are_singular(workspace: Path) -> None:
    memory = WorkspaceMemory.open(workspace)
    memory.record.add_flushed_facts(
        "console:local", ["The user likes teal"], at=1e9, session_key="s"
    )
    memory.close()
    stats = run_mnemobot("memory", "stats", "--chat", "console:local", BOT_WORKSPACE=str(workspace))
    assert stats.stdout.splitlines()[0] == "chat console:local: 1 item in 1 file"
