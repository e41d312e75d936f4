"""A value's later statement found by the words of its first statement.

"I've allocated $300 monthly for my photography gear", then a hundred long answers about
gear and software, then "my photography budget has been adjusted to $350 monthly": asked
in the first statement's words, the update was not among the question's best matches, so
the pack held the old value alone (BEAM development 1M stand-ins: a stale-only knowledge
update)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.build import build_pack
from mnemobot.memory.pack.figures import FIGURE_CANDIDATES
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.value_thread import said_again, value_thread
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.items import MemoryItem, speaker_tag
from mnemobot.memory.text.terms import terms
from tests.pack_turns import DAY, START, pack_over, turn_item

QUESTION = "How much do I allocate monthly for my photography gear and software subscriptions?"
FIRST = (
    "I need to make sure I've got enough budget for my photography gear, "
    "I've allocated $300 monthly starting March 2024, is that enough for a beginner?"
)
UPDATE = (
    "I'm kinda worried about my photography budget, it's been adjusted to $350 monthly "
    "starting March 2024, can you help me make the most of it?"
)


def turn(number: int, text: str, day: float, speaker: str = "User") -> MemoryItem:
    return turn_item(number, text, f"{speaker}: {text}", day)


def spoken(number: int, speaker: str, text: str, day: float) -> MemoryItem:
    """A group member's turn, tagged with its speaker as the write path tags it."""
    item = turn(number, text, day, speaker)
    item.tags.append(speaker_tag(speaker))
    return item


def advice(first: int) -> list[MemoryItem]:
    """More answers about gear and software than the figures read, each saying more of the
    question's words than the update does, among a chat's other talk."""
    answers = [
        turn(
            n,
            f"Photography gear and software subscriptions, part {n}: lenses first, then "
            f"editing software subscriptions{', reviewed monthly' if n % 4 == 0 else ''}.",
            1.5,
            "Assistant",
        )
        for n in range(first, first + FIGURE_CANDIDATES + 20)
    ]
    other_talk = [
        turn(n, f"Dinner with Sam on day {n} at the usual place by the river.", 1.2)
        for n in range(1000, 1300)
    ]
    return answers + other_talk


def pack_of(items: list[MemoryItem], question: str, soft: int) -> tuple[str, list[str]]:
    pack = pack_over(items, question, soft)
    return pack.rendered, [ref for p in pack.items for ref in p.item.references]


def test_the_update_its_first_statements_words_find_goes_first() -> None:
    items = [turn(1, FIRST, 1), *advice(2), turn(500, UPDATE, 2)]
    rendered, refs = pack_of(items, QUESTION, 400)
    assert refs[0] == "tg:500"
    # The old value, when shown, says it was updated and when.
    old = [line for line in rendered.splitlines() if "$300" in line]
    assert all("(earlier: updated" in line for line in old)


def test_the_update_found_by_the_first_statement_says_why_it_was_chosen() -> None:
    # A person asking why the bot brought it up (the web page, `memory pack --json`) is
    # told it is the newer value, not shown an item with no reason at all.
    items = [turn(1, FIRST, 1), *advice(2), turn(500, UPDATE, 2)]
    pack = pack_over(items, QUESTION, 400)
    first = pack.items[0]
    assert first.item.references == ["tg:500"]
    assert "update" in first.reasons
    assert all("update" not in p.reasons for p in pack.items if "$300" in p.item.content)


def test_the_update_goes_first_though_it_says_few_of_the_questions_words() -> None:
    # Live: "How much do I allocate for photography?" matched the first statement well
    # and the update ("budget ... adjusted") by one word: both amounts showed as current.
    items = [turn(1, FIRST, 1), *advice(2), turn(500, UPDATE, 2)]
    rendered, refs = pack_of(items, "How much do I allocate for photography?", 400)
    assert refs[0] == "tg:500"
    old = [line for line in rendered.splitlines() if "$300" in line]
    assert old and all("(earlier: updated" in line for line in old)


