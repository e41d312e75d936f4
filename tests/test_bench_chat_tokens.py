"""`mnemobot bench chat-tokens` measures what it says, on a short chat of its own kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemobot_tooling.bench.chat_scripts import NEW, STORIES, Turn, small
from mnemobot_tooling.bench.chat_tokens import by_language, format_report, memory_part, run_chat
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer

SCRIPT = [
    Turn("My cat Miso is afraid of the vacuum cleaner.", "Poor Miso!"),
    Turn("What is Miso afraid of?", "The vacuum cleaner."),
    NEW,
    small("thanks!", "You're welcome."),
    Turn("What is my cat Miso afraid of?", "The vacuum cleaner.", "vacuum"),
]


async def test_the_bench_counts_memory_tokens_and_recall(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    figures = await run_chat("en", SCRIPT, tmp_path, openai_server)
    assert figures.turns == 4
    assert figures.small_talk_turns == 1 and figures.small_talk_max_tokens == 0
    assert figures.recalled == 1 and figures.recall_questions == 1
    # The first question's answer is in the request itself: memory adds nothing to it.
    assert 0 < figures.mean_memory_tokens < 100


def test_only_the_memory_sections_are_counted() -> None:
    prompt = (
        'You are a bot. The "# Memory" section below...\n\nCurrent date.\n\n'
        "# Operator notes\nbe kind\n\n# Memory\n\n## Recent episodes\n- x\n\n## Relevant facts\n- y"
    )
    assert memory_part(prompt) == "# Memory\n\n## Recent episodes\n- x\n\n## Relevant facts\n- y"


@pytest.mark.slow
async def test_with_embeddings_the_bench_reports_what_meaning_found(
    tmp_path: Path, openai_server: FakeOpenAIServer, e5_url: str
) -> None:
    # The Lisbon story as the bench runs it: "Who am I travelling with?" shares no word
    # with "a trip to Lisbon ... with my sister Clara".
    story = STORIES["lisbon"]["en"]
    words = await run_chat("en", story, tmp_path, openai_server, "lisbon")
    meaning = await run_chat("en", story, tmp_path, openai_server, "lisbon", embedding_url=e5_url)
    assert words.missed == ("Who am I travelling with?",) and words.packs_by_meaning == 0
    assert meaning.embeddings and meaning.missed == ()
    assert meaning.recalled == meaning.recall_questions == words.recall_questions
    # Every turn but small talk (no pack) and the first (no vectors yet) ranked by meaning.
    assert meaning.packs_by_meaning == meaning.turns - meaning.small_talk_turns - 1
    report = format_report([words, meaning])
    assert "en, words only: " in report and "recall 6/7" in report
    assert "en, embeddings on: " in report and "recall 7/7" in report
    assert "missed: Who am I travelling with?" in report
    assert [lang.embeddings for lang in by_language([words, meaning])] == [False, True]
