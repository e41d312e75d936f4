"""The Telegram channel end to end: real PTB Application <-> fake Bot API, fake LLM over HTTP."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot.bot.turn.commands import COMMANDS
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, delay, gated, reply, user_texts
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.voice_notes import silent_recording
from tests.telegram_harness import StartBot, session_messages, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4242


async def test_private_round_trip(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    assert [c["command"] for c in telegram.commands] == [spec.name for spec in COMMANDS]

    said = telegram.send_text("hello there", chat_id=USER, first_name="Ada")
    [answer] = await telegram.wait_for_messages_async(USER, 1)

    assert answer["plain_text"] == "echo: hello there"
    # A quick reply needs no "typing..." (it would only spend rate limit).
    assert telegram.chat_actions(USER) == []
    assert user_texts(openai_server.last_request()) == ["hello there"]
    user, assistant = session_messages(workspace, f"telegram:{USER}")
    assert user["refs"] == [f"tg:{said['message']['message_id']}"]
    assert user["from"] == "Ada"
    assert assistant["content"] == "echo: hello there"


async def test_stranger_is_told_their_id_once_and_nothing_else_happens(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot(allowed="1,2")
    telegram.send_text("hi, can you help?", chat_id=777)
    telegram.send_text("/start", chat_id=777)
    # An allowed user's answer comes after both of the stranger's messages were handled.
    telegram.send_text("hello", chat_id=1)
    await telegram.wait_for_messages_async(1, 1)

    [refusal] = telegram.sent_messages(777)
    assert "777" in refusal["plain_text"]
    assert "TELEGRAM_ALLOWED_USERS" in refusal["plain_text"]
    assert user_texts(openai_server.last_request()) == ["hello"]
    assert not (workspace / "sessions" / "telegram:777.json").exists()


async def test_group_answers_only_mentions_replies_and_its_commands(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    group = -1001
    telegram.send_text("lunch anyone?", chat_id=group, user_id=5, chat_type="supergroup")
    telegram.send_text("/status@other_bot", chat_id=group, user_id=5, chat_type="supergroup")
    telegram.send_text(
        "@mnemo_test_bot what is BM25?", chat_id=group, user_id=5, chat_type="supergroup"
    )
    [first] = await telegram.wait_for_messages_async(group, 1)
    telegram.send_text(
        "and in short?", chat_id=group, user_id=6, chat_type="supergroup", reply_to_bot=True
    )
    await telegram.wait_for_messages_async(group, 2)
    telegram.send_text("/status", chat_id=group, user_id=6, chat_type="supergroup")
    sent = await telegram.wait_for_messages_async(group, 3)

    # The echo model repeats the message as it got it: under its writer's name (and with
    # the line that tells the model what this member may do).
    assert first["plain_text"].startswith("echo: Test: what is BM25?\n\n[Test may add ")
    assert sent[1]["plain_text"].startswith("echo: Test: and in short?\n\n[")
    assert "Chat: telegram:-1001" in sent[2]["plain_text"]
    # Only what was addressed to the bot reached the model, and every answer quotes its question.
    assert [text.partition("\n\n[")[0] for text in user_texts(openai_server.last_request())] == [
        "Test: what is BM25?",
        "Test: and in short?",
    ]
    assert all(message["reply_to_message_id"] for message in sent)
    assert len(telegram.sent_messages(group)) == 3

    # A forum topic is its own conversation and is answered inside the topic.
    telegram.send_text(
        "@mnemo_test_bot topic question",
        chat_id=group,
        user_id=5,
        chat_type="supergroup",
        thread_id=77,
    )
    sent = await telegram.wait_for_messages_async(group, 4)
    assert sent[3]["message_thread_id"] == 77
    [asked] = user_texts(openai_server.last_request())
    assert asked.partition("\n\n[")[0] == "Test: topic question"
    # The session keeps the words as written; the name is added for the model only.
    assert session_messages(workspace, f"telegram:{group}:77")[0]["content"] == "topic question"


async def test_every_command(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Each message its own turn (no bursts): the commands around them are the point.
    await start_bot(timing=TelegramTiming(burst_seconds=0))
    telegram.send_text("/start", chat_id=USER)
    telegram.send_text("/help", chat_id=USER)
    telegram.send_text("/stop", chat_id=USER)
    # Instant answers are not ordered against a turn's reply; wait before the next turn.
    await telegram.wait_for_messages_async(USER, 3)
    telegram.send_text("remember that I like tea", chat_id=USER)
    telegram.send_text("and green tea most", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 5)
    # One at a time: /status and /stop answer at once, the others wait their turn.
    for n, command in enumerate(("/status", "/compact", "/compact 1", "/new"), 6):
        telegram.send_text(command, chat_id=USER)
        await telegram.wait_for_messages_async(USER, n)
    texts = [m["plain_text"] for m in telegram.sent_messages(USER)]

    start, help_, stop, answer, _, status, compact_none, compact, new = texts
    assert "remembers" in start and f"Your user id is {USER}" in start
    assert all(f"/{spec.name}" in help_ for spec in COMMANDS)
    assert answer == "echo: remember that I like tea"
    assert "Session: 4 messages" in status and "0 waiting (mode queue, cap 20)" in status
    assert compact_none == "Nothing to compact (session has 4 messages)."
    assert compact.startswith("Compacted") and "removed 2 messages" in compact
    assert "Started a new conversation" in new
    assert stop == "Nothing is running."


async def test_ten_thousand_character_reply_is_split_and_reassembles_exactly(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    paragraphs = [
        f"Paragraph {n}: a < b & c > d, " + " ".join(f"word{n}x{i}" for i in range(60))
        for n in range(20)
    ]
    long_reply = "\n\n".join(paragraphs)
    assert len(long_reply) >= 10_000
    openai_server.script(reply(long_reply))
    await start_bot(timing=TelegramTiming(burst_seconds=0))

    telegram.send_text("tell me everything", chat_id=USER)
    telegram.send_text("thanks", chat_id=USER)
    # The second turn starts only after every chunk of the first reply is out.
    sent = await telegram.wait_for_messages_async(USER, 4)
    while sent[-1]["plain_text"] != "echo: thanks":
        sent = await telegram.wait_for_messages_async(USER, len(sent) + 1)
    chunks = sent[:-1]

    assert len(chunks) >= 3
    assert all(len(chunk["text"]) <= 4096 for chunk in chunks)
    assert all(chunk["parse_mode"] == "HTML" for chunk in chunks)
    assert "\n\n".join(chunk["plain_text"] for chunk in chunks) == long_reply


async def test_rejected_html_is_resent_as_plain_text(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(reply("This is **important**: use `pip`."))
    telegram.reject_html_when(lambda html: "<b>" in html)
    await start_bot()

    telegram.send_text("what should I use?", chat_id=USER)
    [message] = await telegram.wait_for_messages_async(USER, 1)

    assert message["parse_mode"] is None
    assert message["text"] == "This is important: use pip."
    # The fake records the message before it answers the call: wait for the answer.
    while any(call["status"] is None for call in telegram.calls("sendMessage")):
        await asyncio.sleep(0.01)
    assert [call["status"] for call in telegram.calls("sendMessage")] == [400, 200]


async def test_rate_limit_429_waits_retry_after_then_delivers(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    await start_bot()
    telegram.fail_next("sendMessage", status=429, retry_after=1)

    telegram.send_text("hello", chat_id=USER)
    [message] = await telegram.wait_for_messages_async(USER, 1, timeout=10)

    assert message["plain_text"] == "echo: hello"
    first, second = telegram.calls("sendMessage")
    assert first["status"] == 429
    assert second["time"] - first["time"] >= 1.0


async def test_quick_messages_are_answered_in_order(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("first answer")))
    # Each message its own turn: sent together they would be one burst, one turn.
    await start_bot(timing=TelegramTiming(burst_seconds=0))

    for text in ("one", "two", "three"):
        telegram.send_text(text, chat_id=USER)
    await openai_server.wait_for_requests_async(1)
    telegram.send_text("/status", chat_id=USER)
    [status] = await telegram.wait_for_messages_async(USER, 1)
    release.set()
    sent = await telegram.wait_for_messages_async(USER, 4)

    assert "Queue: a reply is running, 2 waiting" in status["plain_text"]
    assert [m["plain_text"] for m in sent[1:]] == ["first answer", "echo: two", "echo: three"]
    assert user_texts(openai_server.last_request()) == ["one", "two", "three"]


async def test_collect_mode_merges_waiting_messages_into_one_turn(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("first answer")))
    await start_bot(runtime={"telegram": {"queueMode": "collect"}})

    telegram.send_text("one", chat_id=USER)
    await openai_server.wait_for_requests_async(1)
    telegram.send_text("two", chat_id=USER)
    telegram.send_text("three", chat_id=USER)
    telegram.send_text("/status", chat_id=USER)
    [status] = await telegram.wait_for_messages_async(USER, 1)
    release.set()
    sent = await telegram.wait_for_messages_async(USER, 3)

    assert "2 waiting (mode collect" in status["plain_text"]
    assert sent[2]["plain_text"] == "echo: two\n\nthree"
    assert len(openai_server.requests) == 2


async def test_a_full_queue_joins_the_last_waiting_turn_and_refuses_nothing(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("done")))
    # No bursts: each message of this test waits on its own until the cap is reached.
    await start_bot(timing=TelegramTiming(queue_cap=2, burst_seconds=0))

    telegram.send_text("slow one", chat_id=USER)
    await openai_server.wait_for_requests_async(1)
    for text in ("waits", "waits too", "joins", "joins too"):
        telegram.send_text(text, chat_id=USER)
    telegram.send_text("/status", chat_id=USER)
    [status] = await telegram.wait_for_messages_async(USER, 1)
    release.set()
    sent = await telegram.wait_for_messages_async(USER, 4)

    assert "4 waiting" in status["plain_text"]  # messages, in two turns
    assert [m["plain_text"] for m in sent[1:]] == [
        "done",
        "echo: waits",
        "echo: waits too\n\njoins\n\njoins too",
    ]


async def test_thirty_forwards_at_once_get_a_few_turns_and_no_refusal(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """A batch of notes forwarded at once, to a model that takes a second a turn."""
    openai_server.responder = lambda body: delay(1.0, reply(f"noted: {user_texts(body)[-1]}"))
    await start_bot()
    notes = [f"forwarded note {n}" for n in range(30)]
    for note in notes:
        telegram.send_text(note, chat_id=USER)
    await openai_server.wait_for_requests_async(1)
    deadline = asyncio.get_running_loop().time() + 20
    while asyncio.get_running_loop().time() < deadline:
        answered = "\n".join(m["plain_text"] for m in telegram.sent_messages(USER))
        if all(note in answered for note in notes):
            break
        await asyncio.sleep(0.1)

    replies = [m["plain_text"] for m in telegram.sent_messages(USER)]
    assert all(reply_text.startswith("noted: ") for reply_text in replies), replies
    assert all(note in "\n".join(replies) for note in notes)
    assert len(openai_server.requests) <= 3


async def test_stop_cancels_a_slow_llm_call_and_drops_the_queue(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("too late")))
    await start_bot()
    try:
        telegram.send_text("write me a novel", chat_id=USER)
        await openai_server.wait_for_requests_async(1)
        telegram.send_text("queued 1", chat_id=USER)
        telegram.send_text("queued 2", chat_id=USER)
        telegram.send_text("/stop", chat_id=USER)
        [stopped] = await telegram.wait_for_messages_async(USER, 1)
        telegram.send_text("still there?", chat_id=USER)
        sent = await telegram.wait_for_messages_async(USER, 2)
    finally:
        release.set()

    assert stopped["plain_text"] == "Stopped the reply in progress. Dropped 2 queued messages."
    assert sent[1]["plain_text"] == "echo: still there?"
    assert "too late" not in [m["plain_text"] for m in telegram.sent_messages(USER)]
    # The stopped question was kept; the dropped ones never became turns.
    assert user_texts(openai_server.last_request()) == ["write me a novel", "still there?"]
    contents = [m["content"] for m in session_messages(workspace, f"telegram:{USER}")]
    assert contents[0] == "write me a novel"


async def test_media_without_text_is_read_never_refused(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    telegram.send_photo(chat_id=USER)
    telegram.send_voice(chat_id=USER, content=silent_recording(2, "hello"))
    telegram.send_sticker(chat_id=USER)
    telegram.send_document(chat_id=USER, caption="summarize this please")
    await openai_server.wait_for_requests_async(1)
    await telegram.wait_for_messages_async(USER, 1)

    texts = "\n".join(m["plain_text"] for m in telegram.sent_messages(USER))
    assert "only read text" not in texts
    said = "\n".join(user_texts(r)[-1] for r in openai_server.requests)
    for part in ("[photo ", "[voice 0:02] hello", "[sticker 👍]", "summarize this please"):
        assert part in said


# PTB warns about how it will read the timer's field one day; nothing of ours reads it.
@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_service_messages_in_a_private_chat_get_no_answer(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    said = telegram.send_text("pin this", chat_id=USER)["message"]
    await telegram.wait_for_messages_async(USER, 1)
    chat, user = said["chat"], said["from"]
    for service in (
        {"pinned_message": said},
        {"message_auto_delete_timer_changed": {"message_auto_delete_time": 86400}},
    ):
        telegram.push_update(
            {"message": {"message_id": 90 + len(service), "date": 0, "chat": chat, "from": user}
             | service}
        )  # fmt: skip
    telegram.send_text("still there?", chat_id=USER)
    sent = await telegram.wait_for_messages_async(USER, 2)

    assert [m["plain_text"] for m in sent] == ["echo: pin this", "echo: still there?"]
    assert len(openai_server.requests) == 2


async def test_polling_resumes_after_the_bot_api_was_unreachable(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    await start_bot()
    polls_before = len(telegram.calls("getUpdates"))
    telegram.set_unreachable(True)

    def dropped_polls() -> int:
        return sum(call["status"] == 0 for call in telegram.calls("getUpdates"))

    # The outage lasts until a poll has found the Bot API gone.
    while dropped_polls() < 1:
        await asyncio.sleep(0.02)
    telegram.set_unreachable(False)

    telegram.send_text("back again?", chat_id=USER)
    [message] = await telegram.wait_for_messages_async(USER, 1, timeout=15)

    assert message["plain_text"] == "echo: back again?"
    assert len(telegram.calls("getUpdates")) > polls_before


async def test_a_slow_reply_shows_typing_until_it_is_sent(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(timing=TelegramTiming(typing_delay_seconds=0.2))
    openai_server.script(delay(0.8, reply("thought about it")))
    telegram.send_text("a hard question", chat_id=USER)
    [answer] = await telegram.wait_for_messages_async(USER, 1)
    assert answer["plain_text"] == "thought about it"
    typing_calls = telegram.calls("sendChatAction")
    assert typing_calls and all(c["time"] < answer_time(telegram) for c in typing_calls)


def answer_time(telegram: TelegramServer) -> float:
    return telegram.calls("sendMessage")[-1]["time"]
