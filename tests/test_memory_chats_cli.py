"""`mnemobot memory ... --chat CHAT` names a chat that has memory, or says which ones do;
`mnemobot memory chats` lists them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import run_mnemobot
from tests.test_console_e2e import run_chat


@pytest.fixture(scope="module")
def two_chats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace where two console chats have memory; made once, only read by the tests."""
    workspace = tmp_path_factory.mktemp("two-chats") / "workspace"
    workspace.mkdir(mode=0o700)
    with FakeOpenAIServer() as server:
        run_chat("I live in Lisbon\n", workspace, server)
        run_chat(
            "My dog is called Rex\nHe likes the beach\n", workspace, server, "--chat-id", "work"
        )
    yield workspace


@pytest.mark.parametrize(
    ("command", "wrong", "closest"),
    [
        (("pack", "where do I live"), "console", "console:"),
        (("stats",), "telegram1", "console:"),
        (("search", "dog"), "console:wrok", "console:work"),
        (("export",), "console:locale", "console:local"),
        (("erase",), "consol", "console:"),
    ],
)
def test_a_chat_without_memory_is_an_error_naming_the_closest(
    two_chats: Path, command: tuple[str, ...], wrong: str, closest: str
) -> None:
    result = run_mnemobot("memory", *command, "--chat", wrong, BOT_WORKSPACE=str(two_chats))
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert f"no memory for chat {wrong!r}; closest: {closest}" in line
    assert "console:local" in line and "console:work" in line
    assert not (two_chats / "memory" / wrong).exists()


def test_memory_chats_lists_every_chat_with_counts_and_last_activity(two_chats: Path) -> None:
    result = run_mnemobot("memory", "chats", "--json", BOT_WORKSPACE=str(two_chats))
    assert result.returncode == 0, result.stderr
    rows = {row["chat"]: row for row in json.loads(result.stdout)}
    assert set(rows) == {"console:local", "console:work"}
    assert rows["console:work"]["items"] > rows["console:local"]["items"] >= 1
    assert rows["console:local"]["dailyNotes"] == 1
    assert rows["console:local"]["lastActivity"].endswith("UTC")
    table = run_mnemobot("memory", "chats", BOT_WORKSPACE=str(two_chats))
    assert table.stdout.splitlines()[0].split() == [
        "chat",
        "items",
        "notes",
        "MEMORY.md",
        "last",
        "activity",
    ]
    assert [line.split()[0] for line in table.stdout.splitlines()[1:]] == [
        "console:local",
        "console:work",
    ]


def test_an_empty_workspace_says_no_chat_has_memory(workspace: Path) -> None:
    result = run_mnemobot(
        "memory", "stats", "--chat", "console:local", BOT_WORKSPACE=str(workspace)
    )
    assert result.returncode == 2
    assert "no chat has memory in workspace" in result.stderr
    listed = run_mnemobot("memory", "chats", BOT_WORKSPACE=str(workspace))
    assert listed.returncode == 0 and "no chat has memory" in listed.stdout
