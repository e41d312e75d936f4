"""A compaction's flush restating what memory already keeps adds nothing beside it.

Found live: "Always include version numbers when I ask about libraries" was kept as its
speaker's standing preference; `/compact` later flushed the same sentence as a fact of
the project, a second item beside the first, and every later request showed it twice
(the standing block, and the pack as a fact "noted from the conversation"). The real bot
on the fake Bot API and the fake model server, real files; `mnemobot memory search`
reads what was kept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.tuning import Tuning
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, speaker_tag
from mnemobot.memory.write.restatements import says_the_same
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    echo_responder,
    reply,
    system_text,
    tool_call,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot
from tests.telegram_harness import RunningBot, StartBot, start_bot, telegram
from tests.test_compaction import is_flush_request, is_summary_request
from tests.test_schedule_clock import say

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

CHAT = 915
SCOPE = f"telegram:{CHAT}"
VERSIONS = "Always include version numbers when I ask about libraries."
# Compaction only by /compact; consolidation off, so a background run never takes a
# scripted model answer meant for a turn.
RUNTIME = {
    "llm": {"maxRetries": 0},
    "compaction": {"enabled": False},
    "memory": {"consolidation": {"enabled": False}},
    "permissions": {"compact": "members", "editMemory": "members"},
}


# Background work goes as soon as the server is free: the flush follows /compact's reply
# on this local (one-slot) server.
NO_QUIET_SPELL = Tuning(background_quiet_seconds=0)


async def flushed(bot: RunningBot) -> None:
    """Once the flush that follows a compaction is done."""
    assert bot.app.maintenance is not None
    await bot.app.maintenance.settled()


def flushing(*bullets: str) -> Callable[[dict[str, Any]], Step]:
    """The model: the flush answers `bullets`, the summary a short one, a turn an echo."""

    def model(request: dict[str, Any]) -> Step:
        if is_flush_request(request):
            return reply("\n".join(f"- {bullet}" for bullet in bullets))
        if is_summary_request(request):
            return reply("SESSION INTENT: talk\nSUMMARY: talk\nARTIFACTS: none\nNEXT STEPS: none")
        return echo_responder(request)

    return model


def search(workspace: Path, query: str) -> list[dict[str, Any]]:
    """`mnemobot memory search --json` of the chat, as an operator runs it."""
    done = run_mnemobot(
        "memory", "search", query, "--chat", SCOPE, "--json", BOT_WORKSPACE=str(workspace)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found: list[dict[str, Any]] = orjson.loads(done.stdout)
    return found


def durable_lines(workspace: Path, scope: str = SCOPE) -> list[dict[str, Any]]:
    """The live durable items of the chat as the JSONL files hold them (last version of
    each id, tombstones applied)."""
    latest: dict[str, dict[str, Any]] = {}
    for name in ("semantic.jsonl", "procedural.jsonl"):
        path = workspace / "memory" / scope / "items" / name
        if not path.exists():
            continue
        for line in path.read_bytes().splitlines():
            record = orjson.loads(line)
            latest[record["id"]] = record
    return [r for r in latest.values() if not r.get("tombstone")]


def stating(records: list[dict[str, Any]], words: str) -> list[dict[str, Any]]:
    return [r for r in records if words.lower() in r["content"].lower()]


def request_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


async def test_a_flushed_standing_preference_is_kept_once_and_shown_once(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    bot = await start_bot(tuning=NO_QUIET_SPELL, runtime=RUNTIME)
    openai_server.responder = flushing(VERSIONS, "The parser uses httpx and lxml.")
    await say(telegram, VERSIONS, CHAT)
    await say(telegram, "The parser uses httpx and lxml.", CHAT)
    await say(telegram, "Let's look at the build next.", CHAT)
    assert (await say(telegram, "/compact 1", CHAT)).startswith("Compacted")
    await flushed(bot)
    assert any(is_flush_request(r) for r in openai_server.requests)

    await say(telegram, "Which libraries does the parser use?", CHAT)
    sent = request_text(openai_server.last_request())
    assert "version numbers" in system_text(openai_server.last_request())
    assert sent.lower().count("include version numbers") == 1, sent
    await bot.shutdown()

    kept = stating(durable_lines(workspace), "include version numbers")
    assert len(kept) == 1, kept
    assert kept[0]["type"] == "PREFERENCE" and "standing" in kept[0]["tags"]
    found = search(workspace, "version numbers libraries")
    durable = [hit for hit in found if hit["layer"] != "EPISODIC"]
    assert len(stating(durable, "include version numbers")) == 1, found
    # The new fact of the flush is kept (it was new).
    assert stating(durable_lines(workspace), "httpx and lxml")


def block_of(request: dict[str, Any]) -> str:
    """The standing block of a request's system prompt ("" when it carries none)."""
    system = system_text(request)
    if "# What people in this chat asked for themselves" not in system:
        return ""
    return system.split("# What people in this chat asked for themselves", 1)[1].split("\n#", 1)[0]


