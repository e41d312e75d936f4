"""/forget_me and /export in a chat, `mnemobot memory export|erase` for operators."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.cli.main import main
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.service import MemoryService
from mnemobot.systems.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import ask, make_settings, write_runtime_config

CHAT = ChatRef("telegram", "3003", user_id="3003", user_name="Cy")
OTHER = ChatRef("telegram", "4004", user_id="4004", user_name="Di")


@pytest.fixture
async def app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[App]:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    built = build_app(make_settings(workspace, openai_server))
    yield built
    await built.close()


def files_with(workspace: Path, text: bytes) -> list[Path]:
    return [p for p in workspace.rglob("*") if p.is_file() and text in p.read_bytes()]


async def test_export_then_forget_me_with_confirmation(app: App, workspace: Path) -> None:
    await ask(app, chat=CHAT, text="My favourite colour is vermilion.")
    await ask(app, chat=OTHER, text="My favourite colour is vermilion too.")

    exported = await app.commands.reply(CHAT, ParsedCommand("export", ""))
    assert exported.attachment is not None
    assert exported.attachment.filename.endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(exported.attachment.data)) as archive:
        names = archive.namelist()
        everything = b"".join(archive.read(name) for name in names)
    assert any(name.startswith("memory/items/") for name in names)
    assert b"vermilion" in everything

    first = await app.commands.run(CHAT, ParsedCommand("forget_me", ""))
    assert "/forget_me confirm" in first and files_with(workspace, b"vermilion")
    done = await app.commands.run(CHAT, ParsedCommand("forget_me", "confirm"))
    assert "Erased" in done and "telegram:3003" in done
    left = files_with(workspace, b"vermilion")
    assert left and all("4004" in str(path) for path in left), left
    assert app.assistant.session(CHAT).messages == []


async def test_forget_me_confirm_unasked_only_asks(app: App) -> None:
    """A typed-ahead "/forget_me confirm" cannot erase a chat: it asks first."""
    await ask(app, chat=CHAT, text="My favourite colour is vermilion.")
    answer = await app.commands.run(CHAT, ParsedCommand("forget_me", "confirm"))
    assert "send /forget_me confirm" in answer


def test_memory_cli_export_and_erase(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = MemoryService(workspace)
    memory.record_turn(
        scope="console:local",
        user_text="My favourite colour is teal",
        assistant_text="Noted.",
        at=time.time(),
        config=MemoryConfig(),
        tz=UTC,
    )
    sessions = workspace / "sessions"
    sessions.mkdir(exist_ok=True)
    (sessions / "console:local.log.jsonl").write_text('{"role":"user","content":"teal"}\n')
    out = workspace / "out.zip"
    monkeypatch.setenv("BOT_WORKSPACE", str(workspace))
    assert main(["memory", "export", "--chat", "console:local", "--out", str(out)]) == 0
    with zipfile.ZipFile(out) as archive:
        assert b"teal" in b"".join(archive.read(name) for name in archive.namelist())
    out.unlink()
    assert main(["memory", "erase", "--chat", "console:local"]) == 0
    assert "memory/console:local/" in capsys.readouterr().out
    assert files_with(workspace, b"teal") == []


def test_memory_cli_names_any_chat_and_reads_the_shared_scope_when_all_chats_share(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_runtime_config(workspace, {"memory": {"scope": "global"}})
    MemoryService(workspace).record_turn(
        scope="global",
        user_text="My favourite colour is teal",
        assistant_text="Noted.",
        at=time.time(),
        config=MemoryConfig(),
        tz=UTC,
    )
    monkeypatch.setenv("BOT_WORKSPACE", str(workspace))
    assert main(["memory", "search", "--chat", "telegram:5", "colour"]) == 0
    shown = capsys.readouterr()
    assert "teal" in shown.out
    assert "telegram:5 uses scope 'global'" in shown.err
