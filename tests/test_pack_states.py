"""A state that changed: the pack carries its newest statement and marks older ones earlier.

"My office is in Tallinn", weeks later "I moved my office to Tartu": both match "where is
my office?", no slot rule knows offices and no digit marks either as a value, so the pack
showed both with nothing saying which is current (or the old one alone)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.bot.app import App
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.states import LATEST_STATES, latest_state
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, speaker_tag
from mnemobot.memory.text.terms import terms
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call, tool_messages
from tests.conftest import ask, run_mnemobot
from tests.pack_turns import DAY, START, turn_item

NOW = time.time()
CONFIG = MemoryConfig()
SCOPE = "console:local"
# (old statement, fillers, new statement, question, old value, new value)
CASES = {
    "en": (
        "My office is in Tallinn, near the old town.",
        ["Can you suggest a quick pasta recipe?", "How long should I boil an egg?"],
        "I moved my office to Tartu last week.",
        "Where is my office?",
        "Tallinn",
        "Tartu",
    ),
    "en-database": (
        "For the billing service we use PostgreSQL.",
        ["Any tips for a rainy weekend?", "What's a good stretch for a stiff back?"],
        "We switched the billing service to MySQL.",
        "Which database does the billing service use?",
        "PostgreSQL",
        "MySQL",
    ),
    "ru": (
        "Мой офис находится в Таллине.",
        ["Подскажи быстрый рецепт супа.", "Сколько варить яйцо всмятку?"],
        "Я перевёз свой офис в Тарту.",
        "Где мой офис?",
        "Таллин",
        "Тарту",
    ),
    "ru-project": (
        "Проект сада заморожен до весны.",
        ["Чем заняться в дождливые выходные?", "Вчера я смотрел фильм про китов."],
        "Проект сада снова в работе.",
        "Что с проектом сада?",
        "заморож",
        "снова",
    ),
}


def said_day(days_ago: float) -> str:
    return datetime.fromtimestamp(NOW - days_ago * DAY, UTC).strftime("%Y-%m-%d")


def write_chat(memory: WorkspaceMemory, scope: str, case: str) -> None:
    """The case's old statement 60 days ago, filler, the new one 10 days ago, more filler,
    through the write path of a chat turn."""
    old, fillers, new, *_ = CASES[case]

    def say(text: str, days_ago: float) -> None:
        memory.record.record_turn(
            scope=scope,
            user_text=text,
            assistant_text="Got it.",
            at=NOW - days_ago * DAY,
            config=CONFIG,
            tz=UTC,
        )

    say(old, 60)
    for number in range(12):
        say(fillers[number % len(fillers)], 55 - 4 * number)
    say(new, 10)
    for number in range(4):
        say(fillers[number % len(fillers)], 9 - number)


def entries(rendered: str) -> list[str]:
    """Each list entry of a pack, with its continuation lines."""
    found: list[str] = []
    for line in rendered.splitlines():
        if line.startswith("- "):
            found.append(line)
        elif line.startswith("  ") and found:
            found[-1] += "\n" + line
    return found


def test_the_pack_shows_the_newest_state_and_marks_the_older_one_earlier(
    tmp_path: Path,
) -> None:
    for case, (_, _, _, question, old, new) in CASES.items():
        workspace = tmp_path / case
        memory = WorkspaceMemory.open(workspace)
        write_chat(memory, SCOPE, case)
        memory.close()
        # As a person asks for it: `mnemobot memory pack`, the pack a turn would carry.
        result = run_mnemobot(
            "memory", "pack", question, "--chat", SCOPE, BOT_WORKSPACE=str(workspace)
        )
        assert result.returncode == 0, result.stderr
        lines = entries(result.stdout)
        assert any(new.casefold() in line.casefold() for line in lines), (case, result.stdout)
        stale = [line for line in lines if old.casefold() in line.casefold()]
        assert stale, (case, result.stdout)
        for line in stale:
            assert f"earlier: updated {said_day(10)}" in line, (case, line)
        for line in lines:
            if new.casefold() in line.casefold():
                assert "earlier" not in line, (case, line)


def test_memory_search_marks_the_older_state_earlier(tmp_path: Path) -> None:
    for case in ("en-database", "ru"):
        _, _, _, question, old, new = CASES[case]
        workspace = tmp_path / case
        memory = WorkspaceMemory.open(workspace)
        write_chat(memory, SCOPE, case)
        memory.close()
        result = run_mnemobot(
            "memory", "search", question, "--chat", SCOPE, BOT_WORKSPACE=str(workspace)
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert any(new in line and "(earlier" not in line for line in lines), result.stdout
        olds = [line for line in lines if old in line]
        assert olds and all(f"(earlier: updated {said_day(10)})" in line for line in olds), lines
        hits = orjson.loads(
            run_mnemobot(
                "memory",
                "search",
                question,
                "--chat",
                SCOPE,
                "--json",
                BOT_WORKSPACE=str(workspace),
            ).stdout
        )
        assert [hit["earlier"] for hit in hits] == [old in hit["content"] for hit in hits]


async def test_the_memory_tool_marks_the_older_state_earlier(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    chat = ChatRef("telegram", "1001", user_id="1001", user_name="Ada")
    write_chat(app.memory, "telegram:1001", "en")
    openai_server.script(
        tool_call("memory", {"operation": "search", "query": "office"}), reply("In Tartu.")
    )
    await ask(app, chat=chat, text="where is my office these days?")
    found = tool_messages(openai_server.last_request())[-1]["content"].splitlines()
    assert any("Tartu" in line and "(earlier" not in line for line in found), found
    olds = [line for line in found if "Tallinn" in line]
    assert olds and all(f"(earlier: updated {said_day(10)})" in line for line in olds), found


# ---------------------------------------------------------------- the pure function


def turn(number: int, text: str, day: int) -> MemoryItem:
    return turn_item(number, text, f"User: {text}\nAssistant: Noted.", day)


CITIES = ["Tallinn", "Tartu", "Narva", "Riga", "Vilnius"]
# How a sentence says where the office is, by language: plainly, or that it changed.
FORMS = {
    "en": {
        "plain": "My office is in {city}.",
        "moved": "I moved my office to {city}.",
        "now": "My office is now in {city}.",
    },
    "ru": {
        "plain": "Мой офис находится в городе {city}.",
        "moved": "Я перевёз свой офис в {city}.",
        "now": "Теперь мой офис в городе {city}.",
    },
}
UPDATES = {"moved", "now"}
QUESTIONS = {"en": "Where is my office?", "ru": "Где мой офис?"}


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(sorted(FORMS)),
    st.lists(
        st.tuples(
            st.sampled_from(sorted(UPDATES | {"plain"})),
            st.sampled_from(CITIES),
            st.integers(0, 40),
        ),
        min_size=1,
        max_size=10,
    ),
)
def test_the_first_state_is_the_newest_update_and_earlier_ones_hold_other_values(
    language: str, said: list[tuple[str, str, int]]
) -> None:
    items = [
        turn(number, FORMS[language][form].format(city=city), day)
        for number, (form, city, day) in enumerate(said)
    ]
    found = latest_state(items, {term: 1.0 for term in terms(QUESTIONS[language])})
    city_of = {item.id: city for item, (_, city, _) in zip(items, said, strict=True)}
    updates = [item for item, (form, _, _) in zip(items, said, strict=True) if form in UPDATES]
    if not updates:
        # Nothing says the office changed: nothing is moved or marked.
        assert not found.updates and not found.earlier
        return
    newest = max(updates, key=lambda item: (item.created_at, item.id))
    current = [item for item in updates if city_of[item.id] == city_of[newest.id]]
    # The current state, by the update that first gave it (a later one repeats it).
    assert found.updates[0].id == min(current, key=lambda i: (i.created_at, i.id)).id
    shown = [city_of[item.id] for item in found.updates]
    assert len(shown) == len(set(shown)) <= LATEST_STATES
    assert {item.id for item in found.updates} <= {item.id for item in updates}
    # Every older statement of another city is earlier, dated by the current one; no
    # statement of the current city is.
    for item in items:
        older = item.created_at < newest.created_at
        if older and city_of[item.id] != city_of[newest.id]:
            assert found.earlier.get(item.id) == newest.created_at, item.content
        else:
            assert item.id not in found.earlier, item.content


def test_the_assistants_advice_to_switch_is_no_update() -> None:
    items = [
        turn(1, "For the billing service we use PostgreSQL.", 1),
        MemoryItem(
            id="t002",
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title="advice",
            content="User: Is the billing service fast enough?\nAssistant: You could switch "
            "the billing service to MySQL if it is not.",
            scope="s",
            created_at=START + 5 * DAY,
            updated_at=START + 5 * DAY,
        ),
    ]
    found = latest_state(items, {term: 1.0 for term in terms("billing service database")})
    assert not found.updates and not found.earlier


def test_a_question_about_something_else_moves_nothing() -> None:
    items = [turn(1, "My office is in Tallinn.", 1), turn(2, "I moved my office to Tartu.", 5)]
    found = latest_state(items, {term: 1.0 for term in terms("favourite colour")})
    assert not found.updates and not found.earlier


def test_another_members_move_leaves_a_members_own_home_current() -> None:
    # Live in a group: Bob's "I moved to Oslo, I live there now" marked Alice's
    # "I live in Rome" as "earlier: updated" when she asked where she lives.
    def said(number: int, speaker: str, text: str, day: int) -> MemoryItem:
        item = turn_item(number, text, f"{speaker}: {text}\nAssistant: Noted.", day)
        item.tags.append(speaker_tag(speaker))
        return item

    alice = said(1, "Alice", "I live in Rome.", 1)
    bob = said(2, "Bob", "I moved to Oslo, I live there now.", 2)
    weights = dict.fromkeys(terms("Where do I live?"), 1.0)
    latest = latest_state([alice, bob], weights)
    assert bob in latest.updates
    assert alice.id not in latest.earlier
    # Her own move still marks her old home.
    moved = said(3, "Alice", "I moved to Milan, I live there now.", 3)
    latest = latest_state([alice, bob, moved], weights)
    assert latest.earlier.get(alice.id) == moved.created_at
