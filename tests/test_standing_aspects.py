"""Standing requests about different aspects of the answer are both kept.

Found in a live chat: "Always answer me in Spanish", later "Always answer me briefly", and
the block every request carries showed only "briefly" (the two share "always answer me",
enough words to read as one request changed). A change of the same aspect ("... in
French") or a request said to come "instead" still replaces the earlier one."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import STANDING_TAG
from mnemobot.memory.write.answer_aspects import about_other_aspects, aspects_named
from mnemobot.memory.write.standing_statements import replaces
from tests.test_standing_preferences import record

DAY = 86_400.0
START = 1_710_000_000.0
CONFIG = MemoryConfig()


# Said in order: a language, a length, another language, another length "instead".
SAID = {
    "en": (
        "Always answer me in Spanish.",
        "Always answer me briefly.",
        "Always answer me in French.",
        "From now on, answer me in long paragraphs instead.",
    ),
    "ru": (
        "Всегда отвечай мне по-испански.",
        "Всегда отвечай мне кратко.",
        "Всегда отвечай мне по-французски.",
        "Отвечай мне вместо этого подробно, длинными абзацами.",
    ),
    "de": (
        "Ab jetzt antworte mir auf Spanisch.",
        "Ab jetzt antworte mir kurz.",
        "Ab jetzt antworte mir auf Französisch.",
        "Ab jetzt antworte mir stattdessen ausführlich in langen Absätzen.",
    ),
    "es": (
        "Respóndeme siempre en español.",
        "Respóndeme siempre brevemente.",
        "Respóndeme siempre en francés.",
        "A partir de ahora, respóndeme en párrafos largos en lugar de eso.",
    ),
}


def block_lines(memory: WorkspaceMemory, scope: str) -> list[str]:
    text = memory.recall.standing_block(scope, UTC, CONFIG.standing_budget_tokens).text
    return [line for line in text.splitlines() if line.startswith("- Ada, ")]


def said_in(lines: list[str], statement: str) -> bool:
    return any(line.endswith(statement) for line in lines)


@pytest.mark.parametrize("language", sorted(SAID))
def test_a_language_and_a_length_are_both_kept_and_each_changes_on_its_own(
    workspace: Path, language: str
) -> None:
    spanish, briefly, french, long_instead = SAID[language]
    memory = WorkspaceMemory.open(workspace)
    try:
        scope = "telegram:1"
        record(memory, scope, spanish, START, "tg:1")
        record(memory, scope, briefly, START + DAY, "tg:2")
        lines = block_lines(memory, scope)
        assert said_in(lines, spanish) and said_in(lines, briefly), lines
        # Another language replaces the first one; the length stays.
        record(memory, scope, french, START + 2 * DAY, "tg:3")
        lines = block_lines(memory, scope)
        assert said_in(lines, french) and said_in(lines, briefly), lines
        assert not said_in(lines, spanish), lines
        # Another length "instead" replaces the length; the language stays.
        record(memory, scope, long_instead, START + 3 * DAY, "tg:4")
        lines = block_lines(memory, scope)
        assert said_in(lines, french) and said_in(lines, long_instead), lines
        assert not said_in(lines, briefly) and len(lines) == 2, lines
    finally:
        memory.close()


# Ways to ask for one aspect of the answer, in extraction's languages.
LANGUAGES = ["in Spanish", "in French", "in German", "по-испански", "auf Deutsch", "en inglés"]
LENGTHS = ["briefly", "in detail", "кратко", "ausführlich", "brevemente", "简短"]
LAYOUTS = ["in tables", "in bullet points", "списком", "in Stichpunkten", "en párrafos"]
TONES = ["formally", "casually", "вежливо", "höflich", "de manera formal"]
KINDS = [LANGUAGES, LENGTHS, LAYOUTS, TONES]
FRAMES = [
    "Always answer me {}.",
    "From now on, answer me {}.",
    "Всегда отвечай мне {}.",
    "Antworte mir ab jetzt {}.",
    "Respóndeme siempre {}.",
]


@st.composite
def two_of_other_kinds(draw: st.DrawFn) -> tuple[str, str]:
    first, second = draw(st.permutations(range(len(KINDS))))[:2]
    return draw(st.sampled_from(KINDS[first])), draw(st.sampled_from(KINDS[second]))


@given(
    st.sampled_from(FRAMES),
    two_of_other_kinds(),
    st.sampled_from(["Ada", "User", "Mary Ann Lee"]),
)
def test_requests_about_other_aspects_never_replace_one_another(
    frame: str, asked: tuple[str, str], speaker: str
) -> None:
    first, second = (f"{speaker}: {frame.format(words)}" for words in asked)
    assert about_other_aspects(first, second) and about_other_aspects(second, first)
    assert not replaces(first, second) and not replaces(second, first)


@given(st.sampled_from(FRAMES), st.permutations(LANGUAGES[:3]))
def test_another_language_in_the_same_words_replaces_the_first(
    frame: str, languages: list[str]
) -> None:
    newer, older = (f"Ada: {frame.format(words)}" for words in languages[:2])
    assert not about_other_aspects(newer, older)
    assert replaces(newer, older)


@given(st.lists(st.sampled_from([w for kind in KINDS for w in kind]), min_size=1, max_size=4))
def test_a_request_said_again_with_more_is_about_the_same_aspects(words: list[str]) -> None:
    # One's named aspects hold the other's: nothing is named on both sides apart.
    said = "Always answer me " + " ".join(words[:1])
    more = "Always answer me " + " ".join(words)
    assert aspects_named(said) <= aspects_named(more)
    assert not about_other_aspects(more, said) and not about_other_aspects(said, more)


@pytest.mark.parametrize(
    ("said", "named"),
    [
        ("Always answer me in Spanish.", {("language", "spanish")}),
        ("Всегда отвечай мне на испанском.", {("language", "spanish")}),
        ("用西班牙语回答我", {("language", "spanish")}),
        ("Always answer me briefly.", {("length", "briefly")}),
        # A word of a class is a whole word: "belong" names no length.
        ("Tell me where these belong.", set()),
        ("Answer me in long paragraphs.", {("length", "long"), ("layout", "paragraphs")}),
    ],
)
def test_the_aspects_a_request_names(said: str, named: set[tuple[str, str]]) -> None:
    assert aspects_named(said) == named


# One request of two aspects, then a change of one of them "instead".
BOTH_THEN_ONE = {
    "en": ("Always answer briefly and in Spanish.", "From now on, answer in English instead."),
    "ru": ("Всегда отвечай мне кратко и по-испански.", "Отвечай мне вместо этого по-английски."),
    "de": (
        "Antworte mir immer kurz und auf Spanisch.",
        "Ab jetzt antworte mir stattdessen auf Englisch.",
    ),
    "es": (
        "Respóndeme siempre brevemente y en español.",
        "A partir de ahora, respóndeme en inglés en lugar de eso.",
    ),
}
CHANGED_LATER = " (its language was changed by a later request)"


@pytest.mark.parametrize("language", sorted(BOTH_THEN_ONE))
def test_a_change_of_one_aspect_keeps_the_rest_of_the_older_request(
    workspace: Path, language: str
) -> None:
    """Said in order: "Always answer briefly and in Spanish", then "... in English
    instead", and "briefly" was gone from every request (the older one replaced whole)."""
    both, english_instead = BOTH_THEN_ONE[language]
    memory = WorkspaceMemory.open(workspace)
    try:
        scope = "telegram:1"
        record(memory, scope, both, START, "tg:1")
        record(memory, scope, english_instead, START + DAY, "tg:2")
        lines = block_lines(memory, scope)
        # The older one stays, said as it was, marked where the newer one changed it.
        assert lines == [
            f"- Ada, 2024-03-09: {both}{CHANGED_LATER}",
            f"- Ada, 2024-03-10: {english_instead}",
        ]
        # A change of the rest (the length) replaces what is left of it.
        longer = {
            "en": "From now on, answer in detail instead.",
            "ru": "Отвечай мне вместо этого подробно.",
            "de": "Ab jetzt antworte mir stattdessen ausführlich.",
            "es": "A partir de ahora, respóndeme en detalle en lugar de eso.",
        }[language]
        record(memory, scope, longer, START + 2 * DAY, "tg:3")
        lines = block_lines(memory, scope)
        assert [line.split(": ", 1)[1] for line in lines] == [english_instead, longer], lines
    finally:
        memory.close()


