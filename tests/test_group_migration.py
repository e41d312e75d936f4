"""A group upgraded to a supergroup keeps its memory, its conversation and its replies."""

from __future__ import annotations

import threading
import time
from datetime import UTC
from pathlib import Path

from mnemobot.bot.tuning import Tuning
from mnemobot.config.runtime import MemoryConfig
from mnemobot.conversation.pending_flushes import PendingFlushes
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.scope_move import move_scope
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    context_text,
    gated,
    reply,
    system_text,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

GROUP, SUPERGROUP, USER = -42, -1000042, 31


async def test_an_upgraded_group_keeps_memory_and_session_and_gets_its_pending_reply(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    telegram.send_text(
        "@mnemo_test_bot my favourite cheese is gruyere", chat_id=GROUP, user_id=USER,
        chat_type="group",
    )  # fmt: skip
    await telegram.wait_for_messages_async(GROUP, 1)

    release = threading.Event()
    openai_server.script(gated(release, reply("an answer written during the upgrade")))
    telegram.send_text(
        "@mnemo_test_bot a slow question", chat_id=GROUP, user_id=USER, chat_type="group"
    )
    await openai_server.wait_for_requests_async(2)
    telegram.upgrade_group(GROUP, SUPERGROUP, user_id=USER)
    release.set()
    # Telegram refuses the reply for the old id: it goes to the supergroup.
    [moved_reply] = await telegram.wait_for_messages_async(SUPERGROUP, 1)
    assert moved_reply["plain_text"] == "an answer written during the upgrade"

    telegram.send_text(
        "@mnemo_test_bot which cheese do I like?", chat_id=SUPERGROUP, user_id=USER,
        chat_type="supergroup",
    )  # fmt: skip
    await telegram.wait_for_messages_async(SUPERGROUP, 2)
    request = openai_server.last_request()

    assert "gruyere" in context_text(request) or "gruyere" in str(user_texts(request))
    # A group's messages reach the model under their writer's name.
    assert [text.partition("\n\n[")[0] for text in user_texts(request)] == [
        "Test: my favourite cheese is gruyere",
        "Test: a slow question",
        "Test: which cheese do I like?",
    ]
    assert (workspace / "memory" / f"telegram:{SUPERGROUP}").is_dir()
    assert not (workspace / "memory" / f"telegram:{GROUP}").exists()
    assert not (workspace / "sessions" / f"telegram:{GROUP}.json").exists()
    # Nothing was answered with "I can only read text" for the service messages.
    assert len(telegram.sent_messages(GROUP)) == 1
    assert len(telegram.sent_messages(SUPERGROUP)) == 2


def test_moving_into_a_scope_that_already_has_memory_merges_both(workspace: Path) -> None:
    memory = WorkspaceMemory.open(workspace)
    for scope, text, ref in (
        ("telegram:-42", "my favourite cheese is gruyere", "tg:5"),
        ("telegram:-1000042", "my favourite bread is rye", "tg:2"),
    ):
        memory.record.record_turn(
            scope=scope, user_text=text, assistant_text="ok", at=time.time(),
            config=MemoryConfig(), tz=UTC, message_refs=[ref],
        )  # fmt: skip
    memory.close()

    moved = move_scope(workspace, "telegram:-42", "telegram:-1000042", lambda r: r + "@old")

    assert moved > 0 and not (workspace / "memory" / "telegram:-42").exists()
    store = WorkspaceMemory.open(workspace).scopes.store("telegram:-1000042")
    contents = " ".join(item.content for item in store.items.values())
    assert "gruyere" in contents and "rye" in contents
    assert {item.scope for item in store.items.values()} == {"telegram:-1000042"}
    refs = {ref for item in store.items.values() for ref in item.references}
    assert {"tg:5@old", "tg:2"} <= refs and "tg:5" not in refs


async def test_a_flush_left_for_later_follows_the_group_to_its_supergroup(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # The bot stopped while the group's compacted messages waited for their memory flush.
    sessions = workspace / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    said = "2026-11-01T10:00:00Z"
    (sessions / f"telegram:{GROUP}.log.jsonl").write_text(
        f'{{"role": "user", "content": "Test: our office moved to Lisbon", "at": "{said}"}}\n'
    )
    PendingFlushes(sessions).note_last(f"telegram:{GROUP}", 1, said)

    def model(body: dict[str, object]) -> object:
        if system_text(body).startswith("You keep an assistant's long-term memory"):
            return reply("- The group's office is in Lisbon")
        return reply("hello")

    openai_server.responder = model  # type: ignore[assignment]
    bot = await start_bot(tuning=Tuning(background_quiet_seconds=0))
    telegram.upgrade_group(GROUP, SUPERGROUP, user_id=USER)
    telegram.send_text(
        "@mnemo_test_bot hi", chat_id=SUPERGROUP, user_id=USER, chat_type="supergroup"
    )
    await telegram.wait_for_messages_async(SUPERGROUP, 1)
    assert bot.app.maintenance is not None
    await bot.app.maintenance.settled()
    flushes = [r for r in openai_server.requests if "CONVERSATION EXCERPT" in str(r)]
    assert flushes and "our office moved to Lisbon" in str(flushes[-1])
    assert not (sessions / "pending-flushes" / f"telegram:{SUPERGROUP}.json").exists()
