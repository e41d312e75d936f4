"""Text cut to a token budget stays within it, in every script (one rule: `base.tokens`)."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from mnemobot.base.tokens import CHARS_PER_TOKEN, cut_to_tokens, estimate_tokens, max_chars
from mnemobot.systems.compaction.transcript import split_lines
from mnemobot.systems.memory_steps.context_building import _cut_to_budget

# Latin, Cyrillic, CJK and emoji words: each script costs its own characters per token.
words = st.sampled_from(["deploy", "Berlin", "переехал", "Москве", "明天", "开会", "🙂", "x"])
texts = st.lists(words, max_size=400).map(" ".join) | st.text(max_size=600)


@given(texts, st.integers(min_value=0, max_value=300))
def test_a_cut_is_the_longest_start_within_the_budget(text: str, budget: int) -> None:
    cut = cut_to_tokens(text, budget)
    assert text.startswith(cut)
    assert estimate_tokens(cut) <= budget
    if cut == text:
        return
    # Cut where a word ends when one is near, else exactly at the budget.
    longest = len(cut) + 1
    while longest <= len(text) and estimate_tokens(text[:longest]) <= budget:
        longest += 1
    assert len(cut) >= 0.7 * (longest - 1) - 1


@given(st.lists(texts, max_size=12), st.integers(min_value=6, max_value=200))
@example(["Я переехал в Москву. " * 40], 50)
def test_every_part_of_a_compaction_transcript_fits_its_budget(
    lines: list[str], budget: int
) -> None:
    for part in split_lines(lines, budget):
        assert sum(estimate_tokens(line) + 1 for line in part) <= budget


@given(texts, st.integers(min_value=12, max_value=300))
@example("Отвечай как пират. " * 100, 50)
def test_operator_instructions_cut_to_their_budget_fit_it(text: str, budget: int) -> None:
    assert estimate_tokens(_cut_to_budget(text, budget)) <= budget


def test_a_budget_holds_at_most_four_latin_characters_a_token() -> None:
    assert max_chars(100) == 100 * CHARS_PER_TOKEN == 400
    assert estimate_tokens("a" * 400) == 100 and estimate_tokens("a" * 401) == 101
    assert estimate_tokens("я" * 200) == 100 and estimate_tokens("明" * 100) == 100