def test_a_change_of_the_only_aspect_still_replaces_the_request_whole(workspace: Path) -> None:
    memory = WorkspaceMemory.open(workspace)
    try:
        scope = "telegram:1"
        record(memory, scope, "Always answer me in Spanish.", START, "tg:1")
        record(memory, scope, "From now on, answer me in English instead.", START + DAY, "tg:2")
        assert block_lines(memory, scope) == [
            "- Ada, 2024-03-10: From now on, answer me in English instead."
        ]
    finally:
        memory.close()


@pytest.mark.parametrize("language", sorted(BOTH_THEN_ONE))
def test_forgetting_a_change_of_one_aspect_lets_the_older_request_hold_whole(
    workspace: Path, language: str
) -> None:
    """Forgetting a request that replaced an older one whole brings that one back; one that
    changed only its language left it marked "its language was changed by a later
    request" by a request no longer there: neither language was then asked for."""
    both, english_instead = BOTH_THEN_ONE[language]
    memory = WorkspaceMemory.open(workspace)
    try:
        scope = "telegram:1"
        record(memory, scope, both, START, "tg:1")
        record(memory, scope, english_instead, START + DAY, "tg:2")
        newer = next(
            item
            for item in memory.scopes.store(scope).items.values()
            if STANDING_TAG in item.tags and item.content.endswith(english_instead)
        )
        assert memory.forget.forget(scope, newer.id)
        assert block_lines(memory, scope) == [f"- Ada, 2024-03-09: {both}"]
    finally:
        memory.close()