@pytest.mark.parametrize("erased", [False, True], ids=["erasure-pending", "erased"])
async def test_a_forgotten_preference_never_comes_back_through_a_flush(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
    erased: bool,
) -> None:
    # The flush's model answers with the forgotten words anyway (a small model repeats
    # what it half remembers): the forgetting holds all the same, before the files are
    # erased and after.
    bot = await start_bot(tuning=NO_QUIET_SPELL, runtime=RUNTIME)
    openai_server.responder = flushing(VERSIONS, "The parser uses httpx and lxml.")
    await say(telegram, VERSIONS, CHAT)
    await say(telegram, "The parser uses httpx and lxml.", CHAT)
    openai_server.script(
        tool_call("memory", {"operation": "forget", "query": "version numbers libraries"}),
        reply("Forgotten."),
    )
    await say(telegram, "forget what I said about version numbers", CHAT)
    assert bot.app.maintenance is not None
    if erased:
        await bot.app.maintenance.maintain(SCOPE)
        assert bot.app.memory.forget.scopes_to_erase() == []
    await say(telegram, "Let's look at the build next.", CHAT)
    assert (await say(telegram, "/compact 1", CHAT)).startswith("Compacted")
    await flushed(bot)
    assert any(is_flush_request(r) for r in openai_server.requests)

    await say(telegram, "Which libraries does the parser use?", CHAT)
    assert "include version numbers" not in request_text(openai_server.last_request()).lower()
    await bot.shutdown()
    assert stating(durable_lines(workspace), "version numbers") == []
    assert stating(search(workspace, "version numbers libraries"), "include version numbers") == []
    notes = "".join(p.read_text() for p in (workspace / "memory" / SCOPE).glob("????-??-??.md"))
    assert "include version numbers" not in notes.lower()
    assert stating(durable_lines(workspace), "httpx and lxml")


