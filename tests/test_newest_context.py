"""The block that goes with the newest message: framed, and read back apart from it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.systems.core.newest_context import (
    CONTEXT_CLOSE,
    CONTEXT_OPEN,
    context_block,
    split_context,
    with_newest_context,
)

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
_TIME = st.sampled_from(["", "09:05 UTC", "18:00 JST", "23:59 CET"])


@given(parts=st.lists(_TEXT, max_size=3), time=_TIME, message=_TEXT)
def test_the_message_is_read_back_whole_and_the_block_never_ends_early(
    parts: list[str], time: str, message: str
) -> None:
    # Recalled text may hold the markers (a group member wrote them): the message the
    # model is sent is always what the user wrote, and the block holds what was recalled.
    block = context_block(parts, time=time)
    [sent] = with_newest_context([{"role": "user", "content": message}], block)
    body, own = split_context(str(sent["content"]))
    assert own == message
    if time:
        assert f"Time now: {time}" in body
    for part in parts:
        if part.strip() and CONTEXT_OPEN not in part and CONTEXT_CLOSE not in part:
            assert part.strip() in body


def test_a_time_alone_goes_unframed_and_recall_goes_framed_as_data() -> None:
    assert context_block([], time="10:36 UTC") == "[Time now: 10:36 UTC]"
    assert context_block(["  "], time="") == ""
    framed = context_block(["# Memory\n- Ada lives in Porto"], time="10:36 UTC")
    assert framed.startswith(CONTEXT_OPEN + "\nTime now: 10:36 UTC.\n\n# Memory")
    assert framed.endswith(CONTEXT_CLOSE)
