"""A value that changed: the pack carries its newest statement and marks older ones earlier.

"$35 monthly budget for books and subscriptions", later "I've increased my book budget
to $50": the older statement shares more of the question's words and ranked first, so a
tight pack could hold the old value alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.build import build_pack
from mnemobot.memory.pack.figures import LATEST_UPDATES, latest_figure
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.items import MemoryItem, speaker_tag
from mnemobot.memory.text.terms import terms
from tests.pack_turns import DAY, START, pack_over, turn_item


def turn(number: int, text: str, day: float) -> MemoryItem:
    return turn_item(number, text, f"User: {text}", day)


def pack_of(items: list[MemoryItem], question: str, soft: int) -> tuple[str, set[str]]:
    pack = pack_over(items, question, soft)
    return pack.rendered, {ref for p in pack.items for ref in p.item.references}


def test_the_newest_value_is_in_a_tight_pack_and_the_older_one_is_marked_earlier() -> None:
    items = [
        turn(1, "I spent $43 on books and subscriptions, $8 over my $35 monthly budget.", 1),
        *(
            turn(n, f"My monthly budget for books and subscriptions is tight, week {n}.", 2)
            for n in range(2, 20)
        ),
        turn(30, "Good news: I've increased my book budget to $50 from February.", 10),
        turn(31, "The new cat tree cost $80 and the cat loves it.", 11),
    ]
    rendered, refs = pack_of(items, "What is my monthly budget for books and subscriptions?", 200)
    assert "tg:30" in refs
    # The newest value first; the older one, if shown, says it was updated and when.
    line = next(line for line in rendered.splitlines() if "$35" in line) if "tg:1" in refs else ""
    assert not line or "(earlier: updated 2023-11-24)" in line
    # Unrelated figures are left as they are.
    assert "tg:31" not in refs


def test_a_repeat_of_the_old_value_after_the_update_does_not_hide_it() -> None:
    items = [
        turn(1, "My monthly budget for books is $35.", 1),
        turn(2, "I've increased my monthly budget for books to $50.", 5),
        # Said again later (an echo, a stale note): not an update of the value.
        turn(3, "Remember the $35 monthly budget for books from the start?", 9),
    ]
    found = latest_figure(items, {term: 1.0 for term in terms("monthly budget books")})
    assert [item.id for item in found.updates] == ["t002"]
    assert set(found.earlier) == {"t001"}


values = st.integers(10, 99)
cues = st.sampled_from(["", "I've increased ", "Now ", "We changed "])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(cues, values, st.integers(0, 40)), min_size=1, max_size=12))
def test_the_first_update_is_the_newest_and_earlier_ones_hold_other_values(
    said: list[tuple[str, int, int]],
) -> None:
    items = [
        turn(number, f"{cue}my monthly book budget to ${value}.", day)
        for number, (cue, value, day) in enumerate(said)
    ]
    found = latest_figure(items, {term: 1.0 for term in terms("monthly book budget")})
    updates = [item for item, (cue, _, _) in zip(items, said, strict=True) if cue]
    if not updates:
        assert not found.updates and not found.earlier
        return
    newest = max(updates, key=lambda item: (item.created_at, item.id))
    value_of = {item.id: value for item, (_, value, _) in zip(items, said, strict=True)}
    # The current value, by the update that first gave it (a later one repeats it).
    current = [item for item in updates if value_of[item.id] == value_of[newest.id]]
    assert found.updates[0].id == min(current, key=lambda i: (i.created_at, i.id)).id
    # Each update shown gives another value; each earlier item is older and of another.
    shown = [value_of[item.id] for item in found.updates]
    assert len(shown) == len(set(shown)) <= LATEST_UPDATES
    for item_id, when in found.earlier.items():
        assert when == newest.created_at
        assert value_of[item_id] != value_of[newest.id]
        assert items[int(item_id[1:])].created_at < newest.created_at
    assert not {item.id for item in current} & set(found.earlier)


def test_without_a_figure_near_the_question_nothing_is_moved() -> None:
    items = [turn(1, "We watched a film on 3 May.", 1), turn(2, "I now have 2 cats.", 2)]
    assert not latest_figure(items, {term: 1.0 for term in terms("favourite colour")}).updates
    rendered, _ = pack_of(items, "What is my favourite colour?", 1800)
    assert "earlier" not in rendered


def test_a_value_updated_in_the_conversation_marks_the_remembered_one_earlier() -> None:
    # Live: "our dashboard API averages 300 ms" last week; today, still in the conversation
    # the request sends, "it now averages 250 ms". The pack leaves the new statement out
    # (the model reads it there) and showed the old value as though it were current.
    items = [
        turn(1, "Our dashboard API averages 300 ms per request.", 1),
        turn(2, "I baked rye bread today.", 2),
        turn(3, "The dashboard API now averages 250 ms after the cache change.", 9),
    ]
    index = BM25Index()
    for item in items:
        index.add(item.id, terms(indexed_text(item)))
    query = MemoryQuery.for_config(
        "What does the dashboard API average now?", "s", START + 10 * DAY, MemoryConfig()
    )
    query.carried = lambda item: item.id == "t003"
    pack = build_pack({item.id: item for item in items}, index, query)
    [line] = [line for line in pack.rendered.splitlines() if "300 ms" in line]
    assert "(earlier: updated 2023-11-23)" in line
    assert "250 ms" not in pack.rendered


def test_a_value_that_has_reached_another_is_the_newest() -> None:
    # "has only reached 60%" says where the value stands now, though no word of change
    # is near it; the older "improved from 40% to 55%" was taken for the current value.
    items = [
        turn(1, "I've improved my savings rate from 40% to 55% since March.", 1),
        turn(2, "I'm worried my savings rate has only reached 60% as of May.", 9),
    ]
    found = latest_figure(items, {term: 1.0 for term in terms("current savings rate")})
    assert [item.id for item in found.updates][:1] == ["t002"]
    assert set(found.earlier) == {"t001"}


def spoken(number: int, speaker: str, text: str, day: float) -> MemoryItem:
    """A group member's turn, tagged with its speaker as the write path tags it."""
    item = turn_item(number, text, f"{speaker}: {text}", day)
    item.tags.append(speaker_tag(speaker))
    return item


