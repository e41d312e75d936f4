"""What the bot keeps holds what people said: every file it writes in the workspace is its
user's only (0600), every folder too (0700), and a workspace of an older version is fixed
once at start-up."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mnemobot.bot.cli.workspace_guard import MemoryCommandLock, WorkspaceGuard
from mnemobot.config.workspace import WorkspacePaths
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot
from tests.telegram_harness import StartBot, start_bot, telegram
from tests.test_console_e2e import run_chat

__all__ = ["start_bot", "telegram"]  # fixtures used by name below


def shared_paths(root: Path) -> list[str]:
    """Paths under `root` (and `root`) that group or others may read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink() and stat.S_IMODE(path.lstat().st_mode) & 0o077:
            found.append(f"{path.relative_to(root)} {stat.S_IMODE(path.lstat().st_mode):o}")
    return found


def test_everything_a_chat_writes_is_its_users_only(
    workspace: Path, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    script = "I live in Lisbon\nMy phone is 555-1234\n/new\nwhere do I live?\n/export\n"
    result = run_chat(script, workspace, openai_server)
    assert result.returncode == 0, result.stderr
    exported = run_mnemobot(
        "memory",
        "export",
        "--chat",
        "console:local",
        "--out",
        str(tmp_path / "out.zip"),
        BOT_WORKSPACE=str(workspace),
    )
    assert exported.returncode == 0, exported.stderr
    written = {p.relative_to(workspace).parts[0] for p in workspace.rglob("*") if p.is_file()}
    # Daily notes, items, the session and its offload log, the export zip were all written.
    assert {"memory", "sessions", "exports", "preferences"} <= written
    assert list(workspace.glob("memory/console:local/????-??-??.md"))
    assert list(workspace.glob("memory/console:local/items/episodic/*.jsonl"))
    assert list(workspace.glob("sessions/*.log.jsonl"))
    assert list(workspace.glob("exports/*.zip"))
    assert shared_paths(workspace) == []
    assert stat.S_IMODE((tmp_path / "out.zip").stat().st_mode) == 0o600


def test_an_old_workspace_is_made_private_once_at_start(workspace: Path) -> None:
    note = workspace / "memory" / "telegram:1" / "2026-01-02.md"
    items = workspace / "memory" / "telegram:1" / "items" / "semantic.jsonl"
    journal = workspace / "delivery" / "telegram-outbox.jsonl"
    for path in (note, items, journal):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("old\n")
    for path in [workspace, *workspace.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    result = run_mnemobot("memory", "chats", BOT_WORKSPACE=str(workspace))
    assert result.returncode == 0, result.stderr
    assert shared_paths(workspace) == []
    assert (workspace / ".private-modes").is_file()
    assert note.read_text() == "old\n"


def test_the_memory_command_lock_is_its_users_only_whatever_the_umask(workspace: Path) -> None:
    # A caller that did not set the private umask (or a filelock that chmods its file to
    # its own default) must still get a lock file nobody else can read.
    previous = os.umask(0o022)
    held = MemoryCommandLock(WorkspacePaths(workspace))
    try:
        assert held.acquire()
        assert stat.S_IMODE(held.path.stat().st_mode) == 0o600
    finally:
        held.release()
        os.umask(previous)


async def test_every_lock_file_a_running_bot_makes_is_its_users_only_whatever_the_umask(
    workspace: Path,
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    """Only the memory command's lock was made 0600 whatever the umask; the others took
    filelock's default mode (0644 under a 022 umask, or always with an older filelock)."""
    previous = os.umask(0o022)
    paths = WorkspacePaths(workspace)
    # What `mnemobot run` holds: the workspace's lock, or a replica's.
    guards = [
        WorkspaceGuard(paths, paths.run_lock),
        WorkspaceGuard(paths, paths.delivery / ".replica-a.lock"),
    ]
    try:
        for guard in guards:
            assert guard.acquire()
        bot = await start_bot()
        # MEMORY.md is written under its lock, and maintenance runs under the scope's.
        openai_server.script(
            tool_call("memory", {"operation": "add", "content": "I live in Lisbon"}),
            tool_call("memory", {"operation": "write_file", "content": "Lives in Lisbon"}),
            tool_call("memory", {"operation": "forget", "query": "Lisbon"}),
            reply("Noted."),
        )
        telegram.send_text("I live in Lisbon", chat_id=41)
        await telegram.wait_for_messages_async(41, 1, timeout=30)
        await bot.app.maintenance.maintain("telegram:41")
        locks = {
            str(path.relative_to(workspace)): stat.S_IMODE(path.stat().st_mode)
            for path in workspace.rglob("*.lock")
        }
    finally:
        for guard in guards:
            guard.release()
        os.umask(previous)
    assert {
        ".run.lock",
        "delivery/.replica-a.lock",
        "sessions/telegram:41.lock",
        "memory/telegram:41/.MEMORY.md.lock",
        "memory/telegram:41/.maintenance.lock",
    } <= set(locks)
    assert {path: mode for path, mode in locks.items() if mode != 0o600} == {}
