"""A statement made before a question is kept; the question and small talk are not."""

from __future__ import annotations

import threading
from datetime import UTC
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType
from mnemobot.memory.write.extraction.question_clauses import statement_before_question
from mnemobot.memory.write.extraction.words import is_question
from tests.test_extraction import derived, extract, only


@pytest.mark.parametrize(
    ("sentence", "statement"),
    [
        (
            "I love baking in the afternoon between 2-5 PM, do you think the light matters?",
            "I love baking in the afternoon between 2-5 PM",
        ),
        (
            "I'm planning to meet Robert at the lobby at 6 PM on April 25, what should I bring?",
            "I'm planning to meet Robert at the lobby at 6 PM on April 25",
        ),
        ("My sister lives in Oslo - what should I bring her?", "My sister lives in Oslo"),
        (
            "I prefer cloud storage for my backups, but is it safe enough?",
            "I prefer cloud storage for my backups",
        ),
        ("Я живу в Казани, что посмотреть рядом?", "Я живу в Казани"),
        ("Ich wohne in Berlin, was kann ich am Wochenende machen?", "Ich wohne in Berlin"),
        ("我喜欢喝茶，你能推荐一些吗？", "我喜欢喝茶"),
    ],
)
def test_the_statement_before_the_asking(sentence: str, statement: str | None) -> None:
    assert statement_before_question(sentence) == statement


@pytest.mark.parametrize(
    "sentence",
    [
        "I love baking in the afternoon, and the light is great.",  # no question: read whole
        "I see, can you explain that again?",  # a lead-in
        "Can I bake in the afternoon, or is it too warm?",  # the asking comes first
        "If I move to Riga, what should I pack?",
        "I wonder, do you like jazz?",
        "Do you think I should move to Riga?",
    ],
)
def test_no_statement_before_the_asking(sentence: str) -> None:
    assert statement_before_question(sentence) is None


@given(st.text(max_size=200))
def test_what_is_kept_is_the_opening_of_the_sentence_and_no_question(sentence: str) -> None:
    statement = statement_before_question(sentence)
    if statement is not None:
        assert is_question(sentence)
        assert sentence.lstrip(" ,").startswith(statement)
        assert not is_question(statement)


def test_a_preference_said_before_a_question_is_remembered() -> None:
    items = extract(
        "I love baking in the afternoon between 2-5 PM, do you think the natural light "
        "and kitchen temperature really make a difference?"
    )
    [preference] = only(items, ItemType.PREFERENCE)
    assert preference.content == "I love baking in the afternoon between 2-5 PM"
    assert preference.references == ["m17"]


def test_a_plan_said_before_a_question_is_remembered_in_each_language() -> None:
    for text, said in [
        ("I'm planning to visit Lisbon on May 3, can you suggest a hotel?", "Lisbon"),
        ("Я переехал в Самару, что посмотреть в городе?", "Самару"),
    ]:
        assert any(said in item.content for item in derived(extract(text))), text


@pytest.mark.parametrize(
    "text",
    [
        "I love this so much, can you make another one?",
        "I think I might move to Riga, what do you think?",
        "I was wondering, could you help me with my code?",
        "I have a question, how do I fix this?",
        "I hate to ask, but could you help me with this?",
        "I hate to bother you, but is this the right file?",
        "I prefer not to say, but why do you ask?",
    ],
)
def test_small_talk_before_a_question_still_derives_nothing(text: str) -> None:
    kept = [i for i in derived(extract(text)) if "hedged" not in i.tags]
    assert kept == []


def test_a_message_padded_with_spaces_before_its_question_mark_is_remembered_at_once(
    tmp_path: Path,
) -> None:
    # Stripping the marks after a sentence's last word retried from every space of the run:
    # 100,000 spaces before a "?" held a turn's memory write for minutes.
    memory = WorkspaceMemory.open(tmp_path)
    text = "I moved to Berlin," + " " * 100_000 + "what should I see?"
    write = threading.Thread(
        target=partial(
            memory.record.record_turn,
            scope="console:local",
            user_text=text,
            assistant_text="Noted.",
            at=1_740_823_200.0,
            config=MemoryConfig(),
            tz=UTC,
        ),
        daemon=True,  # a hang fails the test, and does not hold up the run's exit
    )
    write.start()
    write.join(timeout=30)  # a hang guard, not a speed target
    assert not write.is_alive(), "the memory write did not finish"
    kept = [i.content for i in memory.scopes.store("console:local").items.values()]
    assert any(content.startswith("I moved to Berlin") and len(content) < 40 for content in kept)
