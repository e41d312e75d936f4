"""Every request of a chat begins with the one before it, so a model server can reuse its
work on that beginning: the system prompt changes when MEMORY.md does, not with the minute,
and what memory recalls for the newest message goes with that message, once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.systems.core.newest_context import split_context
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    error,
    newest_context,
    reply,
    system_text,
    user_texts,
)
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config

# Monday 2026-03-02 10:00 UTC.
START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC).timestamp()


class TurnClock:
    """Minutes pass between turns, as in a chat."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def minutes_later(self, minutes: float) -> None:
        self.now += minutes * 60


@pytest.fixture
def clock() -> TurnClock:
    return TurnClock()


@pytest.fixture
async def app(
    workspace: Path, openai_server: FakeOpenAIServer, clock: TurnClock
) -> AsyncIterator[App]:
    write_runtime_config(workspace, {"assistant": {"timezone": "UTC"}, "llm": {"maxRetries": 0}})
    built = build_app(make_settings(workspace, openai_server), clock=clock)
    yield built
    await built.close()


async def chat(app: App, clock: TurnClock, *texts: str) -> None:
    for text in texts:
        clock.minutes_later(3)
        await ask(app, text)


def without_newest_context(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages as the next request must begin: its newest user message
    without the context in front of it."""
    messages = [dict(m) for m in request["messages"]]
    newest = max(i for i, m in enumerate(messages) if m["role"] == "user")
    messages[newest]["content"] = split_context(str(messages[newest]["content"]))[1]
    return messages


async def test_each_request_begins_with_the_whole_previous_one(
    app: App, openai_server: FakeOpenAIServer, clock: TurnClock
) -> None:
    await chat(
        app,
        clock,
        "My cat Miso is afraid of the vacuum cleaner.",
        "I work as a nurse at the St. Mary clinic.",
        "What is my cat afraid of?",
        "thanks!",
        "Where do I work?",
    )
    requests = openai_server.requests
    assert len(requests) == 5
    for before, after in pairwise(requests):
        begun = without_newest_context(before)
        assert after["messages"][: len(begun)] == begun
        # Only the newest turn is new: the assistant's answer and the next message.
        assert len(after["messages"]) == len(begun) + 2
    # The minutes passed between the turns, and the prompt said so, where it matters.
    assert "Time now: 10:15 UTC" in newest_context(requests[-1])
    # A message memory recalls nothing for carries the time alone, unframed.
    thanks = next(
        m for m in requests[3]["messages"] if m["role"] == "user" and "thanks!" in m["content"]
    )
    assert thanks["content"] == "[Time now: 10:12 UTC]\n\nthanks!"
    assert "10:" not in system_text(requests[-1])
    assert "Today is Monday, 2026-03-02" in system_text(requests[-1])


async def test_memory_md_changes_the_beginning_once(
    app: App, openai_server: FakeOpenAIServer, clock: TurnClock
) -> None:
    await chat(app, clock, "I like green tea.", "hello again")
    memory_file = app.memory.scopes.paths("console:local").memory_file
    memory_file.parent.mkdir(parents=True, exist_ok=True)
    memory_file.write_text("# Preferences\n- Drinks green tea without sugar.\n")
    await chat(app, clock, "What do I drink?", "ok", "and in the evening?")
    systems = [system_text(request) for request in openai_server.requests]
    assert systems[0] == systems[1]
    assert "Drinks green tea without sugar" not in systems[1]
    # Read once it changed, then the same on every turn, small talk ("ok") too.
    assert "Drinks green tea without sugar" in systems[2]
    assert systems[2] == systems[3] == systems[4]


async def test_what_memory_recalls_goes_with_the_newest_message_only(
    app: App, openai_server: FakeOpenAIServer, clock: TurnClock
) -> None:
    await chat(app, clock, "My locker code is QX-7731.")
    app.assistant.reset_session(CONSOLE_CHAT)
    await chat(app, clock, "What is my locker code?")
    asked = openai_server.last_request()
    # Recalled for the question, in front of it, framed as data; not in the system prompt.
    assert "QX-7731" in newest_context(asked)
    assert "QX-7731" not in system_text(asked)
    assert user_texts(asked) == ["What is my locker code?"]
    assert asked["messages"][-1]["content"].endswith("\n\nWhat is my locker code?")
    # The next turn does not send that recall again: the question goes as it was asked.
    openai_server.script(reply("It is in the gym."))
    await chat(app, clock, "Thanks, and where is the locker?")
    later = openai_server.last_request()
    assert later["messages"][1] == {"role": "user", "content": "What is my locker code?"}
    assert "QX-7731" not in str(later["messages"][:-1])
    # The session keeps the message as the user wrote it.
    stored = [m["content"] for m in app.sessions.get(CONSOLE_CHAT.key).messages]
    assert stored[0] == "What is my locker code?"


async def test_a_statement_mid_conversation_brings_only_the_memory_it_matches(
    app: App, openai_server: FakeOpenAIServer, clock: TurnClock
) -> None:
    await chat(app, clock, "My locker code is QX-7731.", "The wifi password is larch-2291.")
    app.assistant.reset_session(CONSOLE_CHAT)
    # The first message after /new may bring the recent talk: where were we?
    await chat(app, clock, "So, today I am planning the week.")
    assert "larch-2291" in newest_context(openai_server.last_request())
    # Later in the conversation a statement matching nothing brings nothing: not the
    # newest episodes, not everything said on the day it names, not the daily notes.
    # What is new in the request is the answer before it and the message.
    await chat(app, clock, "The weather is rainy again today.")
    statement = openai_server.last_request()
    assert "QX-7731" not in newest_context(statement)
    assert "larch-2291" not in newest_context(statement)
    assert "# Memory" not in newest_context(statement)
    # A question still gets the recent talk, matching or not, and what it matches.
    await chat(app, clock, "Where were we?")
    assert "larch-2291" in newest_context(openai_server.last_request())
    await chat(app, clock, "The locker code again, what was it?")
    assert "QX-7731" in newest_context(openai_server.last_request())


async def test_a_strict_chat_template_takes_every_request(
    app: App, openai_server: FakeOpenAIServer, clock: TurnClock
) -> None:
    # Some local servers' templates take one leading system message and user and
    # assistant turns that alternate.
    openai_server.strict_template = True
    await chat(app, clock, "My locker code is QX-7731.")
    app.assistant.reset_session(CONSOLE_CHAT)
    openai_server.script(error(500, "the server restarted"))
    clock.minutes_later(3)
    assert "unavailable" in await ask(app, "What is my locker code?")
    clock.minutes_later(3)
    assert await ask(app, "Hello? What is my locker code?") == (
        "echo: Hello? What is my locker code?"
    )
    asked = openai_server.recorded_requests[-1]
    assert not asked.rejected
    assert [m["role"] for m in asked.body["messages"]] == ["system", "user", "assistant", "user"]
    assert "QX-7731" in newest_context(asked.body)