def test_another_members_new_value_leaves_a_members_own_value_current() -> None:
    # Live in a group: Bob's "My phone number is now ..." marked Alice's own number
    # "earlier: updated", and the model told Alice her number was Bob's.
    alice = spoken(1, "Alice", "My phone number is +39 333 1234567.", 1)
    bob = spoken(2, "Bob", "My phone number is now +44 7700 900123.", 2)
    about_alice = spoken(3, "Bob", "Alice's phone number is now +81 90 1111 2222.", 3)
    weights = dict.fromkeys(terms("What is my phone number?"), 1.0)
    latest = latest_figure([alice, bob, about_alice], weights)
    assert alice.id not in latest.earlier
    # Her own update still marks her older number.
    again = spoken(4, "Alice", "My phone number is now 0612 345678.", 4)
    latest = latest_figure([alice, bob, about_alice, again], weights)
    assert latest.earlier.get(alice.id) == again.created_at


def test_the_assistants_reply_is_no_update_of_anyones_value() -> None:
    # Live, a small model answered Bob with "Bob: I think my monthly budget for groceries
    # is now $25" (misquoting his $250): his own $250 was marked "earlier: updated" and
    # the model told him his budget was $25.
    said = spoken(1, "Bob", "My monthly budget for groceries is now $250.", 1)
    said.content += "\nAssistant: Noted."
    echoed = spoken(2, "Bob", "From now on, answer me briefly.", 2)
    echoed.content += "\nAssistant: Bob: I think my monthly budget for groceries is now $25."
    alone = turn_item(3, "", "Assistant: Your monthly budget for groceries is now $20.", 3)
    weights = dict.fromkeys(terms("What is my monthly budget for groceries?"), 1.0)
    latest = latest_figure([said, echoed, alone], weights)
    assert [item.id for item in latest.updates] == [said.id]
    assert not latest.earlier
    rendered, _ = pack_of([said, echoed, alone], "What is my monthly budget for groceries?", 200)
    assert "(earlier" not in rendered
