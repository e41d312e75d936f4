"""Replies shown in Telegram while the model writes them (`telegram.streaming`), through the
real PTB client, the fake Bot API and the fake model streaming at a set token rate."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from pathlib import Path

from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot.bot.channels.telegram.markdown_html import markdown_to_telegram_html
from mnemobot.bot.channels.telegram.split import split_for_telegram
from mnemobot.systems.core.reply_stream import STOPPED_MARK
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    delay,
    reply,
    tool_call,
    tool_calls,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, session_messages, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4242
OTHER = 4343
ANSWER = "Here is **the plan**:\n\n" + " ".join(f"step{i}" for i in range(50)) + "\n\n- `done`"


def streaming(mode: str = "edit", seconds: float = 1.0) -> dict[str, object]:
    """`start_bot`'s arguments: the streaming mode, previews at most every `seconds`."""
    return {
        "runtime": {"telegram": {"streaming": mode}},
        "timing": TelegramTiming(stream_edit_seconds=seconds),
    }


async def until(condition: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def html_of(markdown: str) -> list[str]:
    """What a reply sent without streaming shows: its HTML chunks."""
    return [chunk.html for chunk in split_for_telegram(markdown_to_telegram_html(markdown))]


def finished(telegram: TelegramServer, chat: int, count: int = 1) -> Callable[[], bool]:
    def check() -> bool:
        sent = telegram.sent_messages(chat)
        return len(sent) >= count and all(m["parse_mode"] == "HTML" for m in sent[:count])

    return check


def preview_calls(telegram: TelegramServer, chat: int) -> list[dict[str, object]]:
    return [
        call
        for call in telegram.calls()
        if call["method"] in ("sendMessage", "editMessageText")
        and call["params"].get("chat_id") == chat
    ]


async def test_a_streamed_reply_is_edited_at_most_once_a_second_and_ends_formatted(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 20
    openai_server.script(reply(ANSWER))
    await start_bot(**streaming())
    telegram.send_text("plan my day", chat_id=USER)
    await until(finished(telegram, USER))
    [message] = telegram.sent_messages(USER)
    # Exactly what the reply shows without streaming: one message, the same HTML.
    assert [message["text"]] == html_of(ANSWER)
    calls = preview_calls(telegram, USER)
    assert len(calls) >= 3
    # Text showed while the model wrote: long before its last token.
    [first_token] = openai_server.first_token_times()
    assert calls[0]["time"] - first_token < 1.5
    assert calls[0]["params"].get("parse_mode") is None  # plain mid-stream
    # Previews at most once per streamEditSeconds; the final edit never waits for one.
    gaps = [b["time"] - a["time"] for a, b in itertools.pairwise(calls[:-1])]
    assert min(gaps) >= 0.95
    assert telegram.chat_actions(USER) == []


async def test_the_first_streamed_message_is_worth_its_notification(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """Telegram notifies for the sendMessage only, never for the edits that fill it in:
    the lock screen must not say "M"."""
    openai_server.tokens_per_second = 20
    answers = [
        "Meeting notes are ready and here is what we agreed on with the whole team today",
        "Sure. The dentist is on Thursday at four thirty and I will remind you",
    ]
    for answer in answers:
        openai_server.script(reply(answer))
    await start_bot(**streaming())
    for count, text in enumerate(("what did we agree?", "when is the dentist?"), start=1):
        telegram.send_text(text, chat_id=USER)
        await until(finished(telegram, USER, count))
    firsts = [c["params"]["text"] for c in telegram.calls("sendMessage")]
    assert len(firsts) == 2
    assert len(firsts[0]) >= 40 and answers[0].startswith(firsts[0])
    assert firsts[1].startswith("Sure.") and answers[1].startswith(firsts[1])
    # Then edits as before, ending on the whole reply.
    assert [m["text"] for m in telegram.sent_messages(USER)] == answers


async def test_a_slow_model_shows_what_it_has_after_a_short_wait(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 1.5
    openai_server.script(reply("Thinking about your question carefully"))
    await start_bot(**streaming())
    telegram.send_text("hard question", chat_id=USER)
    await until(finished(telegram, USER), timeout=30)
    [first_token] = openai_server.first_token_times()
    [first] = telegram.calls("sendMessage")
    waited = first["time"] - first_token
    assert 2.0 <= waited <= 4.0, waited
    assert first["params"]["text"].startswith("Thinking about")
    assert telegram.sent_messages(USER)[0]["text"] == "Thinking about your question carefully"


async def test_typing_shows_while_the_model_is_slow_and_stops_at_the_first_text(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 20  # ~3 s of streaming after the first token
    openai_server.script(delay(1.5, reply(ANSWER)))
    typing = TelegramTiming(typing_delay_seconds=0.2, typing_interval_seconds=0.3)
    await start_bot(runtime={"telegram": {"streaming": "edit"}}, timing=typing)
    telegram.send_text("think hard", chat_id=USER)
    await until(finished(telegram, USER))

    [first_token] = openai_server.first_token_times()
    first_shown = preview_calls(telegram, USER)[0]["time"]
    actions = [c["time"] for c in telegram.calls("sendChatAction")]
    # "typing…" while nothing showed yet, refreshed, then none once text shows (without
    # the stop, one would go out every 0.3 s of the ~3 s the rest of the reply streams).
    assert len([t for t in actions if t < first_token]) >= 3
    assert [t for t in actions if t > first_shown + 0.25] == []
    assert telegram.sent_messages(USER)[0]["text"] == html_of(ANSWER)[0]


async def test_a_long_streamed_reply_continues_in_the_next_message(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    long_answer = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum " * 20 for i in range(22))
    assert len(long_answer) > 5000
    openai_server.tokens_per_second = 400
    openai_server.script(reply(long_answer))
    await start_bot(**streaming(seconds=0.3))
    telegram.send_text("write a lot", chat_id=USER)
    expected = html_of(long_answer)
    assert len(expected) == 2
    await until(finished(telegram, USER, 2))
    sent = telegram.sent_messages(USER)
    assert [m["text"] for m in sent] == expected
    assert not any(m["deleted"] for m in sent)
    # Both messages were shown as plain text while written, then edited into the reply.
    plain = [c for c in preview_calls(telegram, USER) if c["params"].get("parse_mode") is None]
    assert {c["method"] for c in plain} == {"sendMessage", "editMessageText"}
    assert all(m["edit_count"] >= 1 for m in sent)


async def test_a_tool_call_mid_answer_keeps_the_text_and_shows_what_is_done(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 10
    openai_server.script(
        tool_calls(
            [tool_call("memory", {"operation": "search", "query": "dentist"})],
            content="Let me look that up.",
        ),
        reply("Your dentist is on Thursday."),
    )
    await start_bot(**streaming(seconds=0.3))
    telegram.send_text("when is the dentist?", chat_id=USER)
    shown: set[str] = set()

    def done() -> bool:
        sent = telegram.sent_messages(USER)
        shown.update(call["params"]["text"] for call in preview_calls(telegram, USER))
        return bool(sent) and sent[0]["parse_mode"] == "HTML"

    await until(done)
    assert "Let me look that up.\n\n🔎 searching memory…" in shown
    [message] = telegram.sent_messages(USER)
    assert message["plain_text"] == "Let me look that up.\n\nYour dentist is on Thursday."


async def test_a_russian_reader_sees_what_is_done_and_a_stop_in_russian(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # The tools' status lines and the stop mark were English for every reader.
    openai_server.tokens_per_second = 10
    openai_server.script(
        tool_calls(
            [tool_call("memory", {"operation": "search", "query": "стоматолог"})],
            content="Сейчас посмотрю.",
        ),
        reply(ANSWER),
    )
    await start_bot(**streaming(seconds=0.3))
    telegram.send_text("когда стоматолог?", chat_id=USER, language_code="ru")
    shown: set[str] = set()

    def searching() -> bool:
        shown.update(call["params"]["text"] for call in preview_calls(telegram, USER))
        return any("step3" in text for text in shown)

    await until(searching)
    assert "Сейчас посмотрю.\n\n🔎 ищу в памяти…" in shown
    assert not any("searching memory" in text for text in shown)
    telegram.send_text("/stop", chat_id=USER, language_code="ru")
    await until(lambda: len(telegram.sent_messages(USER)) >= 2)
    preview, notice = telegram.sent_messages(USER)
    assert preview["plain_text"].endswith("⏹ Остановлено.")
    assert notice["plain_text"].startswith("Остановил ответ, который писал.")


async def test_a_german_reader_sees_the_schedule_tool_at_work_in_german(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # The schedule tool's line stayed English ("⏰ scheduling…") after the others were
    # translated.
    openai_server.tokens_per_second = 10
    openai_server.script(
        tool_calls([tool_call("schedule", {"action": "list"})], content="Einen Moment."),
        # The list is made at once: the status line shows while the model starts again.
        delay(1.0, reply("Keine.")),
    )
    await start_bot(**streaming(seconds=0.3))
    telegram.send_text("welche Erinnerungen habe ich?", chat_id=USER, language_code="de")
    shown: set[str] = set()

    def answered() -> bool:
        shown.update(call["params"]["text"] for call in preview_calls(telegram, USER))
        return "Einen Moment.\n\nKeine." in shown

    await until(answered)
    assert "Einen Moment.\n\n⏰ plane Termine…" in shown
    assert not any("scheduling" in text for text in shown)


async def test_a_429_on_an_edit_waits_for_that_chat_only(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 20
    openai_server.responder = lambda body: reply(
        ANSWER if "slow" in str(body["messages"][-1]["content"]) else "quick answer"
    )
    await start_bot(**streaming(seconds=0.3))
    telegram.fail_next("editMessageText", status=429, retry_after=5)
    telegram.send_text("slow please", chat_id=USER)
    await until(lambda: any(c["status"] == 429 for c in telegram.calls("editMessageText")))
    limited_at = time.time()
    telegram.send_text("and you?", chat_id=OTHER)
    await until(finished(telegram, OTHER))
    # The other chat is answered while the first chat's previews wait out their 429.
    assert telegram.sent_messages(OTHER)[0]["message"]["date"] <= limited_at + 5
    assert time.time() - limited_at < 4
    await until(finished(telegram, USER))
    # The chat's own reply does not wait for its previews' 429 either: it lands well
    # before the 5 s Telegram asked previews to wait (the model needs about 3 s).
    final = telegram.calls("editMessageText")[-1]
    assert final["params"].get("parse_mode") == "HTML"
    assert final["time"] - limited_at < 4
    [message] = telegram.sent_messages(USER)
    assert [message["text"]] == html_of(ANSWER)


async def test_stop_mid_stream_keeps_what_was_shown_marked_stopped(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    openai_server.tokens_per_second = 10
    openai_server.script(reply(ANSWER))
    await start_bot(**streaming(seconds=0.3))
    telegram.send_text("plan my day", chat_id=USER)
    await until(lambda: len(preview_calls(telegram, USER)) >= 2)
    telegram.send_text("/stop", chat_id=USER)

    def stopped() -> bool:
        sent = telegram.sent_messages(USER)
        return bool(sent) and STOPPED_MARK in sent[0]["plain_text"]

    await until(stopped)
    await until(lambda: len(telegram.sent_messages(USER)) >= 2)
    preview, notice = telegram.sent_messages(USER)
    assert preview["plain_text"].startswith("Here is the plan:")
    assert preview["plain_text"].endswith(STOPPED_MARK)
    assert "step49" not in preview["plain_text"]
    assert notice["plain_text"] == "Stopped the reply in progress."  # nothing was queued
    assistant = session_messages(workspace, f"telegram:{USER}")[-1]
    assert assistant["stopped"] is True and assistant["content"].endswith(STOPPED_MARK)


async def test_groups_get_no_preview_in_auto_mode(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 40
    openai_server.script(reply(ANSWER), reply(ANSWER))
    await start_bot(**streaming("auto"))
    group = -100777
    telegram.send_text("@mnemo_test_bot plan", chat_id=group, chat_type="supergroup", user_id=7)
    telegram.send_text("plan", chat_id=USER)
    await until(finished(telegram, group))
    await until(finished(telegram, USER))
    # The group got the finished reply in one call; the private chat saw it written.
    assert [c["method"] for c in preview_calls(telegram, group)] == ["sendMessage"]
    assert len(preview_calls(telegram, USER)) >= 2
    assert telegram.sent_messages(group)[0]["text"] == telegram.sent_messages(USER)[0]["text"]


async def test_draft_mode_previews_in_a_draft_and_sends_the_reply_once(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 20
    openai_server.script(reply(ANSWER))
    await start_bot(**streaming("draft", seconds=0.3))
    telegram.send_text("plan my day", chat_id=USER)
    await until(finished(telegram, USER))
    drafts = telegram.drafts(USER)
    # The draft grew as the model wrote (one draft id); the reply came once, formatted.
    assert len(drafts) >= 3 and len({d["draft_id"] for d in drafts}) == 1
    assert ANSWER.startswith(drafts[0]["text"]) and len(drafts[0]["text"]) < len(ANSWER)
    [message] = telegram.sent_messages(USER)
    assert [message["text"]] == html_of(ANSWER) and message["edit_count"] == 0
    assert telegram.calls("editMessageText") == []


async def test_a_preview_waits_for_an_earlier_reply_still_in_the_outbox(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.tokens_per_second = 20
    openai_server.script(reply(ANSWER))
    await start_bot(**streaming(seconds=0.3))
    # /new's answer (no preview: a command's) meets a bad gateway and waits in the
    # outbox for its next try...
    telegram.fail_next("sendMessage", status=502)
    telegram.send_text("/new", chat_id=USER)
    await until(lambda: any(c["status"] == 502 for c in telegram.calls("sendMessage")))
    # ...while the next message's answer streams: its preview must not jump ahead of it.
    telegram.send_text("plan my day", chat_id=USER)

    def both_sent() -> bool:
        sent = telegram.sent_messages(USER)
        return len(sent) == 2 and any(m["parse_mode"] == "HTML" for m in sent)

    await until(both_sent)
    first, second = telegram.sent_messages(USER)
    assert "plan" not in first["plain_text"] and "step0" not in first["plain_text"]
    assert [second["text"]] == html_of(ANSWER)


async def test_an_answer_cut_at_the_models_length_limit_says_so(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # A local server stops at the end of its window with finish_reason "length": the user
    # must not take half a sentence for the whole answer.
    openai_server.script(reply("Your dentist is called", finish_reason="length"))
    await start_bot(**streaming())
    telegram.send_text("who is my dentist?", chat_id=USER)
    await until(finished(telegram, USER))
    [message] = telegram.sent_messages(USER)
    assert message["plain_text"].startswith("Your dentist is called")
    assert "the model stopped before the end of this answer" in message["plain_text"]
    assert 'say "go on" for the rest' in message["plain_text"]


async def test_an_answer_cut_by_the_time_limit_keeps_what_was_shown(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """Found in live QA on a slow home server: 362 characters the user had read for two
    minutes were replaced at the time limit by "the model did not answer in time"."""
    openai_server.tokens_per_second = 8
    openai_server.script(reply(" ".join(f"word{i}" for i in range(80))))
    await start_bot(
        runtime={
            "telegram": {"streaming": "edit"},
            "llm": {"requestTimeoutSeconds": 3, "maxRetries": 0},
        },
        timing=TelegramTiming(stream_edit_seconds=0.5),
    )
    telegram.send_text("tell me a long story", chat_id=USER)
    await until(lambda: "in time" in str(telegram.sent_messages(USER)), timeout=30)
    [shown] = telegram.sent_messages(USER)
    assert shown["text"].startswith("word0 word1")
    assert "word79" not in shown["text"]
    assert 'did not finish this answer in time; say "go on"' in shown["text"]
    # The session keeps it as the answer, so "go on" goes on from there.
    [kept] = [
        m for m in session_messages(workspace, f"telegram:{USER}") if m["role"] == "assistant"
    ]
    assert str(kept["content"]).startswith("word0 word1")
    # Memory keeps what the model said, not the line saying it was cut.
    notes = workspace / "memory" / f"telegram:{USER}"
    await until(lambda: "word0 word1" in "".join(p.read_text() for p in notes.glob("*.md")))
    written = "".join(p.read_text() for p in notes.glob("*.md"))
    assert "in time" not in written and "go on" not in written, written
