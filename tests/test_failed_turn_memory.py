"""What the user said in a turn that got no answer is remembered, once.

The model timing out, a server error, /stop: the user is told in one line, their message
stays in the conversation, and memory (the daily note, the items) holds their words as it
holds any message's, with no reply. So /new (or a conversation compacted or cleared later)
loses nothing they said, and a later run of the same message (handed in again after a
crash) does not write the words a second time.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemobot.bot.app import App
from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot.memory.store.items import ItemType, MemoryItem
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.model_call.request_messages import NO_ANSWER_NOTE
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, error, gated, hang, reply
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import AppFactory, write_runtime_config
from tests.crash_points import run_to_crash
from tests.telegram_harness import StartBot, session_messages, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4242
SCOPE = f"telegram:{USER}"
FACT = "Remember: my sister Mila's birthday is on 12 March."
QUESTION = "When is Mila's birthday?"
CHAT = ChatRef("telegram", str(USER), user_id=str(USER))


def notes(workspace: Path, scope: str = SCOPE) -> str:
    """The scope's daily notes, all days."""
    days = sorted((workspace / "memory" / scope).glob("????-??-??.md"))
    return "".join(day.read_text() for day in days)


def items_saying(app: App, words: str, scope: str = SCOPE) -> list[MemoryItem]:
    return [i for i in app.memory.scopes.store(scope).items.values() if words in i.content]


def turn_items(app: App, words: str, scope: str = SCOPE) -> list[MemoryItem]:
    """The items recording the turn itself (not the facts derived from it)."""
    return [i for i in items_saying(app, words, scope) if i.type is ItemType.TURN]