def test_an_update_the_conversation_holds_marks_the_remembered_value_earlier() -> None:
    # The update was said in this conversation (the request carries it, so the pack does
    # not repeat it); the old value in memory must not read as current beside it.
    items = [turn(1, FIRST, 1), *advice(2), turn(500, UPDATE, 2)]
    index = BM25Index()
    for item in items:
        index.add(item.id, terms(indexed_text(item)))
    config = MemoryConfig(soft_prompt_budget_tokens=400, max_prompt_budget_tokens=400)
    query = MemoryQuery.for_config(
        "How much do I allocate for photography?", "s", START + 100 * DAY, config
    )
    query.carried = lambda item: item.id == "t500"
    pack = build_pack({item.id: item for item in items}, index, query)
    assert "t500" not in [packed.item.id for packed in pack.items]
    old = [line for line in pack.rendered.splitlines() if "$300" in line]
    assert old and all("(earlier: updated" in line for line in old)


def test_another_members_later_value_is_not_the_persons_update() -> None:
    # In a group Bob's budget is his own: Alice's $300 stays her current value.
    items = [
        spoken(1, "Alice", FIRST, 1),
        *advice(2),
        spoken(500, "Bob", UPDATE, 2),
    ]
    rendered, refs = pack_of(items, QUESTION, 400)
    assert "tg:500" not in refs[:1]
    assert not any("(earlier: updated" in line for line in rendered.splitlines())


def test_a_later_value_of_something_else_is_not_brought() -> None:
    other = "The photography contest entry fee is $35, due March 2024, should I enter?"
    items = [turn(1, FIRST, 1), *advice(2), turn(500, other, 2)]
    rendered, refs = pack_of(items, QUESTION, 400)
    assert refs[0] == "tg:1"
    assert "(earlier: updated" not in rendered


def thread_of(items: list[MemoryItem], question: str, anchor_id: str) -> list[str]:
    index = BM25Index()
    for item in items:
        index.add(item.id, terms(indexed_text(item)))
    weights = {term: index.idf(term) for term in terms(question)}
    by_id = {item.id: item for item in items}
    return [item.id for item in value_thread([by_id[anchor_id]], by_id, index, weights).items]


def test_only_the_persons_statements_of_the_same_value_are_brought() -> None:
    items = [
        turn(1, FIRST, 1),
        *advice(2),
        turn(500, UPDATE, 2),
        # Money, a word of change and the question's words, but another thing.
        turn(501, "My photography gear insurance has increased to $35 monthly.", 3),
        turn(502, "I've spent $120 on a new tripod.", 3),
    ]
    assert thread_of(items, QUESTION, "t001") == ["t500"]


def test_a_question_not_about_the_value_brings_no_later_statement() -> None:
    # The statement with a value shares one word with a yes/no question: its later
    # restatements are no answer and would push the evidence out of a tight pack.
    items = [
        turn(1, "My study time for photography rose to 5 hours this week.", 1),
        *advice(2),
        turn(500, "I've increased my study time for photography to 6 hours this week.", 3),
    ]
    assert thread_of(items, "Have I ever worked on photography editing before?", "t001") == []
    assert thread_of(items, "How many hours is my study time for photography?", "t001") == ["t500"]


def test_the_share_is_whole_for_the_sentence_itself_and_none_without_a_value() -> None:
    weight = {term: 1.0 for term in terms(FIRST) if not any(ch.isdigit() for ch in term)}
    assert said_again(FIRST, {"money"}, weight) == 1.0
    assert said_again("I'm worried about my photography budget.", {"money"}, weight) == 0.0
    # A value of another kind says nothing of this one.
    assert said_again("My photography budget grew by 20%.", {"money"}, weight) == 0.0


words = st.lists(
    st.sampled_from(["budget", "photography", "gear", "monthly", "lenses", "subscription"]),
    unique=True,
    max_size=6,
)


def said(words: list[str], value: int) -> str:
    return f"I think that my {' '.join(words)} allowance is now ${value}, which suits me."


@settings(max_examples=100, deadline=None)
@given(words.filter(bool), words, st.integers(1, 9999))
def test_the_share_is_between_zero_and_one_and_grows_with_the_words_said(
    anchor: list[str], other: list[str], value: int
) -> None:
    weight = {term: 1.0 for term in terms(said(anchor, 1)) if not term[0].isdigit()}
    share = said_again(said(other, value), {"money"}, weight)
    assert 0.0 <= share <= 1.0
    both = said_again(said(other + [w for w in anchor if w not in other], value), {"money"}, weight)
    assert share <= both == 1.0
