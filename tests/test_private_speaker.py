"""A private chat has one person, whatever name they go by; a group keeps its members apart.

Found live: user 7002 renamed herself on Telegram from Olga to Lucía. Her facts were kept
under the name she had when she said them ("speaker:olga"), and "Me mudé a Sevilla", said
as Lucía, replaced nothing Olga had said: the next request listed two current homes of one
person. Memory written under the old name (as an existing user's store holds it) counts
as hers; a forwarded message stays its author's words, and in a group each member's
facts stay their own.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, context_text, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram
from tests.test_flush_restatements import block_of

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 7002
GROUP = -9001
ALEX, BORIS = 21, 22


def memory_lines(request: dict[str, object], word: str) -> list[str]:
    """The items of the request's memory block that name `word`, a line each."""
    text = context_text(request)
    memory = text[text.find("# Memory") :] if "# Memory" in text else ""
    return [line for line in memory.splitlines() if line.startswith("- ") and word in line]


def durable_facts(workspace: Path, scope: str, word: str) -> list[dict[str, object]]:
    items: dict[str, dict[str, object]] = {}
    for path in sorted((workspace / "memory" / scope).rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip() and "id" in (item := json.loads(line)):
                items[str(item["id"])] = item
    return [
        item
        for item in items.values()
        if item.get("layer") == "SEMANTIC" and word in str(item["content"])
    ]


def is_current(item: dict[str, object]) -> bool:
    return "validTo" not in item and "supersededBy" not in item


async def test_a_renamed_user_moves_once_and_a_forward_stays_its_authors(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    telegram.send_text("I live in Valencia.", chat_id=USER, first_name="Olga")
    await telegram.wait_for_messages_async(USER, 1)
    written = int(time.time()) - 5 * 86_400
    telegram.send_forward("I live in Paris.", chat_id=USER, author="Alice", date=written)
    await telegram.wait_for_messages_async(USER, 2)
    telegram.send_text("I moved to Seville.", chat_id=USER, first_name="Lucía")
    await telegram.wait_for_messages_async(USER, 3)
    telegram.send_text("/new", chat_id=USER, first_name="Lucía")
    telegram.send_text("where do I live?", chat_id=USER, first_name="Lucía")
    await telegram.wait_for_messages_async(USER, 5)

    asked = openai_server.last_request()
    seville, valencia = memory_lines(asked, "Seville"), memory_lines(asked, "Valencia")
    # One home: Seville, current; Valencia (said as Olga) only as the earlier one.
    assert seville and all("earlier" not in line for line in seville), seville
    assert all("earlier, until" in line for line in valencia), valencia
    scope = f"telegram:{USER}"
    assert [is_current(item) for item in durable_facts(workspace, scope, "Valencia")] == [False]
    assert [is_current(item) for item in durable_facts(workspace, scope, "Seville")] == [True]
    # Alice's home is hers: the user's move leaves it as it was.
    paris = durable_facts(workspace, scope, "Paris")
    assert paris and all(is_current(item) for item in paris)
    assert all("earlier" not in line for line in memory_lines(asked, "Paris"))


async def test_a_fact_the_assistant_notes_after_a_rename_replaces_the_old_names(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    telegram.send_text("I live in Valencia.", chat_id=USER, first_name="Olga")
    await telegram.wait_for_messages_async(USER, 1)
    openai_server.script(
        tool_call("memory", {"operation": "add", "content": "I live in Seville now."}),
        reply("Noted."),
    )
    telegram.send_text("Remember where the postcard says I live.", chat_id=USER, first_name="Lucía")
    await telegram.wait_for_messages_async(USER, 2)

    scope = f"telegram:{USER}"
    assert [is_current(item) for item in durable_facts(workspace, scope, "Valencia")] == [False]
    assert any(is_current(item) for item in durable_facts(workspace, scope, "Seville"))


async def test_a_renamed_users_newer_standing_request_replaces_the_older(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    telegram.send_text("Always answer me in Spanish.", chat_id=USER, first_name="Olga")
    await telegram.wait_for_messages_async(USER, 1)
    telegram.send_text("From now on, always answer me in German.", chat_id=USER, first_name="Lucía")
    await telegram.wait_for_messages_async(USER, 2)
    assert "Spanish" in block_of(openai_server.last_request())
    telegram.send_text("hello", chat_id=USER, first_name="Lucía")
    await telegram.wait_for_messages_async(USER, 3)

    block = block_of(openai_server.last_request())
    assert "German" in block and "Spanish" not in block, block


async def test_group_members_homes_stay_their_own(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # What a private chat's one person is must not reach a group: Boris's move is his.
    await start_bot(allowed=f"{ALEX},{BORIS}")
    said = [
        (ALEX, "Alex", "I live in Berlin."),
        (BORIS, "Boris", "I live in Lisbon."),
        (BORIS, "Boris", "I moved to Paris."),
        (ALEX, "Alex", "/new"),
        (ALEX, "Alex", "where do I live?"),
    ]
    for count, (user, name, text) in enumerate(said, start=1):
        telegram.send_text(
            text if text.startswith("/") else f"@mnemo_test_bot {text}",
            chat_id=GROUP,
            user_id=user,
            first_name=name,
            chat_type="supergroup",
        )
        await telegram.wait_for_messages_async(GROUP, count)

    scope = f"telegram:{GROUP}"
    assert [is_current(item) for item in durable_facts(workspace, scope, "Berlin")] == [True]
    assert [is_current(item) for item in durable_facts(workspace, scope, "Lisbon")] == [False]
    assert [is_current(item) for item in durable_facts(workspace, scope, "Paris")] == [True]
    berlin = memory_lines(openai_server.last_request(), "Berlin")
    assert berlin and all("earlier" not in line for line in berlin), berlin
