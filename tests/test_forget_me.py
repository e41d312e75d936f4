"""/forget_me and /export in a chat, `mnemobot memory export|erase` for operators."""

from __future__ import annotations

import io
import re
import signal
import subprocess
import sys
import time
import zipfile
from datetime import UTC
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_replica_app
from mnemobot.bot.cli.main import main
from mnemobot.bot.delivery.replicas import open_replicas
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import AppFactory, ask, make_settings, subprocess_env, write_runtime_config
from tests.crash_points import start_to_crash
from tests.replicas_harness import redis_url
from tests.telegram_harness import telegram

__all__ = ["redis_url", "telegram"]  # fixtures used by name below

CHAT = ChatRef("telegram", "3003", user_id="3003", user_name="Cy")
OTHER = ChatRef("telegram", "4004", user_id="4004", user_name="Di")


def files_with(workspace: Path, text: bytes) -> list[Path]:
    """The files holding `text`; a number only as a number of its own: the workspace's
    random hex ids hold a given four digits once in a few hundred runs."""
    found = re.compile(
        (rb"(?<![0-9a-f])%s(?![0-9a-f])" if text.isdigit() else rb"%s") % re.escape(text)
    )
    return [p for p in workspace.rglob("*") if p.is_file() and found.search(p.read_bytes())]


