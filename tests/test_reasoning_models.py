"""A reasoning model's thinking (`<think>...</think>` in its answer, as servers that do not
parse it send it) is never shown in Telegram, kept in the session or memory, or sent back
to the model: the reader gets the answer that follows it. Through the real PTB and openai
clients, the fake Bot API and the fake model streaming at a set pace."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.llm.reasoning_text import visible_answer
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, session_messages, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 5151
THINKING = (
    "Okay, the user is asking about the capital of France. I recall that it is Paris. "
    "Let me double-check the spelling and keep the answer short. " * 4
)
ANSWER = "The capital of France is **Paris**."


async def until(condition: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def everything_shown(telegram: TelegramServer, chat: int) -> str:
    """Every text the bot sent or edited into the chat, previews included."""
    return "\n".join(
        str(call["params"].get("text", ""))
        for call in telegram.calls()
        if call["method"] in ("sendMessage", "editMessageText", "sendMessageDraft")
        and call["params"].get("chat_id") == chat
    )


def memory_text(workspace: Path) -> str:
    return "\n".join(
        path.read_text() for path in sorted((workspace / "memory").rglob("*")) if path.is_file()
    )


async def test_a_streamed_answer_shows_and_keeps_only_what_follows_the_thinking(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    openai_server.tokens_per_second = 40
    openai_server.script(reply(f"<think>\n{THINKING}\n</think>\n\n{ANSWER}"), reply("Lyon."))
    await start_bot(runtime={"telegram": {"streaming": "edit"}})
    telegram.send_text("What is the capital of France?", chat_id=USER)
    # The reply is final once it is formatted (a preview is plain text).
    await until(lambda: [m.get("parse_mode") for m in telegram.sent_messages(USER)] == ["HTML"])
    [message] = telegram.sent_messages(USER)
    assert message["text"] == "The capital of France is <b>Paris</b>."
    shown = everything_shown(telegram, USER)
    assert "user is asking" not in shown and "think>" not in shown
    # The next request carries the answer, not the thinking; nor does the session or memory.
    telegram.send_text("And its second city?", chat_id=USER)
    await until(lambda: len(telegram.sent_messages(USER)) >= 2)
    second = json.dumps(openai_server.requests[-1]["messages"])
    assert "capital of France is **Paris**" in second
    assert "user is asking" not in second
    kept = json.dumps(session_messages(workspace, f"telegram:{USER}"))
    assert "Paris" in kept and "user is asking" not in kept and "think>" not in kept
    await until(lambda: "Paris" in memory_text(workspace))
    assert "user is asking" not in memory_text(workspace)


async def test_thinking_opened_by_the_chat_template_is_left_out_of_a_whole_answer(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
) -> None:
    # DeepSeek-R1's template opens the block itself: the answer starts inside it.
    openai_server.script(reply(f"{THINKING}\n</think>\n\n{ANSWER}"))
    await start_bot()
    telegram.send_text("What is the capital of France?", chat_id=USER)
    [message] = await telegram.wait_for_messages_async(USER, 1, timeout=15)
    assert message["text"] == "The capital of France is <b>Paris</b>."
    kept = json.dumps(session_messages(workspace, f"telegram:{USER}"))
    assert "user is asking" not in kept


async def test_an_answer_about_the_tags_keeps_them(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    text = "Wrap the reasoning in <think> and </think>, then answer after it."
    openai_server.script(reply(text))
    await start_bot()
    telegram.send_text("How do reasoning models mark their thinking?", chat_id=USER)
    [message] = await telegram.wait_for_messages_async(USER, 1, timeout=15)
    assert "&lt;think&gt; and &lt;/think&gt;" in message["text"]


_WORDS = st.text(st.characters(codec="utf-8", exclude_characters="<>"), max_size=60)


@given(_WORDS)
def test_text_without_the_tags_is_unchanged(text: str) -> None:
    assert visible_answer(text) == text


@given(_WORDS, _WORDS.filter(lambda t: t.strip()), st.sampled_from(["think", "thinking"]))
def test_no_prefix_of_a_streamed_answer_shows_its_thinking(
    thinking: str, answer: str, tag: str
) -> None:
    whole = f"<{tag}>{thinking}</{tag}>{answer}"
    assert visible_answer(whole) == answer.lstrip()
    for end in range(len(whole) + 1):
        shown = visible_answer(whole[:end])
        # Nothing until the thinking is over; then a beginning of the answer.
        assert shown == "" or answer.lstrip().startswith(shown), (whole[:end], shown)


async def test_an_answer_cut_off_while_thinking_says_so_and_shows_no_thinking(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(reply(f"<think>\n{THINKING}", finish_reason="length"))
    await start_bot()
    telegram.send_text("What is the capital of France?", chat_id=USER)
    [message] = await telegram.wait_for_messages_async(USER, 1, timeout=15)
    assert "user is asking" not in message["text"] and "think>" not in message["text"]
    assert "length limit" in message["text"], message["text"]
