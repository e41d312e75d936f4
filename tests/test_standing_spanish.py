"""Spanish standing requests are kept as their English equivalents are.

"Respóndeme siempre en español", "A partir de ahora, no uses emojis" and "Nunca me
respondas con listas" were kept as nothing at all: the Spanish rules read no order in an
imperative with "me" joined to it, nor past a leading "a partir de ahora", nor after
"nunca me". Everyday Spanish that says "siempre" or "nunca" about the speaker ("Siempre me
gusta el café") stays no request, as its English is."""

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
KINDS = ("request", "preference")


def standing(memory: WorkspaceMemory) -> list[MemoryItem]:
    items = memory.scopes.store(SCOPE).items.values()
    return sorted((i for i in items if STANDING_TAG in i.tags), key=lambda i: i.created_at)


def block_lines(memory: WorkspaceMemory) -> list[str]:
    text = memory.recall.standing_block(SCOPE, UTC, CONFIG.standing_budget_tokens).text
    return [line for line in text.splitlines() if line.startswith("- Ada, ")]


def kept_as(workspace: Path, said: str) -> tuple[set[str], list[str]]:
    """The kinds of standing item `said` is kept as, and the block's lines."""
    memory = WorkspaceMemory.open(workspace)
    try:
        record(memory, SCOPE, said, START, "tg:1")
        kinds = {tag for i in standing(memory) for tag in i.tags if tag in KINDS}
        return kinds, block_lines(memory)
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("english", "spanish"),
    [
        ("Always answer me in Spanish.", "Respóndeme siempre en español."),
        ("From now on don't use emojis.", "A partir de ahora, no uses emojis."),
        ("Never answer me with lists.", "Nunca me respondas con listas."),
        ("Don't answer me with lists.", "No me respondas con listas."),
        ("From now on, answer me in English.", "A partir de ahora, respóndeme en inglés."),
        ("I prefer short answers.", "Prefiero respuestas cortas."),
    ],
)
def test_a_spanish_standing_request_is_kept_as_its_english_is(
    tmp_path: Path, english: str, spanish: str
) -> None:
    workspaces = []
    for name in ("en", "es"):
        workspaces.append(tmp_path / name)
        workspaces[-1].mkdir(mode=0o700)
    english_kinds, english_lines = kept_as(workspaces[0], english)
    spanish_kinds, spanish_lines = kept_as(workspaces[1], spanish)
    assert english_kinds and spanish_kinds == english_kinds
    # Attributed alike: the speaker, the day, the words.
    assert [line.split(": ", 1)[0] for line in spanish_lines] == [
        line.split(": ", 1)[0] for line in english_lines
    ]
    assert len(spanish_lines) == 1 and spanish.rstrip(".") in spanish_lines[0]


@pytest.mark.parametrize(
    ("english", "spanish"),
    [
        ("I always like coffee.", "Siempre me gusta el café."),
        ("I have never been to Rome.", "Nunca he estado en Roma."),
        ("I never liked football.", "Nunca me ha gustado el fútbol."),
        ("You never let me talk.", "Nunca me dejas hablar."),
        ("From now on I work from home.", "A partir de ahora trabajo desde casa."),
        ("Answer me in Spanish.", "Respóndeme en español."),
        # "Solo" after most verbs is "just" (found in review).
        ("Just pass me the salt.", "Pásame solo la sal."),
        ("Just help me with this.", "Ayúdame solo con esto."),
    ],
)
def test_everyday_spanish_is_no_standing_request_as_its_english_is_none(
    tmp_path: Path, english: str, spanish: str
) -> None:
    for name, said in (("en", english), ("es", spanish)):
        workspace = tmp_path / name
        workspace.mkdir(mode=0o700)
        assert kept_as(workspace, said) == (set(), []), said


@pytest.mark.parametrize(
    "instead",
    [
        "A partir de ahora, respóndeme en inglés en lugar de eso.",
        "A partir de ahora, respóndeme mejor en inglés.",
        "A partir de ahora, mejor respóndeme en inglés.",
    ],
)
def test_a_spanish_request_instead_replaces_the_same_aspect_and_keeps_the_other(
    workspace: Path, instead: str
) -> None:
    memory = WorkspaceMemory.open(workspace)
    try:
        record(memory, SCOPE, "Respóndeme siempre en español.", START, "tg:1")
        record(memory, SCOPE, "Respóndeme siempre brevemente.", START + DAY, "tg:2")
        record(memory, SCOPE, instead, START + 2 * DAY, "tg:3")
        lines = block_lines(memory)
        assert len(lines) == 2, lines
        assert lines[0].endswith("Respóndeme siempre brevemente.")
        assert lines[1].endswith(instead)
        [spanish] = [i for i in standing(memory) if "español" in i.content]
        assert spanish.is_superseded
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("From now on don't use emojis.", True),
        ("Отныне не используй эмодзи.", True),
        ("С этого момента не используй эмодзи.", True),
        ("Впредь отвечай коротко.", True),
        ("Ab jetzt benutze keine Emojis.", True),
        ("Von nun an antworte auf Deutsch.", True),
        # "From now on" before a statement about oneself states a fact.
        ("From now on I work from home.", False),
        ("Отныне я работаю из дома.", False),
        ("Ab sofort schreibe ich jeden Tag.", False),
        ("Ab heute nutze ich Linux.", False),
    ],
)
def test_an_order_after_from_now_on_is_kept_in_russian_and_german_as_in_english(
    tmp_path: Path, said: str, kept: bool
) -> None:
    """Found in review: "Отныне не используй эмодзи" and "Ab jetzt benutze keine Emojis"
    were kept as nothing, where English and Spanish keep their request."""
    kinds, _ = kept_as(tmp_path, said)
    assert (kinds == {"request"}) is kept, kinds