async def test_export_then_forget_me_with_confirmation(
    app: App, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await ask(app, chat=CHAT, text="My favourite colour is vermilion.")
    await ask(app, chat=OTHER, text="My favourite colour is vermilion too.")

    caplog.set_level("INFO", logger="mnemobot.bot.turn.forget_me")
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
    # What was removed, file by file, is the operator's (the log), never the chat's.
    assert done == "Erased. I no longer remember anything of this chat."
    assert "sessions/telegram:3003.json" in caplog.text
    left = files_with(workspace, b"vermilion")
    assert left and all("4004" in str(path) for path in left), left
    assert app.assistant.session(CHAT).messages == []


async def test_forget_me_says_the_shared_files_folder_was_left(
    make_app: AppFactory, workspace: Path
) -> None:
    app = make_app({"files": {"shared": True}})
    shared = workspace / "files" / "shared" / "team-plan.txt"
    shared.parent.mkdir(parents=True)
    shared.write_text("everyone's plan")
    await ask(app, chat=CHAT, text="My favourite colour is vermilion.")
    await app.commands.run(CHAT, ParsedCommand("forget_me", ""))
    done = await app.commands.run(CHAT, ParsedCommand("forget_me", "confirm"))
    assert done == (
        "Erased. I no longer remember anything of this chat. "
        "The files folder every chat shares was left as it is."
    )
    assert shared.read_text() == "everyone's plan"
    # Chinese runs its sentences on without a space.
    chinese = ChatRef("telegram", "4004", user_id="4004", user_name="Di", language="zh-hans")
    await ask(app, chat=chinese, text="我喜欢绿茶。")
    asked = await app.commands.run(chinese, ParsedCommand("forget_me", ""))
    assert "）所有聊天共用的文件夹保持原样" in asked, asked
    done = await app.commands.run(chinese, ParsedCommand("forget_me", "confirm"))
    assert done.endswith("。所有聊天共用的文件夹保持原样。"), done


async def test_forget_me_confirm_unasked_only_asks(app: App) -> None:
    """A typed-ahead "/forget_me confirm" cannot erase a chat: it asks first."""
    await ask(app, chat=CHAT, text="My favourite colour is vermilion.")
    answer = await app.commands.run(CHAT, ParsedCommand("forget_me", "confirm"))
    assert "send /forget_me confirm" in answer


def test_memory_cli_export_and_erase(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = WorkspaceMemory.open(workspace)
    memory.record.record_turn(
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
    WorkspaceMemory.open(workspace).record.record_turn(
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


CRASH_CHAT = 9001
# `mnemobot run`, killed as it is about to remove the folder named by its argument.
RUN_UNTIL_RMTREE = """
arm(inside=sys.argv[1])
from mnemobot.bot.cli.main import main
from mnemobot.bot.delivery.replicas import open_replicas
raise SystemExit(main(["run"]))
"""


def bot_env(workspace: Path, telegram: TelegramServer, llm: FakeOpenAIServer) -> dict[str, str]:
    return {
        "BOT_WORKSPACE": str(workspace),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": llm.base_url,
        "TELEGRAM_BOT_TOKEN": telegram.token,
        "TELEGRAM_API_BASE_URL": telegram.base_url,
        "TELEGRAM_ALLOWED_USERS": "*",
        "BOT_LOG_LEVEL": "WARNING",
    }


def say_and_wait(telegram: TelegramServer, text: str, answers: int) -> str:
    telegram.send_text(text, chat_id=CRASH_CHAT)
    return telegram.wait_for_messages(CRASH_CHAT, answers, timeout=60)[-1]["plain_text"]


@pytest.mark.slow
def test_a_forget_me_cut_by_a_crash_is_finished_after_the_restart_and_the_user_told(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"telegram": {"streaming": "off"}})
    env = bot_env(workspace, telegram, openai_server)
    folder = workspace / "files" / f"telegram:{CRASH_CHAT}"
    openai_server.script(
        tool_call("files", {"operation": "write", "path": "fridge.txt", "content": "code 4471"}),
        reply("Kept: the fridge code is 4471."),
    )
    bot = start_to_crash(RUN_UNTIL_RMTREE, "before-rmtree", str(folder), env=env, cwd=workspace)
    assert "4471" in say_and_wait(telegram, "my fridge code is 4471, keep it in a file", 1)
    assert "/forget_me confirm" in say_and_wait(telegram, "/forget_me", 2)
    telegram.send_text("/forget_me confirm", chat_id=CRASH_CHAT)
    bot.wait(timeout=60)
    assert bot.returncode == -signal.SIGKILL, bot.stderr.read() if bot.stderr else ""
    # Killed mid-erasure: the session and memory are gone, the files and journals are not.
    assert not (workspace / "memory" / f"telegram:{CRASH_CHAT}").exists()
    assert (folder / "fridge.txt").exists()
    assert files_with(workspace / "delivery", b"4471")

    bot = subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(**env),
        cwd=workspace,
    )
    try:
        told = telegram.wait_for_messages(CRASH_CHAT, 3, timeout=60)[-1]["plain_text"]
    finally:
        bot.send_signal(signal.SIGTERM)
        _, err = bot.communicate(timeout=30)
    assert bot.returncode == 0, err
    # The confirmation, handed in again after the restart, finished the erasure and said so.
    assert told.startswith("Erased.") and "cut short by a restart" in told, told
    # What was removed, file by file, is the operator's log's, not the answer's.
    assert "files/" not in told and not folder.exists()
    assert files_with(workspace, b"4471") == []
    assert len(telegram.sent_messages(CRASH_CHAT)) == 3


async def test_a_forget_me_asked_on_one_replica_is_confirmed_on_another(
    workspace: Path, openai_server: FakeOpenAIServer, redis_url: str
) -> None:
    settings = make_settings(workspace, openai_server, bot_redis_url=redis_url)
    started = [open_replicas(redis_url) for _ in range(2)]
    first, second = (build_replica_app(settings, replicas) for replicas in started)
    try:
        # (A turn on a replica needs the chat's lease: memory is written straight here.)
        first.memory.record.record_turn(
            scope=CHAT.key,
            user_text="My favourite colour is vermilion.",
            assistant_text="Noted.",
            at=time.time(),
            config=MemoryConfig(),
            tz=UTC,
        )
        asked = await first.commands.run(CHAT, ParsedCommand("forget_me", ""))
        assert "/forget_me confirm" in asked
        # The chat's next message went to the other replica: the ask counts there too.
        done = await second.commands.run(CHAT, ParsedCommand("forget_me", "confirm"))
        assert done.startswith("Erased."), done
        assert files_with(workspace, b"vermilion") == []
    finally:
        for app in (first, second):
            await app.close()
        for replicas in started:
            await replicas.close()


CHAT_UNTIL_RMTREE = """
arm(inside=sys.argv[1])
from mnemobot.bot.cli.main import main
raise SystemExit(main(["chat"]))
"""


@pytest.mark.slow
def test_the_console_finishes_a_forget_me_cut_by_a_crash_when_it_starts(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    env = {
        "BOT_WORKSPACE": str(workspace),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": openai_server.base_url,
    }
    folder = workspace / "files" / "console:local"
    openai_server.script(
        tool_call("files", {"operation": "write", "path": "safe.txt", "content": "code 5582"}),
        reply("Kept."),
    )
    console = start_to_crash(
        CHAT_UNTIL_RMTREE, "before-rmtree", str(folder), env=env, cwd=workspace
    )
    lines = "my safe code is 5582, keep it in a file\n/forget_me\n/forget_me confirm\n"
    _, err = console.communicate(lines, timeout=120)
    assert console.returncode == -signal.SIGKILL, err
    assert (folder / "safe.txt").exists()

    again = subprocess.run(
        [sys.executable, "-m", "mnemobot", "chat"],
        input="",
        capture_output=True,
        text=True,
        env=subprocess_env(**env),
        cwd=workspace,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert "cut short by a restart" in again.stdout
    assert files_with(workspace, b"5582") == []
