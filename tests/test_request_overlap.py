"""What a request already carries is not paid for twice by the memory sent with it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.memory.pack.request_overlap import RequestOverlap
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem

MESSAGES = [
    {"role": "user", "content": "I work as a nurse at the St. Mary clinic.", "refs": ["tg:1"]},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Where do I work?", "refs": ["tg:2"]},
]
OVERLAP = RequestOverlap.of_messages(MESSAGES)


def item(content: str, layer: Layer, refs: list[str], tags: list[str] | None = None) -> MemoryItem:
    return MemoryItem(
        id=content[:8],
        layer=layer,
        type=ItemType.PROJECT_FACT,
        title=content[:80],
        content=content,
        scope="telegram:1",
        created_at=0.0,
        updated_at=0.0,
        tags=tags or [],
        references=refs,
    )


def test_an_episode_of_the_request_and_a_fact_it_states_word_for_word_are_carried() -> None:
    said = "I work as a nurse at the St. Mary clinic."
    assert OVERLAP.carries(item(said, Layer.EPISODIC, ["tg:1"]))
    assert OVERLAP.carries(item(said, Layer.SEMANTIC, ["tg:1"]))
    # As a group chat stores it: the speaker's name first.
    assert OVERLAP.carries(item(f"Ada: {said}", Layer.SEMANTIC, ["tg:1"], ["speaker:ada"]))


def test_what_the_request_does_not_say_is_not_carried() -> None:
    # An episode of another message, a fact in other words, a fact said earlier.
    assert not OVERLAP.carries(item("I live in Lisbon.", Layer.EPISODIC, ["tg:0"]))
    assert not OVERLAP.carries(item("Ada is a nurse at St. Mary.", Layer.SEMANTIC, ["tg:1"]))
    assert not OVERLAP.carries(item("My sister is Clara.", Layer.SEMANTIC, []))


def test_notes_of_carried_turns_go_and_so_does_what_only_framed_them() -> None:
    notes = (
        "## Today's Notes\n…\n[09:00] User: I work as a nurse at the St. Mary clinic. | "
        "Assistant: Noted.\n\n## Recent Context\n### 2026-11-22\n"
        "[18:00] User: I live in Lisbon. | Assistant: Lovely."
    )
    assert OVERLAP.without_carried_notes(notes) == (
        "## Recent Context\n### 2026-11-22\n[18:00] User: I live in Lisbon. | Assistant: Lovely."
    )


def test_notes_of_an_unanswered_turn_the_request_carries_go() -> None:
    # The model server was down: the turn's note has no answer, and the next request
    # carries the message itself; the model read it twice, once in "Today's Notes".
    overlap = RequestOverlap.of_messages(
        [
            {"role": "user", "content": "Remember that my favourite colour is green."},
            {"role": "assistant", "content": "[No answer was given to this message.]"},
            {"role": "user", "content": "What is my favourite colour?"},
        ]
    )
    # As written today (the words alone), and as an earlier version wrote it.
    for unanswered in ("", " | Assistant:", " | Assistant: "):
        notes = (
            "## Today's Notes\n[13:43] User: Remember that my favourite colour is green."
            + unanswered
        )
        assert overlap.without_carried_notes(notes) == ""


NOTE_KEPT = "[09:00] User: I live in Lisbon. | Assistant: Lovely."
NOTE_CARRIED = "[10:00] User: Where do I work? | Assistant: At St. Mary."


@given(st.lists(st.sampled_from(["## A", "### B", "…", "", NOTE_KEPT, NOTE_CARRIED])))
def test_notes_keep_every_uncarried_line_and_no_bare_framing(lines: list[str]) -> None:
    kept = OVERLAP.without_carried_notes("\n".join(lines)).splitlines()
    assert kept.count(NOTE_KEPT) == lines.count(NOTE_KEPT)
    assert NOTE_CARRIED not in kept
    content = [line for line in kept if line.strip()]
    for number, line in enumerate(content):
        if line == "…":  # "earlier notes left out" only before notes it is about
            assert number + 1 < len(content) and content[number + 1] == NOTE_KEPT


def test_an_earlier_bots_message_is_carried_by_its_name_in_memory_or_as_memory_kept_it() -> None:
    """After a move the session names the earlier bot's message 1 `tg-bot<id>:1`; memory
    does too, or, renamed before memory renamed its refs, keeps `tg:1`."""
    said = "I work as a nurse at the St. Mary clinic."
    moved = RequestOverlap.of_messages(
        [{"role": "user", "content": said, "refs": ["tg-bot654321:1"]}]
    )
    assert moved.carries(item(said, Layer.EPISODIC, ["tg-bot654321:1"]))
    assert moved.carries(item(said, Layer.EPISODIC, ["tg:1"]))
    assert not moved.carries(item(said, Layer.EPISODIC, ["tg-bot777:1"]))
