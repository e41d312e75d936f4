"""/forget_me erases every trace of a chat: a byte-level grep of the workspace finds none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from filelock import FileLock

from mnemobot.bot.cli.main import main
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry
from mnemobot.bot.schedule.store import FileTaskStore
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat
from mnemobot.config.workspace import WorkspacePaths
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    context_text,
    reply,
    tool_call,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

FORUM = -1009001
OWNER = 21
SECRET = b"quokka"


def files_with(workspace: Path, text: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(workspace))
        for p in workspace.rglob("*")
        if p.is_file() and text in p.read_bytes()
    )


def in_topic(telegram: TelegramServer, text: str, topic: int) -> None:
    telegram.send_text(text, chat_id=FORUM, user_id=OWNER, chat_type="supergroup", thread_id=topic)


async def test_forget_me_in_a_forum_erases_every_topic_file_export_and_journal_line(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO", logger="mnemobot.bot.turn.forget_me")
    await start_bot()
    telegram.set_member_status(FORUM, OWNER, "creator")
    openai_server.script(
        tool_call("files", {"operation": "write", "path": "diary.txt", "content": "met a quokka"}),
        reply("Saved your diary."),
    )
    in_topic(telegram, "@mnemo_test_bot write in my diary that I met a quokka", 5)
    await telegram.wait_for_messages_async(FORUM, 1)
    in_topic(telegram, "@mnemo_test_bot my favourite animal is the quokka", 6)
    await telegram.wait_for_messages_async(FORUM, 2)
    in_topic(telegram, "/export", 5)
    await telegram.wait_for_documents_async(FORUM, 1)
    assert {"files", "sessions", "memory", "delivery"} <= {
        path.split("/")[0] for path in files_with(workspace, SECRET)
    }
    # The zip is compressed: no grep finds the text in it, so it is looked for by name.
    assert len(list((workspace / "exports").glob("*.zip"))) == 1

    in_topic(telegram, "/forget_me", 5)
    in_topic(telegram, "/forget_me confirm", 5)
    sent = await telegram.wait_for_messages_async(FORUM, 4)
    erased = sent[3]["plain_text"]

    # Every member reads the answer: what was removed, file by file, is the operator's log.
    assert erased == "Erased. I no longer remember anything of this chat."
    for removed in (
        f"sessions/telegram:{FORUM}:5.json",
        f"sessions/telegram:{FORUM}:6.json",
        f"memory/telegram:{FORUM}/",
        f"files/telegram:{FORUM}/ (1 file)",
        f"exports/memory-telegram-{FORUM}-",
        "delivery/telegram-inbox.jsonl",
        "delivery/telegram-outbox.jsonl",
    ):
        assert removed in caplog.text and removed not in erased, (removed, caplog.text)
    assert files_with(workspace, SECRET) == []
    assert list((workspace / "exports").glob("*.zip")) == []

    # The other topic's conversation is gone from memory too, not only from its file.
    in_topic(telegram, "@mnemo_test_bot what is my favourite animal?", 6)
    await telegram.wait_for_messages_async(FORUM, 5)
    request = openai_server.last_request()
    assert "quokka" not in str(request["messages"])
    assert "quokka" not in context_text(request)
    assert files_with(workspace, SECRET) == []


def schedule_a_quokka(workspace: Path, key: str) -> None:
    """A task of chat `key` (`telegram:77:3`: a forum topic) in the file store."""
    channel, chat_id, *thread = key.split(":")
    store = FileTaskStore(workspace / "schedule")
    task = Task(
        id=key,
        number=0,
        chat=TaskChat(channel, chat_id, thread_id=thread[0] if thread else None),
        kind="reminder",
        text="feed the quokka",
        schedule=Schedule("once", at=2e9),
        zone="UTC",
        created_at=0.0,
        next_due=2e9,
    )
    asyncio.run(store.add(task, max_per_chat=5))


def test_memory_erase_cli_removes_topics_files_and_journal_lines_and_waits_for_no_bot(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = workspace / "sessions"
    sessions.mkdir()
    for name in ("telegram:77.json", "telegram:77:3.log.jsonl", "telegram:770.json"):
        key = name.split(".")[0]
        (sessions / name).write_text(f'{{"id": "{key}", "content": "a quokka"}}\n')
    (workspace / "files" / "telegram:77").mkdir(parents=True)
    (workspace / "files" / "telegram:77" / "diary.txt").write_text("a quokka")
    inbox = DurableQueue(workspace / "delivery" / "telegram-inbox.jsonl")
    inbox.add([QueuedEntry("u:1", "telegram:77", {"text": "a quokka"}, at=1.0)])
    inbox.add([QueuedEntry("u:2", "telegram:770", {"text": "a quokka"}, at=2.0)])
    inbox.done(["u:1", "u:2"])
    for key in ("telegram:77:3", "telegram:770"):
        schedule_a_quokka(workspace, key)
    monkeypatch.setenv("BOT_WORKSPACE", str(workspace))

    running = FileLock(WorkspacePaths(workspace).run_lock)
    with running:
        assert main(["memory", "erase", "--chat", "telegram:77"]) == 2
    assert "/forget_me" in capsys.readouterr().err
    assert main(["memory", "erase", "--chat", "telegram:77"]) == 0
    out = capsys.readouterr().out
    assert "sessions/telegram:77:3.log.jsonl" in out and "files/telegram:77/" in out
    assert "delivery/telegram-inbox.jsonl: 1 finished entries" in out
    assert "scheduled tasks: 1" in out
    # Chat 770 is another chat, whose key merely starts the same way.
    left = [
        str(p.relative_to(workspace))
        for p in workspace.rglob("*")
        if b"quokka" in (p.read_bytes() if p.is_file() else b"")
    ]
    # (The journal's rewrite also drops the other chat's finished entry: only its id is
    # needed, to recognise a redelivery.)
    assert sorted(left) == ["schedule/telegram:770.json", "sessions/telegram:770.json"]
    assert DurableQueue(workspace / "delivery" / "telegram-inbox.jsonl").seen("u:2")
