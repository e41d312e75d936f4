"""What a person said they want, said while asking something else, is found when they
later ask for advice on it, though the pack holds only a few of the many turns on it."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.figures import REPLY_PART
from mnemobot.memory.pack.stated_wants import SCAN_CHARS, asks_for_advice, states_own_want
from mnemobot.memory.services.workspace_memory import WorkspaceMemory

DAY = 86_400.0
START = 1_710_000_000.0
# A small window's share of memory: a few turns of the many on the subject.
SMALL = MemoryConfig(soft_prompt_budget_tokens=260, max_prompt_budget_tokens=300)
WANT = "I'm looking for an apartment to rent with a south-facing living room, can you help?"


@pytest.mark.parametrize(
    "text",
    [
        "I'm trying to choose an apartment to rent. What would you suggest I look at?",
        "Any tips for my garden this spring?",
        "How should I organize my study sessions?",
        "Can you recommend a few books?",
        "Was empfiehlst du mir für das Wohnzimmer?",
        "Посоветуй, какую квартиру снять?",
        "¿Qué me recomiendas para el salón?",
        "你推荐什么样的公寓？",
        # Found live: asked without a pronoun, or with a separable verb.
        "Что посоветуешь для спальни?",
        "Was schlägst du für das Wohnzimmer vor?",
    ],
)
def test_a_request_for_advice_is_told(text: str) -> None:
    assert asks_for_advice(text)


@pytest.mark.parametrize(
    "text",
    [
        "When did I move to Berlin?",
        "What is the capital of France?",
        "How many days passed between the two trips?",
        "Wann bin ich umgezogen?",
        "Сколько стоила квартира?",
        # Advice others gave or got: not asked for the asker.
        "What advice did Tim give John about picking endorsements?",
        "Which book did Caroline recommend to Melanie?",
        "Что предложил Тим Анне?",
    ],
)
def test_a_question_of_fact_asks_no_advice(text: str) -> None:
    assert not asks_for_advice(text)


@pytest.mark.parametrize(
    "said",
    [
        WANT,
        "I love baking in the afternoon between 2-5 PM, does the light matter?",
        "I'm considering aquatic therapy over more yoga for my joints.",
        "I've been looking for decor that also gives storage.",
        "I'd rather rent than buy for now.",
        "Ich suche eine Wohnung mit Balkon.",
        "Я ищу квартиру с балконом.",
        "Busco un piso con terraza.",
        "我想要一个朝南的客厅。",
        # Found live: needs, a couple's wants, and Russian without "я".
        "I need a quiet apartment near a park.",
        "We're looking for a house with a garden.",
        "Ищу квартиру у парка.",
        "Ich brauche eine ruhige Wohnung.",
        "Necesito un piso tranquilo.",
        "我们需要一个安静的公寓。",
    ],
)
def test_a_want_of_the_person_is_read(said: str) -> None:
    assert states_own_want(f"User: {said}{REPLY_PART}Sure.")


@pytest.mark.parametrize(
    "content",
    [
        # The assistant's words are not the person's want.
        f"User: What about the lease?{REPLY_PART}I'd rather you read it twice. I love it.",
        "Assistant: I love helping with apartments.",
        "User: The apartment has two rooms and a balcony.",
        "User: Anna loves the south-facing room.",
    ],
)
def test_what_the_person_did_not_say_they_want_is_not_a_want(content: str) -> None:
    assert not states_own_want(content)


@given(said=st.text(max_size=SCAN_CHARS // 2), reply=st.text(max_size=400))
def test_only_the_persons_part_is_read(said: str, reply: str) -> None:
    said = said.replace(REPLY_PART, " ")
    content = f"User: {said}"
    assert states_own_want(f"{content}{REPLY_PART}{reply}") == states_own_want(content)


@given(st.text(max_size=2_000))
def test_any_text_reads_without_error(text: str) -> None:
    assert isinstance(asks_for_advice(text), bool)
    assert isinstance(states_own_want(text), bool)


def _say(memory: WorkspaceMemory, scope: str, text: str, at: float, ref: int) -> None:
    memory.record.record_turn(
        scope=scope,
        user_text=text,
        assistant_text="Here is what I found.",
        at=at,
        config=MemoryConfig(),
        tz=UTC,
        message_refs=[f"tg:{ref}"],
        speaker="Ada",
    )


def test_a_want_said_in_passing_is_found_when_advice_is_asked(workspace: Path) -> None:
    memory = WorkspaceMemory.open(workspace)
    scope = "telegram:1"
    try:
        _say(memory, scope, WANT, START, 1)
        # Forty later turns share as many of the question's words as the want does.
        for n in range(40):
            _say(
                memory,
                scope,
                f"Is apartment {n} on the list cheaper to rent than the one across the street?",
                START + DAY + n * 600,
                n + 2,
            )
        pack = memory.recall.build_pack(
            scope,
            "I'm trying to choose an apartment to rent. What would you suggest?",
            now=START + 3 * DAY,
            config=SMALL,
            tz=UTC,
        )
        assert "south-facing living room" in pack.rendered
        # A question of fact on the same words is not a request for advice: the best
        # matches keep the room.
        facts = memory.recall.build_pack(
            scope,
            "Was apartment 7 on the list cheaper to rent?",
            now=START + 3 * DAY,
            config=SMALL,
            tz=UTC,
        )
        assert "south-facing living room" not in facts.rendered
        assert "apartment 7 " in facts.rendered
    finally:
        memory.close()
