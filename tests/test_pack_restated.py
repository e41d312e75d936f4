"""A value said again without a word of change: the pack carries the newer statement.

"I've scheduled a safety inspection for the apartment on March 23", days later "I've got a
safety inspection coming up on March 25": no word says the date moved, the first
statement says more of the question's words and ranked first, so a tight pack held the
old date alone (BEAM development chats: "stale-only" knowledge updates)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.memory.pack.restated import RESTATED_SHARE, restated_figure
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.text.terms import terms
from tests.pack_turns import pack_over, turn_item


def turn(number: int, text: str, day: float, speaker: str = "User") -> MemoryItem:
    return turn_item(number, text, f"{speaker}: {text}", day)


def weights_of(question: str) -> dict[str, float]:
    return {term: 1.0 for term in terms(question)}


def pack_refs(items: list[MemoryItem], question: str, soft: int) -> set[str]:
    pack = pack_over(items, question, soft)
    return {ref for packed in pack.items for ref in packed.item.references}


def test_a_date_said_again_later_is_in_a_tight_pack() -> None:
    question = "When is my scheduled safety inspection for the apartment?"
    items = [
        turn(1, "I've scheduled a safety inspection for the apartment on March 23.", 1),
        # The assistant's advice matches the question better than the newer statement.
        *(
            turn(
                n,
                f"Your scheduled apartment safety inspection checklist, part {n}.",
                1.5,
                "Assistant",
            )
            for n in range(2, 16)
        ),
        turn(20, "I've got a safety inspection coming up on March 25, anything to prepare?", 4),
        turn(21, "The new sofa cost $300 and arrives on April 2.", 5),
    ]
    refs = pack_refs(items, question, 120)
    assert "tg:20" in refs
    assert "tg:21" not in refs


def test_an_amount_whose_word_of_change_is_far_from_it_is_restated() -> None:
    # "increased" is too far from "$200" for an update (`memory.pack.figures`).
    question = "How much money do I have set aside for unexpected rehearsal or costume expenses?"
    items = [
        turn(
            1, "I set aside $150 as an emergency fund for unexpected rehearsal or costume costs.", 1
        ),
        turn(2, "Costume expenses can be unexpected: set aside $50 a week.", 1.5, "Assistant"),
        turn(
            20,
            "I'm considering using my $200 emergency fund for unexpected costume repairs, "
            "though I just increased it after the recital.",
            6,
        ),
    ]
    found = restated_figure(items, weights_of(question))
    assert found is not None and found.id == "t020"


def test_the_next_statement_is_taken_not_a_later_one_of_another_thing() -> None:
    items = [
        turn(1, "I've scheduled a safety inspection for the apartment on March 23.", 1),
        turn(2, "I've got a safety inspection coming up on March 25.", 4),
        turn(3, "The mold inspection at the apartment on June 25 found nothing.", 30),
    ]
    found = restated_figure(items, weights_of("When is my safety inspection for the apartment?"))
    assert found is not None and found.id == "t002"


def test_the_assistant_and_the_same_value_and_another_kind_are_no_restatement() -> None:
    weights = weights_of("When is my safety inspection?")
    items = [
        turn(1, "My safety inspection is on March 23.", 1),
        turn(2, "Your safety inspection could move to March 30.", 2, "Assistant"),
        turn(3, "The safety inspection on March 23 is confirmed.", 3),
        turn(4, "The safety inspection will cost $80.", 4),
    ]
    assert restated_figure(items, weights) is None
    # Said in the person's part of a turn, with the assistant's reply after it.
    items.append(turn(5, "My safety inspection moved to March 28.\nAssistant: Noted, March 30?", 5))
    found = restated_figure(items, weights)
    assert found is not None and found.id == "t005"


def test_a_statement_of_few_of_the_question_words_is_no_restatement() -> None:
    weights = weights_of("What is my monthly budget for books and subscriptions?")
    items = [
        turn(1, "My monthly budget for books and subscriptions is $35.", 1),
        turn(2, "I spent $12 on coffee with a book club friend.", 2),
    ]
    assert restated_figure(items, weights) is None


days = st.integers(0, 40)
values = st.integers(10, 40)
speakers = st.sampled_from(["User", "Assistant"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(speakers, values, days), min_size=1, max_size=10))
def test_the_restatement_is_the_persons_next_other_value_after_the_best_match(
    said: list[tuple[str, int, int]],
) -> None:
    # The first statement says all of the question's words, the rest half of them.
    items = [
        turn(
            number,
            f"My {'monthly book budget' if number == 0 else 'book budget'} is ${value}.",
            day,
            speaker,
        )
        for number, (speaker, value, day) in enumerate(said)
    ]
    found = restated_figure(items, weights_of("monthly book budget"))
    persons = [
        (item, value) for item, (who, value, _) in zip(items, said, strict=True) if who == "User"
    ]
    if not persons:
        assert found is None
        return
    # The best match: all three words (the first item), else the oldest of two words;
    # two of three words are enough for a restatement.
    assert RESTATED_SHARE <= 2 / 3
    anchor, anchor_value = next(
        ((item, value) for item, value in persons if item.id == "t000"),
        min(persons, key=lambda p: (p[0].created_at, p[0].id)),
    )
    later = sorted(
        (p for p in persons if p[0].created_at > anchor.created_at),
        key=lambda p: (p[0].created_at, p[0].id),
    )
    expected = next((item for item, value in later if value != anchor_value), None)
    assert (found.id if found else None) == (expected.id if expected else None)
