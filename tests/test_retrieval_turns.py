"""Retrieval that earns its tokens: named days, whole long messages, no repeats, no small talk."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from mnemobot.base.tokens import estimate_tokens
from mnemobot.bot.app import App
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import Layer
from mnemobot.memory.text.dates import find_dates
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, context_text
from tests.conftest import ask

BERLIN = ZoneInfo("Europe/Berlin")
SCOPE = "telegram:77"
CONFIG = MemoryConfig()
# Monday, 23 November 2026, 10:00 in Berlin; "last Tuesday" is 17 November.
NOW = datetime(2026, 11, 23, 10, 0, tzinfo=BERLIN)
TOPICS = [
    "the plumber fixed the kitchen sink",
    "we planned the garden fence",
    "I bought winter tyres for the car",
    "my brother called from Madrid",
    "the dentist moved my appointment",
    "I started reading a novel about whales",
    "the neighbours' dog barked all night",
    "we tried a new ramen place downtown",
    "I repainted the hallway blue",
    "my laptop battery died at work",
    "I signed up for a pottery class",
    "the train to Hamburg was late",
]


def _fill_days(memory: WorkspaceMemory, said_on: dict[int, str]) -> None:
    """Two turns a day for 30 days; `said_on` maps days back from NOW to a special turn."""
    for days_back in range(30, 0, -1):
        day = NOW - timedelta(days=days_back)
        for hour, topic in ((9, TOPICS[days_back % len(TOPICS)]), (18, said_on.get(days_back))):
            if topic is None:
                topic = TOPICS[(days_back * 7) % len(TOPICS)]
            memory.record.record_turn(
                scope=SCOPE,
                user_text=f"Today {topic}.",
                assistant_text="Noted.",
                at=day.replace(hour=hour).timestamp(),
                config=CONFIG,
                tz=BERLIN,
            )


@pytest.mark.parametrize(
    ("question", "days_back", "said"),
    [
        ("What did I say last Tuesday?", 6, "I adopted a tortoise named Basil"),
        ("what did I tell you two days ago?", 2, "I adopted a tortoise named Basil"),
        ("What happened on November 12?", 11, "I adopted a tortoise named Basil"),
        ("Что я рассказывал в прошлую пятницу?", 3, "I adopted a tortoise named Basil"),
        ("我昨天说了什么？", 1, "I adopted a tortoise named Basil"),
        ("上周二我说了什么？", 6, "I adopted a tortoise named Basil"),
        ("11月12日发生了什么？", 11, "I adopted a tortoise named Basil"),
        ("三天前我跟你说了什么？", 3, "I adopted a tortoise named Basil"),
    ],
)
def test_a_named_day_finds_what_was_said_that_day(
    tmp_path: Path, question: str, days_back: int, said: str
) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    _fill_days(memory, {days_back: said})
    pack = memory.recall.build_pack(SCOPE, question, now=NOW.timestamp(), config=CONFIG, tz=BERLIN)
    day = (NOW - timedelta(days=days_back)).strftime("%Y-%m-%d")
    assert said in pack.rendered
    # What the pack shows of that day comes first: the day's lines are the best-ranked.
    best = pack.items[0].line
    assert best.startswith(f"- {day}:"), pack.rendered
    memory.close()


def test_a_fact_about_next_week_shows_the_day_it_was_said(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    memory.record.add_flushed_facts(
        SCOPE, ["Mia turns 7 next week"], at=NOW.timestamp(), session_key=SCOPE, tz=BERLIN
    )
    pack = memory.recall.build_pack(
        SCOPE, "when is Mia's birthday?", now=NOW.timestamp(), config=CONFIG, tz=BERLIN
    )
    assert "Fact (noted from the conversation 2026-11-23): Mia turns 7 next week" in pack.rendered
    memory.close()


HOTEL_MESSAGE = (
    "Let me tell you about the whole trip so you can help me plan the next one. "
    + "We flew out early, the flight was fine, the food on board was forgettable. " * 18
    + "The beach was very wide. "
    + "And the place we stayed at, which I'd love to book again, was the Hotel Albergo Vistamare."
)


def test_a_long_message_is_kept_whole_and_its_end_is_found(tmp_path: Path) -> None:
    assert len(HOTEL_MESSAGE) == 1540
    memory = WorkspaceMemory.open(tmp_path)
    memory.record.record_turn(
        scope=SCOPE,
        user_text=HOTEL_MESSAGE,
        assistant_text="Sounds like a great trip!",
        at=NOW.timestamp() - 86_400,
        config=CONFIG,
        tz=BERLIN,
        message_refs=["tg:5"],
    )
    pack = memory.recall.build_pack(
        SCOPE, "which hotel did we stay at?", now=NOW.timestamp(), config=CONFIG, tz=BERLIN
    )
    assert "Hotel Albergo Vistamare" in pack.rendered
    # The line that holds it is a piece of the message, not the whole of it.
    line = next(p.line for p in pack.items if "Vistamare" in p.line)
    assert len(line) < 1300
    memory.close()


CHAT = ChatRef("telegram", "4242", user_id="4242", user_name="Ada")


def _memory_tokens(request: dict[str, object]) -> int:
    text = context_text(request)
    start = text.find("\n# Memory\n")
    return estimate_tokens(text[start:]) if start >= 0 else 0


async def test_the_pack_does_not_repeat_the_conversation_it_is_sent_with(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    await app.assistant.handle_text(
        CHAT, "My hotel in Lisbon is the Casa Azul on Rua Augusta.", message_refs=["tg:1"]
    )
    await app.assistant.handle_text(CHAT, "Which hotel am I staying at?", message_refs=["tg:2"])
    request = openai_server.last_request()
    # The model reads it in the conversation; the system prompt does not say it again.
    assert any("Casa Azul" in str(m.get("content")) for m in request["messages"][1:])
    assert "Casa Azul" not in context_text(request)
    # After /new the conversation is gone from the request, and memory brings it back.
    app.assistant.reset_session(CHAT)
    await app.assistant.handle_text(CHAT, "Which hotel am I staying at?", message_refs=["tg:3"])
    assert "Casa Azul" in context_text(openai_server.last_request())


async def test_a_fact_said_in_the_conversation_is_not_repeated_until_it_leaves_it(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    said = "Я работаю программистом в компании Ак Барс Цифровые Технологии."
    await app.assistant.handle_text(CHAT, said, message_refs=["tg:1"])
    facts = app.memory.scopes.store(app.assistant.scope_for(CHAT, app.assistant.config())).items
    assert any(
        item.layer is not Layer.EPISODIC and "Ак Барс" in item.content for item in facts.values()
    ), "the statement became a durable fact"
    await app.assistant.handle_text(CHAT, "Где я работаю?", message_refs=["tg:2"])
    # The conversation carries the statement: the fact would say it twice.
    assert "Ак Барс" not in context_text(openai_server.last_request())
    app.assistant.reset_session(CHAT)
    await app.assistant.handle_text(CHAT, "Где я работаю?", message_refs=["tg:3"])
    assert "Ак Барс" in context_text(openai_server.last_request())


@pytest.mark.parametrize("text", ["hi", "thanks!", "ok", "👍", "спасибо", "谢谢"])
async def test_small_talk_gets_almost_no_memory(
    app: App, openai_server: FakeOpenAIServer, text: str
) -> None:
    for fact in ("I live in Oslo and work at the harbour.", "Thanks for the tip on tea."):
        await ask(app, chat=CHAT, text=fact)
    app.assistant.reset_session(CHAT)
    await ask(app, chat=CHAT, text=text)
    assert _memory_tokens(openai_server.last_request()) <= 50
    assert "Oslo" not in context_text(openai_server.last_request())


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("see you next week", None),  # the future: nothing said then yet
        ("call me at 5pm", None),  # a time of day, not a day
        ("I have 3 cats and 2 dogs", None),
        ("how are you", None),
        ("what did we discuss last week?", ("2026-11-16", "2026-11-23")),
        ("what did I tell you in March?", ("2026-03-01", "2026-04-01")),
        ("что было позавчера?", ("2026-11-21", "2026-11-22")),
    ],
)
def test_only_past_days_named_in_the_message_count(text: str, days: tuple[str, str] | None) -> None:
    spans = find_dates(text, NOW, ["en", "ru", "zh"])
    if days is None:
        assert spans == []
        return
    [span] = spans
    shown = tuple(
        datetime.fromtimestamp(t, BERLIN).strftime("%Y-%m-%d") for t in (span.start, span.end)
    )
    assert shown == days


def test_the_answer_right_after_a_matching_question_comes_along_though_it_is_recent(
    tmp_path: Path,
) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    for number, topic in enumerate(TOPICS[:6]):
        memory.record.record_turn(
            scope=SCOPE,
            user_text=f"Today {topic}.",
            assistant_text="Noted.",
            at=(NOW - timedelta(days=3, hours=number)).timestamp(),
            config=CONFIG,
            tz=BERLIN,
        )
    asked = NOW - timedelta(minutes=10)
    memory.record.record_turn(
        scope=SCOPE,
        user_text="What was the boat we rented in Porto?",
        assistant_text="Let me think.",
        at=asked.timestamp(),
        config=CONFIG,
        tz=BERLIN,
    )
    memory.record.record_turn(
        scope=SCOPE,
        user_text="Oh right, it was the Gaivota, a blue sloop.",
        assistant_text="Noted.",
        at=(asked + timedelta(minutes=1)).timestamp(),
        config=CONFIG,
        tz=BERLIN,
    )
    pack = memory.recall.build_pack(
        SCOPE, "which boat did we rent?", now=NOW.timestamp(), config=CONFIG, tz=BERLIN
    )
    # The newest turn shares no word with the question, but it answers the one that does.
    assert "Gaivota" in pack.rendered
    assert "plumber" not in pack.rendered  # recent small things that match nothing stay out
    memory.close()
