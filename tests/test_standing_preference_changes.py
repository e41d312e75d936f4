"""A short preference changed replaces the earlier one; a preference about another thing
does not.

"I prefer tea", later "I prefer coffee now": both stayed in every request's block (the
two share "prefer" and little else, "now" counted as a word of what was preferred). A
change word and one frame with another short object now read as the choice changed,
while "I prefer short answers" after "I prefer tea" is about the answers, and both stay."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import STANDING_TAG, MemoryItem
from tests.test_standing_preferences import record

DAY = 86_400.0
START = 1_710_000_000.0
CONFIG = MemoryConfig()
SCOPE = "telegram:1"


def said_in_turn(memory: WorkspaceMemory, older: str, newer: str) -> list[str]:
    """Both said a day apart: the lines of the block every request carries after."""
    record(memory, SCOPE, older, START, "tg:1")
    record(memory, SCOPE, newer, START + DAY, "tg:2")
    text = memory.recall.standing_block(SCOPE, UTC, CONFIG.standing_budget_tokens).text
    return [line for line in text.splitlines() if line.startswith("- Ada, ")]


def standing_with(memory: WorkspaceMemory, words: str) -> MemoryItem:
    items = memory.scopes.store(SCOPE).items.values()
    [found] = [i for i in items if STANDING_TAG in i.tags and words in i.content]
    return found


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("I prefer tea.", "I prefer coffee now."),
        ("I prefer tea.", "Actually, I prefer coffee."),
        ("I prefer tea.", "I now prefer coffee."),
        ("I prefer tea.", "These days I prefer black coffee."),
        ("I prefer tea.", "I prefer black coffee instead."),
        ("Я предпочитаю чай.", "Теперь я предпочитаю чёрный кофе."),
        ("Ich bevorzuge Tee.", "Ich bevorzuge jetzt schwarzen Kaffee."),
        ("Prefiero té.", "Ahora prefiero café solo."),
    ],
)
def test_a_short_preference_changed_replaces_the_earlier_one(
    workspace: Path, older: str, newer: str
) -> None:
    memory = WorkspaceMemory.open(workspace)
    try:
        lines = said_in_turn(memory, older, newer)
        assert len(lines) == 1 and lines[0].endswith(newer.rstrip(".")), lines
        # Kept as what was preferred earlier, as a changed request is.
        assert standing_with(memory, older.rstrip(".")).is_superseded
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("I prefer tea.", "I prefer short answers."),
        # A change word, but of the answers' length: the tea is another choice.
        ("I prefer tea.", "I now prefer short answers."),
        ("I prefer tea in the morning.", "I prefer walks in the evening."),
        # The time of day in common, and the frame every preference has.
        ("I prefer reading in the evening.", "I prefer morning yoga over evening."),
        ("Я предпочитаю читать вечером.", "Я предпочитаю утреннюю йогу, а не вечернюю."),
        ("Я предпочитаю чай.", "Теперь я предпочитаю короткие ответы."),
        ("Ich bevorzuge Tee.", "Ich bevorzuge jetzt kurze Antworten."),
        ("Prefiero té.", "Ahora prefiero respuestas cortas."),
    ],
)
def test_a_preference_about_another_thing_keeps_the_earlier_one(
    workspace: Path, older: str, newer: str
) -> None:
    memory = WorkspaceMemory.open(workspace)
    try:
        lines = said_in_turn(memory, older, newer)
        assert len(lines) == 2, lines
        assert lines[0].endswith(older.rstrip(".")) and lines[1].endswith(newer.rstrip("."))
        assert not standing_with(memory, older.rstrip(".")).is_superseded
    finally:
        memory.close()
