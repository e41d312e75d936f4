"""A move as people say it: German word order, a time said with the place, and what else
the old statement said (found live: QA 7)."""

from __future__ import annotations

import time
from datetime import UTC
from pathlib import Path

import pytest

from mnemobot.bot.app import App
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import Layer
from mnemobot.memory.write.fact_slots import slot_statements
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, context_text, user_texts
from tests.conftest import ask

DAY = 86_400.0
NOW = time.time()
CONFIG = MemoryConfig()
SCOPE = "console:local"


def slots(text: str) -> list[tuple[str, str, str | None]]:
    return [(s.slot, s.value, s.left) for s in slot_statements(text)]


@pytest.mark.parametrize(
    ("said", "left"),
    [
        # The time between "bin" and "nach", and the verb second after a word of time.
        ("Ich bin letzte Woche nach Hamburg umgezogen.", None),
        ("Ich bin vor kurzem nach Hamburg gezogen.", None),
        ("Ich bin im Mai nach Hamburg gezogen.", None),
        ("Ich bin mit meiner Familie nach Hamburg gezogen.", None),
        ("Ich bin letzten Monat von Berlin nach Hamburg umgezogen.", "Berlin"),
        ("Letzte Woche bin ich nach Hamburg umgezogen.", None),
        ("Ich bin nach Hamburg letzte Woche umgezogen.", None),
        ("Jetzt wohne ich in Hamburg.", None),
        ("Seit Montag wohne ich in Hamburg.", None),
        ("Seit letzter Woche wohne ich in Hamburg.", None),
        ("Inzwischen lebe ich in Hamburg.", None),
        ("Jetzt lebe ich in Hamburg.", None),
        ("Ich wohne seit zwei Wochen in Hamburg.", None),
        ("Ich habe in Berlin gewohnt, aber jetzt wohne ich in Hamburg.", None),
        # The separable verb: "ziehe ... um".
        ("Ich ziehe gerade nach Hamburg um.", None),
        ("Jetzt ziehe ich nach Hamburg um.", None),
        ("Ich heiße Greta und ziehe gerade nach Hamburg um.", None),
    ],
)
def test_a_german_move_sets_the_home_in_any_word_order(said: str, left: str | None) -> None:
    assert ("residence", "Hamburg", left) in slots(said), said


@pytest.mark.parametrize(
    "said",
    [
        "Mein Bruder ist nach Hamburg umgezogen.",
        "Meine Eltern sind letzte Woche nach Hamburg gezogen.",
        "Meine Schwester wohnt jetzt in Hamburg.",
        "Ich wohne gern in Berlin, aber die Mieten sind hoch.",
        "Wenn ich nach Hamburg ziehe, melde ich mich.",
        "Ich melde mich, wenn ich nach Hamburg gezogen bin.",
        "Ich bin sicher dass er nach Hamburg gezogen ist.",
        "Ich bin froh, dass meine Eltern nach Hamburg gezogen sind.",
        "Ich bin nicht nach Hamburg gezogen.",
        "Ich wäre gern nach Hamburg gezogen.",
        "Ich bin gestern nach Hamburg gefahren.",
        # A plan, not yet the home; a stay, not a home.
        "Ich ziehe nächste Woche nach Hamburg um.",
        "Nächste Woche ziehe ich nach Hamburg um.",
        "Im Urlaub wohne ich in einem Hotel.",
        # Questions.
        "Bin ich nach Hamburg gezogen?",
        "Seit wann wohne ich in Hamburg?",
        "Soll ich nach Hamburg umziehen?",
        "Wohnst du jetzt in Hamburg?",
    ],
)
def test_what_is_not_the_speakers_move_sets_no_home(said: str) -> None:
    assert [slot for slot, _, _ in slots(said) if slot == "residence"] == [], said


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("I moved to Hamburg last week.", "Hamburg"),
        # And what follows the time (review: "Hamburg last week with my wife").
        ("I moved to Hamburg last week with my wife.", "Hamburg"),
        ("Я переехал в Гамбург на прошлой неделе с женой.", "Гамбург"),
        ("I relocated to Hamburg in May.", "Hamburg"),
        ("I moved to Hamburg a few weeks ago.", "Hamburg"),
        ("I live in Berlin since 2019.", "Berlin"),
        ("I work at Apple now.", "Apple"),
        ("Ich wohne in Berlin seit 2019.", "Berlin"),
        ("Ich arbeite bei Siemens seit letztem Jahr.", "Siemens"),
        ("Я переехал в Гамбург на прошлой неделе.", "Гамбург"),
        ("Я живу в Москве уже три года.", "Москве"),
        ("Я работаю в Яндексе с 2019 года.", "Яндексе"),
        ("Me mudé a Hamburgo la semana pasada.", "Hamburgo"),
        ("Vivo en Madrid desde hace dos años.", "Madrid"),
        ("Trabajo en Telefónica desde 2019.", "Telefónica"),
        ("我住在北京三年了。", "北京"),
        ("我搬到上海两个月了。", "上海"),
        # A name that only looks like a time stays whole.
        ("Ich bin nach Frankfurt am Main gezogen.", "Frankfurt am Main"),
        ("I moved to Palm Springs.", "Palm Springs"),
        ("I live in Spring Hill.", "Spring Hill"),
        ("My favourite song is Yesterday.", "Yesterday"),
    ],
)
def test_a_time_said_after_the_value_is_no_part_of_it(said: str, value: str) -> None:
    assert [v for _, v, _ in slots(said)] == [value], said


