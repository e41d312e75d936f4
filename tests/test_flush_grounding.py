"""A compaction's flush that gives back known memory with a word changed keeps nothing.

Found live with SmolLM2-135M on llama-cpp-python: shown "Oleg: My name is Oleg and I live
in Tver." as known memory and an excerpt of "Are you there? / Yes, I am here.", the flush
answered "- Oleg: My name is Olya."; the bot kept it as a fact, and "What is my name?"
then found Olya before Oleg. The real bot on the fake Bot API and the fake model server,
real files; what the next request carries is read from the model server.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.systems.compaction.flush_grounding import changed_copies
from mnemobot.systems.compaction.transcript import said
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram
from tests.test_flush_restatements import (
    RUNTIME,
    durable_lines,
    flushing,
    request_text,
    stating,
)
from tests.test_schedule_clock import say

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

CHAT = 917
SCOPE = f"telegram:{CHAT}"


async def test_known_memory_given_back_changed_is_not_kept_and_new_facts_are(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    bot = await start_bot(runtime=RUNTIME)
    openai_server.responder = flushing(
        "Oleg: My name is Olya.", "Oleg's cat is called Murka.", "Oleg lives in Tver."
    )
    await say(telegram, "My name is Oleg and I live in Tver.", CHAT, first_name="Oleg")
    await say(telegram, "My cat is called Murka.", CHAT, first_name="Oleg")
    await say(telegram, "Are you there?", CHAT, first_name="Oleg")
    await say(telegram, "Let's talk later.", CHAT, first_name="Oleg")
    assert (await say(telegram, "/compact 1", CHAT)).startswith("Compacted")

    await say(telegram, "What is my name?", CHAT, first_name="Oleg")
    sent = request_text(openai_server.last_request())
    assert "Olya" not in sent, sent
    await bot.shutdown()

    kept = durable_lines(workspace, SCOPE)
    assert stating(kept, "Olya") == [], kept
    notes = "".join(p.read_text() for p in (workspace / "memory" / SCOPE).glob("????-??-??.md"))
    assert "Olya" not in notes
    # What the excerpt did say is kept, as before.
    assert stating(kept, "Murka"), kept


KNOWN = "- Oleg: My name is Oleg and I live in Tver.\n- The user prefers tea."
COPY = "Oleg: My name is Olya."


def test_a_changed_copy_of_known_memory_is_found() -> None:
    assert changed_copies([COPY], KNOWN, "Are you there?\nYes, I am here.") == [COPY]


def test_a_change_the_excerpt_speaks_of_is_kept() -> None:
    moved = "Oleg lives in Moscow."
    assert changed_copies([moved], KNOWN, "I moved to Moscow last week.") == []
    # In another script the excerpt's word cannot be checked (it may be translated).
    assert changed_copies([moved], KNOWN, "Я переехал в Москву, пишу на Python.") == []
    # Said nowhere: invented.
    assert changed_copies([moved], KNOWN, "We talked about the weather.") == [moved]


@pytest.mark.parametrize(
    ("known", "said", "bullet"),
    [
        # The change in other words than the bullet's (found in review: all were dropped).
        ("User eats meat.", "I stopped eating meat last month", "User no longer eats meat."),
        (
            "User's meeting with Anna is on Monday at 15:00.",
            "the meeting with Anna moved to 4pm",
            "User's meeting with Anna is on Monday at 16:00.",
        ),
        ("User has 2 cats.", "we have three cats now", "User has 3 cats."),
        (
            "User's flight is on December 3.",
            "my flight got moved to the 5th",
            "User's flight is on December 5.",
        ),
        ("Олег живёт в Твери.", "теперь я москвич", "Олег живёт в Москве."),
        # A known line with words added.
        ("User's wife is named Kate.", "Kate and I divorced", "User's ex-wife is named Kate."),
        ("User works at Google.", "I quit yesterday", "User does not work at Google anymore."),
    ],
)
def test_a_change_said_in_other_words_is_kept(known: str, said: str, bullet: str) -> None:
    assert changed_copies([bullet], f"- {known}", said) == []


def test_a_members_own_statement_in_a_group_is_no_copy_of_anothers() -> None:
    # Borya says "me too" to what Anna said: his name is the excerpt's writer's.
    known = "- Anna: I live in Riga."
    lines = [said(line) for line in ["user (Boris): me too!", "assistant: Nice!"]]
    excerpt = "\n".join(text for _, text in lines)
    writers = {name for name, _ in lines if name}
    assert changed_copies(["Boris lives in Riga."], known, excerpt, writers) == []
    # Nobody named Boris wrote anything: the name swapped in is invented.
    assert changed_copies(["Boris lives in Riga."], known, "Hello!", {"Anna"}) == [
        "Boris lives in Riga."
    ]


def test_a_new_fact_worded_like_known_ones_is_kept() -> None:
    assert changed_copies(["The user prefers short answers."], KNOWN, "keep it brief") == []
    assert changed_copies(["[procedure] Restart nginx with systemctl"], KNOWN, "ok") == []


WORDS = st.sampled_from(
    ["river", "garden", "violin", "harbor", "printer", "lantern", "meadow", "rocket"]
)


@given(
    known=st.lists(WORDS, min_size=3, max_size=6, unique=True),
    new=st.sampled_from(["zephyr", "quokka"]),
)
def test_copies_are_judged_by_what_they_change(known: list[str], new: str) -> None:
    # A known line, and a bullet with its last word swapped for a new one.
    known_text = "- " + " ".join(known)
    bullet = " ".join([*known[:-1], new])
    # Most of it known, the excerpt on something else: a changed copy.
    assert changed_copies([bullet], known_text, "the weather was fine") == [bullet]
    # The excerpt says the new word, or speaks of what the bullet is about: kept.
    assert changed_copies([bullet], known_text, f"the weather was {new}") == []
    assert changed_copies([bullet], known_text, f"about the {known[0]} again") == []
    # Little of it known: a new fact, kept whatever the excerpt says.
    assert changed_copies([f"{new} {known[0]} quartz basalt obsidian"], known_text, "hi") == []