async def test_a_fact_told_while_the_model_times_out_is_remembered_once_after_new(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.script(hang())
    bot = await start_bot(runtime={"llm": {"maxRetries": 0, "requestTimeoutSeconds": 0.5}})

    telegram.send_text(FACT, chat_id=USER)
    [apology] = await telegram.wait_for_messages_async(USER, 1)

    assert "did not answer in time" in apology["plain_text"]
    # The words are in the daily note once, with no reply; the apology is no one's words.
    assert notes(workspace).count("12 March") == 1
    assert "did not answer" not in notes(workspace)
    assert f"User: {FACT}\n" in notes(workspace)
    assert "| Assistant:" not in notes(workspace)
    assert len(turn_items(bot.app, "12 March")) == 1
    before = {item.id for item in items_saying(bot.app, "12 March")}

    telegram.send_text("/new", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 2)
    telegram.send_text(QUESTION, chat_id=USER)
    await telegram.wait_for_messages_async(USER, 3)

    # The conversation was cleared: only memory can have told the model the date.
    conversation = session_messages(workspace, SCOPE)
    assert conversation[0]["content"] == QUESTION
    assert "12 March" not in json.dumps(conversation)
    assert "12 March" in json.dumps(openai_server.last_request())
    # The later turn wrote its own words, not the earlier ones again.
    assert notes(workspace).count("12 March") == 1
    assert {item.id for item in items_saying(bot.app, "12 March")} == before


async def test_a_server_error_past_retries_keeps_the_words_and_a_later_turn_adds_none(
    make_app: AppFactory, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    app = make_app({"llm": {"maxRetries": 1}})
    openai_server.script(error(500, "overloaded"), error(500, "overloaded"))
    chat = CHAT
    failed = await app.assistant.handle_text(chat, FACT, message_refs=["tg:1"])
    assert failed is not None and not failed.answered
    assert failed.reply.startswith("Sorry, the model is unavailable right now.")
    answered = await app.assistant.handle_text(chat, "Thanks!", message_refs=["tg:2"])
    assert answered is not None and answered.answered

    # The model saw both messages in the second turn; memory holds each once.
    assert notes(workspace).count("12 March") == 1
    assert notes(workspace).count("User: Thanks!") == 1
    assert len(turn_items(app, "12 March")) == 1
    [kept, _] = [m for m in app.sessions.get(SCOPE).messages if m["role"] == "user"]
    assert kept.get("remembered") is True


@pytest.mark.parametrize(
    ("model_says", "user_reads"),
    [
        (NO_ANSWER_NOTE, "(the model returned an empty answer)"),
        (f"{NO_ANSWER_NOTE} Hello again!", "Hello again!"),
        # Its paraphrase (found live: SmolLM2's whole answer to a 43 KB message).
        ("[No answer was provided to this message.]", "(the model returned an empty answer)"),
        ("[no reply has been sent for this message] Hello again!", "Hello again!"),
        # The time stamp the message was headed by (found live: SmolLM2 in Russian).
        ("Вы правы! [Time now: 13:57 UTC] Конечно.", "Вы правы! Конечно."),
        ("[Time now: 13:57 UTC]\n\nHello again!", "Hello again!"),
    ],
)
async def test_the_note_standing_for_a_missing_answer_is_never_the_models_answer(
    model_says: str,
    user_reads: str,
    make_app: AppFactory,
    workspace: Path,
    openai_server: FakeOpenAIServer,
) -> None:
    # A small model copies what stands in the assistant's place of the failed turn.
    app = make_app({"llm": {"maxRetries": 0}})
    openai_server.script(error(500, "overloaded"), reply(model_says))
    await app.assistant.handle_text(CHAT, FACT, message_refs=["tg:1"])
    answered = await app.assistant.handle_text(CHAT, "Hello?", message_refs=["tg:2"])

    assert NO_ANSWER_NOTE in json.dumps(openai_server.last_request())
    assert answered is not None and answered.reply == user_reads
    assert "No answer was given" not in notes(workspace)
    assert not items_saying(app, "No answer was given")


async def test_a_failed_message_handed_in_again_and_answered_is_not_written_twice(
    make_app: AppFactory, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # Its apology was not delivered before a restart: the same message comes again, and
    # this time the model answers. The words were written once; the answer is added.
    app = make_app()
    openai_server.script(error(503, "down"))
    chat = CHAT
    await app.assistant.handle_text(chat, FACT, message_refs=["tg:7"])
    again = await app.assistant.handle_text(chat, FACT, message_refs=["tg:7"])

    assert again is not None and again.reply == f"echo: {FACT}"
    assert notes(workspace).count("12 March") == 2  # the words, then the answer echoing them
    assert notes(workspace).count(f"User: {FACT}") == 1
    # The answer's line is the answer alone: its words are on the line before.
    assert f"User: {FACT}\n" in notes(workspace)
    assert f"] Assistant: echo: {FACT}\n" in notes(workspace)
    assert "User:  |" not in notes(workspace)
    assert len([i for i in turn_items(app, "12 March") if i.content.startswith("User:")]) == 1


async def test_a_stopped_turn_remembers_the_words_not_the_half_answer(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("Her birthday is")))
    bot = await start_bot()
    try:
        telegram.send_text(FACT, chat_id=USER)
        await openai_server.wait_for_requests_async(1)
        telegram.send_text("/stop", chat_id=USER)
        [stopped] = await telegram.wait_for_messages_async(USER, 1)
    finally:
        release.set()

    assert stopped["plain_text"].startswith("Stopped the reply in progress.")
    assert notes(workspace).count("12 March") == 1
    assert "Her birthday is" not in notes(workspace)
    assert len(turn_items(bot.app, "12 March")) == 1
    assert not items_saying(bot.app, "Her birthday is")
    [kept] = [m for m in session_messages(workspace, SCOPE) if m["role"] == "user"]
    assert kept.get("remembered") is True


FAILED_TURN = """
import asyncio
from pathlib import Path
from mnemobot.bot.app import build_app
from mnemobot.config.settings import Settings
from mnemobot.systems.core.context import ChatRef

async def main():
    workspace, base_url, skip, text = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    settings = Settings(
        _env_file=None, bot_workspace=workspace, openai_api_key="k", openai_base_url=base_url
    )
    app = build_app(settings)
    chat = ChatRef("telegram", "4242", user_id="4242")
    arm(skip)  # the turn's daily note line, its items, or the session marking it, dies
    await app.assistant.handle_text(chat, text, message_refs=["tg:7"])

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("point", "skip"),
    [
        ("mid-append", 0),  # half the daily note line written
        ("after-append", 0),  # the daily note line written, not the items
        ("mid-append", 1),  # half the items written
        ("after-append", 1),  # the items written, the message not yet marked remembered
        ("before-replace", 1),  # the session marking it not yet in place
    ],
)
async def test_a_crash_in_a_failed_turn_neither_loses_nor_doubles_the_words(
    point: str,
    skip: int,
    make_app: AppFactory,
    workspace: Path,
    openai_server: FakeOpenAIServer,
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    openai_server.script(error(500, "overloaded"))
    await asyncio.to_thread(
        run_to_crash, FAILED_TURN, point, str(workspace), openai_server.base_url, str(skip), FACT
    )
    # Its apology never went out, so the restarted bot is handed the message again; the
    # model answers this time.
    app = make_app()
    again = await app.assistant.handle_text(CHAT, FACT, message_refs=["tg:7"])

    assert again is not None and again.reply == f"echo: {FACT}"
    assert notes(workspace).count(f"User: {FACT}") == 1
    said = [i for i in turn_items(app, "12 March") if i.content.startswith("User: Remember")]
    assert len(said) == 1
    facts = [i for i in items_saying(app, "12 March") if i.type is not ItemType.TURN]
    assert len(facts) == 1


async def test_a_crash_under_the_earlier_note_form_still_writes_the_words_once(
    make_app: AppFactory, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # The version before wrote a message without an answer as "User: ... | Assistant: ";
    # a crash under it, then an upgrade: the restarted bot finds that line.
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    openai_server.script(error(500, "overloaded"))
    await asyncio.to_thread(
        run_to_crash, FAILED_TURN, "after-append", str(workspace), openai_server.base_url, "0", FACT
    )
    [day] = sorted((workspace / "memory" / SCOPE).glob("????-??-??.md"))
    day.write_text(day.read_text().replace(f"User: {FACT}\n", f"User: {FACT} | Assistant: \n"))

    app = make_app()
    again = await app.assistant.handle_text(CHAT, FACT, message_refs=["tg:7"])

    assert again is not None and again.reply == f"echo: {FACT}"
    assert notes(workspace).count(f"User: {FACT}") == 1
    said = [i for i in turn_items(app, "12 March") if i.content.startswith("User: Remember")]
    assert len(said) == 1


async def test_a_reply_stopped_mid_stream_is_not_remembered_as_an_answer(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.tokens_per_second = 10
    half = "Noted: Mila, 12 March. " + " ".join(f"word{i}" for i in range(60))
    openai_server.script(reply(half))
    bot = await start_bot(
        runtime={"telegram": {"streaming": "edit"}},
        timing=TelegramTiming(stream_edit_seconds=0.3),
    )
    telegram.send_text(FACT, chat_id=USER)

    def previews() -> int:
        return len([c for c in telegram.calls() if c["method"] == "editMessageText"])

    await until(lambda: previews() >= 1)
    telegram.send_text("/stop", chat_id=USER)
    await until(lambda: len(telegram.sent_messages(USER)) >= 2)

    # The user read part of an answer, marked stopped; memory keeps their words alone.
    assert telegram.sent_messages(USER)[0]["plain_text"].startswith("Noted: Mila")
    assert notes(workspace).count(f"User: {FACT}\n") == 1
    assert "Noted: Mila" not in notes(workspace)
    assert not items_saying(bot.app, "Noted: Mila")
    assert len(turn_items(bot.app, "12 March")) == 1


async def until(condition: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)