def say(memory: WorkspaceMemory, text: str, days_ago: float) -> None:
    memory.record.record_turn(
        scope=SCOPE,
        user_text=text,
        assistant_text="Noted.",
        at=NOW - days_ago * DAY,
        config=CONFIG,
        tz=UTC,
    )


def fact_lines(memory: WorkspaceMemory, question: str) -> list[str]:
    rendered = memory.recall.build_pack(SCOPE, question, now=NOW, config=CONFIG, tz=UTC).rendered
    return [line for line in rendered.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize(
    ("moved", "again", "place"),
    [
        ("I moved to Hamburg last week.", "I live in Hamburg.", "Hamburg"),
        ("I moved to Hamburg last week with my wife.", "I live in Hamburg.", "Hamburg"),
        ("Ich wohne in Hamburg seit Mai.", "Ich wohne in Hamburg.", "Hamburg"),
        ("Я переехал в Гамбург на прошлой неделе.", "Я живу в Гамбурге.", "Гамбург"),
        ("Me mudé a Hamburgo la semana pasada.", "Vivo en Hamburgo.", "Hamburgo"),
        ("我住在汉堡三年了。", "我住在汉堡。", "汉堡"),
    ],
)
def test_the_home_said_again_without_its_time_is_the_same_home(
    tmp_path: Path, moved: str, again: str, place: str
) -> None:
    # With the time in its value, "I live in Hamburg" was another home: it replaced the
    # move, and the move read as an earlier home.
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, moved, 5)
    say(memory, again, 1)
    durable = [i for i in memory.scopes.store(SCOPE).items.values() if i.layer is Layer.SEMANTIC]
    homes = [i for i in durable if place in i.content]
    assert homes and not any(i.is_superseded for i in homes), homes


@pytest.mark.parametrize(
    ("before", "after", "name", "old", "question"),
    [
        (
            "Hi! My name is Oleg and I live in Berlin.",
            "I moved to Hamburg last week.",
            "Oleg",
            "Berlin",
            "What is my name?",
        ),
        (
            "Hallo! Ich heiße Greta und wohne in Berlin.",
            "Ich bin letzte Woche nach Hamburg umgezogen.",
            "Greta",
            "Berlin",
            "Wie heiße ich?",
        ),
        (
            "Меня зовут Иван, я живу в Берлине.",
            "Я переехал в Гамбург на прошлой неделе.",
            "Иван",
            "Берлин",
            "Как меня зовут?",
        ),
        (
            "Me llamo Ana y vivo en Berlín.",
            "Me mudé a Hamburgo la semana pasada.",
            "Ana",
            "Berlín",
            "¿Cómo me llamo?",
        ),
        ("我叫王伟，我住在柏林。", "我上周搬到了汉堡。", "王伟", "柏林", "我叫什么名字？"),
        # The name after the home, its verb without "ich" ("und heiße"): it was part of
        # the home's clause and went out of date with it.
        (
            "Ich wohne in Berlin und heiße Greta.",
            "Ich bin letzte Woche nach Hamburg umgezogen.",
            "Greta",
            "Berlin",
            "Wie heiße ich?",
        ),
        (
            "Я живу в Берлине и меня зовут Иван.",
            "Я переехал в Гамбург на прошлой неделе.",
            "Иван",
            "Берлин",
            "Как меня зовут?",
        ),
        (
            "Vivo en Berlín y me llamo Ana.",
            "Me mudé a Hamburgo la semana pasada.",
            "Ana",
            "Berlín",
            "¿Cómo me llamo?",
        ),
    ],
)
def test_a_move_ends_the_old_home_not_the_name_said_beside_it(
    tmp_path: Path, before: str, after: str, name: str, old: str, question: str
) -> None:
    # The name was said only there: marked "earlier" with the old home, it told the model
    # the user's name was out of date.
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, before, 30)
    say(memory, after, 2)
    durable = [i for i in memory.scopes.store(SCOPE).items.values() if i.layer is Layer.SEMANTIC]
    current = [i.content for i in durable if not i.is_superseded]
    assert any(name in text and old not in text for text in current), current
    assert not any(old in text for text in current), current
    lines = fact_lines(memory, question)
    assert any(name in line and "earlier" not in line for line in lines), lines


GRETA = ChatRef("telegram", "5002", user_id="5002", user_name="Greta")


@pytest.mark.parametrize(
    "moved",
    [
        "Ich bin letzte Woche nach Hamburg umgezogen.",
        "Ich bin vor kurzem nach Hamburg gezogen.",
        "Jetzt wohne ich in Hamburg.",
        "Seit Montag wohne ich in Hamburg.",
    ],
)
async def test_after_a_german_move_the_model_is_told_the_new_home_and_the_old_as_earlier(
    app: App, openai_server: FakeOpenAIServer, moved: str
) -> None:
    """QA 7's chat: the model was told only "Ich heiße Greta und wohne in Berlin", as
    current, and never heard of Hamburg."""
    await ask(app, chat=GRETA, text="Hallo! Ich heiße Greta und wohne in Berlin.")
    await ask(app, chat=GRETA, text=moved)
    await app.commands.run(GRETA, ParsedCommand("new", ""))
    await ask(app, chat=GRETA, text="Wo wohne ich?")
    request = openai_server.last_request()
    assert user_texts(request) == ["Wo wohne ich?"]
    text = context_text(request)
    lines = [line for line in text[text.index("# Memory") :].splitlines() if line.startswith("- ")]
    assert any("Hamburg" in line and "earlier" not in line for line in lines), lines
    assert all("earlier, until" in line for line in lines if "Berlin" in line), lines