async def test_a_changed_preference_flushed_after_the_change_stays_replaced(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    french = "Always answer in French when I ask about recipes."
    german = "Always answer in German when I ask about recipes."
    bot = await start_bot(tuning=NO_QUIET_SPELL, runtime=RUNTIME)
    # The flush reads both messages and keeps both, the older first.
    openai_server.responder = flushing(french, german)
    await say(telegram, french, CHAT)
    await say(telegram, german, CHAT)
    await say(telegram, "Let's look at the build next.", CHAT)
    assert (await say(telegram, "/compact 1", CHAT)).startswith("Compacted")
    await flushed(bot)

    await say(telegram, "Which recipes can I cook with rye flour?", CHAT)
    request = openai_server.last_request()
    assert "German" in block_of(request) and "French" not in block_of(request)
    # Nowhere current: at most shown as earlier, never as a fact of its own.
    facts = [line for line in request_text(request).splitlines() if line.startswith("- Fact")]
    assert all("earlier" in line for line in facts if "in French" in line), facts
    await bot.shutdown()

    kept = durable_lines(workspace)
    [old] = stating(kept, "answer in French")
    assert old.get("supersededBy"), old
    [new] = stating(kept, "answer in German")
    assert not new.get("supersededBy") and "standing" in new["tags"]
    hits = stating(search(workspace, "answer French recipes"), "answer in French")
    durable = [hit for hit in hits if hit["layer"] != "EPISODIC"]
    assert len(durable) == 1 and durable[0]["earlier"], hits


GROUP = -4015
ALEX, BORIS = 31, 32


async def test_in_a_group_the_same_words_stay_each_members_own(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    bot = await start_bot(tuning=NO_QUIET_SPELL, runtime=RUNTIME, allowed=f"{ALEX},{BORIS}")
    openai_server.responder = flushing(VERSIONS, f"Boris: {VERSIONS}")
    for count, (user, name) in enumerate([(ALEX, "Alex"), (BORIS, "Boris")], start=1):
        telegram.send_text(
            f"@mnemo_test_bot {VERSIONS}",
            chat_id=GROUP,
            user_id=user,
            first_name=name,
            chat_type="supergroup",
        )
        await telegram.wait_for_messages_async(GROUP, count)
    telegram.send_text(
        "/compact 1", chat_id=GROUP, user_id=ALEX, first_name="Alex", chat_type="supergroup"
    )
    sent = await telegram.wait_for_messages_async(GROUP, 3)
    assert str(sent[2]["plain_text"]).startswith("Compacted"), sent[2]
    await flushed(bot)
    assert any(is_flush_request(r) for r in openai_server.requests)
    telegram.send_text(
        "@mnemo_test_bot Which libraries does the parser use?",
        chat_id=GROUP,
        user_id=BORIS,
        first_name="Boris",
        chat_type="supergroup",
    )
    await telegram.wait_for_messages_async(GROUP, 4)
    request = openai_server.last_request()
    lines = [line for line in block_of(request).splitlines() if "version numbers" in line]
    # Said within a second of each other: either may come first.
    assert sorted(line.split(",")[0] for line in lines) == ["- Alex", "- Boris"], lines
    # Nor again in the pack, as a fact the flush noted.
    pack = request_text(request).split("[Context added by the bot", 1)[-1]
    assert "Fact (noted from the conversation" not in pack, pack
    await bot.shutdown()

    scope = f"telegram:{GROUP}"
    kept = [
        r
        for r in durable_lines(workspace, scope)
        if "include version numbers" in r["content"].lower()
    ]
    assert sorted(r["content"].split(":")[0] for r in kept) == ["Alex", "Boris"], kept
    assert all("standing" in r["tags"] for r in kept)


async def test_a_preference_the_model_also_saves_as_a_fact_is_kept_once(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # The prompt asks the model to save preferences with the memory tool: in the turn
    # that states one, it saves the same words as a fact, beside the standing item.
    bot = await start_bot(tuning=NO_QUIET_SPELL, runtime=RUNTIME)
    openai_server.script(
        tool_call("memory", {"operation": "add", "content": VERSIONS, "kind": "fact"}),
        reply("Noted."),
    )
    await say(telegram, VERSIONS, CHAT)
    await say(telegram, "hello", CHAT)
    block = block_of(openai_server.last_request())
    assert block.count("include version numbers") == 1, block
    await bot.shutdown()
    [kept] = stating(durable_lines(workspace), "include version numbers")
    assert kept["type"] == "PREFERENCE" and "standing" in kept["tags"], kept
    assert kept["content"].startswith("Test: ")


_WORD = st.sampled_from(["always", "include", "version", "numbers", "when", "I", "ask", "tea"])
_NAME = st.sampled_from(["Ada", "Bob", "Anna Lee"])


def item(content: str, item_type: ItemType, speaker: str | None) -> MemoryItem:
    return MemoryItem(
        id=content,
        layer=Layer.SEMANTIC,
        type=item_type,
        title=content[:80],
        content=content,
        scope="s",
        created_at=0.0,
        updated_at=0.0,
        tags=[speaker_tag(speaker)] if speaker else [],
    )


@given(
    st.lists(_WORD, min_size=1, max_size=8),
    st.sampled_from(list(ItemType)),
    st.sampled_from(list(ItemType)),
    st.one_of(st.none(), _NAME),
    st.one_of(st.none(), _NAME),
    st.booleans(),
    st.sampled_from(["", ".", "!", " ?", "…"]),
)
def test_the_same_words_are_one_statement_of_any_kind_unless_two_people_said_them(
    words: list[str],
    first_type: ItemType,
    second_type: ItemType,
    speaker: str | None,
    flushed_label: str | None,
    shout: bool,
    closing: str,
) -> None:
    said = " ".join(words)
    # Kept: a person's item, labelled and tagged with their name; flushed: a bullet of no
    # one, perhaps naming someone, in other case, spacing and closing punctuation.
    kept = item(f"{speaker}: {said}." if speaker else said, first_type, speaker)
    bullet = "  ".join(said.upper().split()) if shout else said
    flushed = item(
        f"{flushed_label}: {bullet}{closing}" if flushed_label else bullet + closing,
        second_type,
        None,
    )
    two_people = speaker is not None and flushed_label is not None and speaker != flushed_label
    assert says_the_same(kept, flushed) is not two_people
    assert says_the_same(flushed, kept) is says_the_same(kept, flushed)
    # One word more is another statement, whoever said it.
    assert not says_the_same(kept, item(f"{said} coffee", second_type, None))
