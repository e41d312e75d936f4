"""A session's message refs when the workspace moves to another bot (pure function)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.turn.received import (
    REFS_NUMBERED_BY,
    earlier_numberings,
    find_received,
    retire_other_numbering,
)
from mnemobot.conversation.session import Message

_refs = st.lists(
    st.one_of(
        st.integers(1, 10_000).map(lambda n: f"tg:{n}"),
        st.integers(1, 50).map(lambda n: f"sched:{n}"),
        st.integers(1, 50).map(lambda n: f"tg-export:{n}"),
    ),
    min_size=1,
    max_size=3,
)


def _session(refs: list[list[str]]) -> list[Message]:
    messages: list[Message] = []
    for own in refs:
        messages.append({"role": "user", "content": "hi", "refs": list(own)})
        messages.append({"role": "assistant", "content": "hello"})
    return messages


@given(st.lists(_refs, max_size=6), st.lists(_refs, max_size=3))
def test_another_bots_refs_never_match_the_new_bots_messages(
    earlier: list[list[str]], later: list[list[str]]
) -> None:
    messages = _session(earlier)
    metadata: dict[str, Any] = {REFS_NUMBERED_BY: "111"}
    assert retire_other_numbering(messages, metadata, "222")
    assert metadata[REFS_NUMBERED_BY] == "222"
    live = [ref for m in messages for ref in m.get("refs") or [] if ref.startswith("tg:")]
    assert live == []
    # Whatever the new bot's messages are numbered, none is taken for an earlier one.
    for refs in later:
        if all(ref.startswith("tg:") for ref in refs):
            assert find_received(messages, refs) is None
    # Refs of other kinds (a scheduled task's, an import's) stay as they were.
    kept = [r for own in earlier for r in own if not r.startswith("tg:")]
    assert kept == [
        r for m in messages for r in m.get("refs") or [] if not r.startswith("tg-bot111:")
    ]
    # The same bot again changes nothing.
    before = [dict(m) for m in messages]
    assert not retire_other_numbering(messages, metadata, "222")
    assert [dict(m) for m in messages] == before


@given(st.lists(_refs, max_size=6))
def test_a_session_from_before_numbering_was_kept_is_the_current_bots(
    earlier: list[list[str]],
) -> None:
    messages = _session(earlier)
    before = [dict(m) for m in messages]
    metadata: dict[str, Any] = {}
    retire_other_numbering(messages, metadata, "222")
    assert [dict(m) for m in messages] == before
    assert metadata[REFS_NUMBERED_BY] == "222"
    # A chat every bot numbers alike (a supergroup) is never renumbered.
    assert not retire_other_numbering(messages, {REFS_NUMBERED_BY: "111"}, None)
    assert [dict(m) for m in messages] == before


def _said(refs: list[str], minute: int) -> Message:
    return {"role": "user", "content": "hi", "refs": refs, "at": f"2025-03-01T09:{minute:02d}:00Z"}


def _at(minute: int) -> float:
    return datetime(2025, 3, 1, 9, minute, tzinfo=UTC).timestamp()


def test_the_moves_a_conversation_shows_are_when_the_next_bots_first_message_came() -> None:
    """For memory kept before it recorded which bot numbers its refs (an upgrade)."""
    messages = [
        _said(["tg:1"], 0),
        {"role": "assistant", "content": "hello"},
        _said(["sched:3"], 1),
        _said(["tg:2", "tg:3"], 2),
    ]
    # The same bot all along.
    assert earlier_numberings(messages, _at(30)) == []
    # Moved at this turn: the earlier bot's messages are all the conversation has.
    retire_other_numbering(messages, {REFS_NUMBERED_BY: "111"}, "222")
    assert earlier_numberings(messages, _at(30)) == [("111", _at(30))]
    # Moved before: the new bot's first message says when; and a third bot since.
    messages += [_said(["tg:1"], 10), _said(["tg:2"], 11)]
    assert earlier_numberings(messages, _at(30)) == [("111", _at(10))]
    retire_other_numbering(messages, {REFS_NUMBERED_BY: "222"}, "333")
    messages.append(_said(["tg:1"], 20))
    assert earlier_numberings(messages, _at(30)) == [("111", _at(10)), ("222", _at(20))]
