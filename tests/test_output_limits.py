"""A model that talks without end cannot flood the chat, the session, the outbox or memory."""

from __future__ import annotations

import json
from pathlib import Path

from mnemobot.bot.app import build_app
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call, tool_calls
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import ask, make_settings
from tests.telegram_harness import StartBot, session_messages, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 7007


async def test_a_five_million_character_answer_is_cut_sent_in_five_messages_and_a_file(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.script(reply("All work and no play. " * 230_000))  # 5.06 million characters
    await start_bot()
    telegram.send_text("write me a novel", chat_id=USER)
    [document] = await telegram.wait_for_documents_async(USER, 1, timeout=30)
    texts = telegram.sent_messages(USER)

    assert len(texts) == 5
    assert document["filename"] == "answer.md" and "whole answer" in document["caption"]
    whole = document["data"].decode()
    assert 100_000 < len(whole) < 101_000 and "the most one answer may have" in whole
    assert whole.startswith(texts[0]["plain_text"][:1000])
    [_, answer] = session_messages(workspace, f"telegram:{USER}")
    assert answer["content"] == whole
    assert (workspace / "sessions" / f"telegram:{USER}.json").stat().st_size < 200_000
    assert (workspace / "delivery" / "telegram-outbox.jsonl").stat().st_size < 400_000


async def test_huge_memory_items_are_refused_and_huge_tool_arguments_are_kept_cut(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    huge = "x" * 900_000
    openai_server.script(
        tool_calls(
            [
                tool_call("memory", {"operation": "add", "content": huge}),
                tool_call("files", {"operation": "write", "path": "big.txt", "content": huge}),
            ]
        ),
        reply("Done."),
    )
    app = build_app(make_settings(workspace, openai_server))
    try:
        assert await ask(app, "remember this and save it") == "Done."
        items = app.memory.scopes.store("console:local").items.values()
    finally:
        await app.close()

    tool_results = [m["content"] for m in openai_server.last_request()["messages"][-2:]]
    assert "one memory item holds at most 4,000" in tool_results[0]
    assert tool_results[1].startswith("wrote")  # the tool itself got the whole argument
    assert max(len(item.content) for item in items) < 5_000
    assert (workspace / "files" / "console:local" / "big.txt").stat().st_size == 900_000
    session = (workspace / "sessions" / "console:local.json").read_text()
    assert len(session) < 100_000
    calls = json.loads(session)["messages"][1]["tool_calls"]
    stored = json.loads(calls[1]["function"]["arguments"])
    assert "kept cut" in stored["cut"] and stored["start"].startswith('{"operation"')
