"""Pure parts of forgetting and of sizing background model calls."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.memory.notes.daily_notes import format_note_line
from mnemobot.memory.store.items import normalize_content
from mnemobot.memory.upkeep.forgotten_texts import identifiers, needles_of
from mnemobot.model.call_budget import PROMPT_MARGIN, TEMPLATE_TOKENS, rewrite_budget


def test_identifiers_are_codes_long_numbers_and_addresses_not_dates_or_versions() -> None:
    text = (
        "Call +49 170 1234567 or mail ana.b@example.org on 2026-11-25 at 12:30; "
        "the code is QX-7731-ZEBRA, Python 3.11.7, room 42, year 2026."
    )
    assert identifiers(text) == ["1234567", "ana.b@example.org", "qx-7731-zebra"]


def test_a_turn_gives_what_the_user_said_and_the_identifiers_of_the_answer() -> None:
    content = "User: My locker code is QX-7731-ZEBRA.\nAssistant: Noted! Saved as K-99123."
    assert needles_of(content) == ["my locker code is qx-7731-zebra.", "qx-7731-zebra", "k-99123"]
    # A slot value is a needle of the item named; the address goes wherever it was said.
    assert "12 baker street" in needles_of("Ada: My address is 12 Baker Street.")
    assert "12 baker street" not in needles_of(
        "Ada: My address is 12 Baker Street.", slot_values=False
    )


words = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_categories=("Cs", "Cc"), include_characters="\n\r\t"
    ),
    max_size=400,
)


@given(said=words, answer=words)
def test_every_needle_is_held_by_the_turns_own_note_line_or_messages(
    said: str, answer: str
) -> None:
    """A needle never reaches text the item did not hold: each is in the user's message,
    the answer, or the daily-note line the turn wrote."""
    # The turn's item as it is written: a side nobody wrote is left out, as on the line.
    content = "\n".join(
        part
        for part, text in (
            (f"User: {said.strip()}", said),
            (f"Assistant: {answer.strip()}", answer),
        )
        if text.strip()
    )
    note = normalize_content(format_note_line(said.strip(), answer.strip(), 0.0, None))
    held = (normalize_content(said), normalize_content(answer), note)
    for needle in needles_of(content):
        assert any(needle in text for text in held), needle


@given(
    window=st.integers(512, 200_000),
    cap=st.integers(100, 100_000),
    material=st.integers(500, 1_000_000),
    fixed=st.integers(0, 20_000),
    extra=st.integers(0, 2_000),
)
def test_a_rewrite_budget_always_fits_its_window(
    window: int, cap: int, material: int, fixed: int, extra: int
) -> None:
    budget = rewrite_budget(
        window_tokens=window,
        cap_tokens=cap,
        max_material_tokens=material,
        fixed_prompt_tokens=fixed,
        answer_extra_tokens=extra,
    )
    if budget is None:
        return
    prompt = fixed + budget.material_tokens + TEMPLATE_TOKENS
    assert prompt * PROMPT_MARGIN + budget.answer_tokens <= window
    assert budget.cap_tokens <= cap and budget.material_tokens <= material
