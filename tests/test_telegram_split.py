"""Splitting a rendered reply into Telegram messages: each fits, each is valid HTML on its
own, and together they show exactly the whole reply (less the whitespace at the cuts)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.bot.channels.telegram.markdown_html import markdown_to_telegram_html
from mnemobot.bot.channels.telegram.split import (
    WHITESPACE,
    TelegramChunk,
    split_for_telegram,
    split_plain_for_telegram,
    utf16_len,
)
from tests.test_telegram_markdown_html import assert_telegram_html, markdown_text, visible_text


def assert_reassembles(whole: str, pieces: list[str]) -> list[str]:
    """The pieces are ``whole`` in order, less exactly the whitespace at each cut.

    Precisely: ``whole == w0 + p0 + w1 + p1 + ... + pn + w(n+1)`` where every ``w`` is a
    (possibly empty) run of WHITESPACE and every piece is non-empty and neither starts nor
    ends with WHITESPACE, so each ``w`` between two pieces is the whole whitespace run at that
    cut (empty only for a hard cut inside a word). Returns the dropped runs between pieces.
    """
    dropped: list[str] = []
    position = len(whole) - len(whole.lstrip(WHITESPACE))
    for index, piece in enumerate(pieces):
        assert piece, "an empty chunk"
        assert piece[0] not in WHITESPACE and piece[-1] not in WHITESPACE, repr(piece)
        assert whole.startswith(piece, position), (
            f"chunk {index} {piece!r} is not next in {whole!r}"
        )
        position += len(piece)
        run_end = len(whole) - len(whole[position:].lstrip(WHITESPACE))
        if index < len(pieces) - 1:
            dropped.append(whole[position:run_end])
        position = run_end
    assert position == len(whole), f"text after the last chunk: {whole[position:]!r}"
    return dropped


def assert_valid_chunks(rendered: str, chunks: list[TelegramChunk], limit: int) -> list[str]:
    for chunk in chunks:
        assert utf16_len(chunk.html) <= limit, (limit, chunk.html)
        assert_telegram_html(chunk.html)
        assert chunk.plain == visible_text(chunk.html)
    return assert_reassembles(visible_text(rendered), [chunk.plain for chunk in chunks])


@settings(max_examples=400, deadline=None)
@given(markdown_text, st.integers(min_value=16, max_value=300))
def test_any_reply_splits_into_valid_chunks_that_reassemble(markdown: str, limit: int) -> None:
    rendered = markdown_to_telegram_html(markdown)
    chunks = split_for_telegram(rendered, limit)
    assert_valid_chunks(rendered, chunks, limit)
    assert bool(chunks) == bool(visible_text(rendered).strip(WHITESPACE))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(["\n", "\n\n", " ", "😀", "&"]), st.text(max_size=12))).map(
        "".join
    ),
    st.integers(min_value=16, max_value=120),
)
def test_any_plain_text_splits_into_pieces_that_reassemble(text: str, limit: int) -> None:
    pieces = split_plain_for_telegram(text, limit)
    assert all(utf16_len(piece) <= limit for piece in pieces)
    assert_reassembles(text, pieces)


def long_reply() -> str:
    """About 10,000 characters: paragraphs, a code block longer than one message, a list."""
    paragraph = (
        "Step {n}: the **answer** explains this part in detail, with `code_{n}` and a "
        "[link](https://example.com/docs?a=1&b=2) so the reader can follow along. "
    )
    paragraphs = [(paragraph * 4).format(n=n).strip() for n in range(4)]
    code = "\n".join(f"    total_{n} = compute({n}) if {n} < limit else None" for n in range(90))
    items = "\n".join(f"- item {n}: keep *this* point & that one in mind" for n in range(60))
    return (
        "# Report\n\n"
        + "\n\n".join(paragraphs[:2])
        + f"\n\n```python\ndef run(limit):\n{code}\n```\n\n"
        + "\n\n".join(paragraphs[2:])
        + f"\n\n{items}\n\nThat is all."
    )


def test_a_long_reply_splits_at_line_breaks_and_reassembles_exactly() -> None:
    markdown = long_reply()
    assert 9_500 <= len(markdown) <= 10_500
    rendered = markdown_to_telegram_html(markdown)
    chunks = split_for_telegram(rendered)

    assert len(chunks) >= 3
    dropped = assert_valid_chunks(rendered, chunks, 4096)
    # Every cut falls between lines (what is dropped is the line break, plus the next
    # line's indentation when the cut is inside the code block).
    assert all(run.strip(" ") in ("\n", "\n\n") for run in dropped), dropped
    # The code block is longer than a message: its second part is a code block again, in
    # the same language, and the first part ends the chunk it starts in.
    python_block = '<pre><code class="language-python">'
    first = next(c for c in chunks if python_block in c.html)
    assert first.html.endswith("</code></pre>")
    second = chunks[chunks.index(first) + 1]
    assert second.html.startswith(python_block)
    assert second.plain.startswith("total_")


def test_empty_or_whitespace_only_input_gives_no_chunks() -> None:
    assert split_for_telegram("") == []
    assert split_for_telegram(" \n\n\t ") == []
    assert split_for_telegram("<b> \n </b>") == []
    assert split_plain_for_telegram("") == []
    assert split_plain_for_telegram("  \n ") == []


def test_a_short_reply_is_one_chunk_unchanged() -> None:
    rendered = '<b>Hi</b> &amp; <a href="https://e.x/?a=1&amp;b=2">bye</a>'
    assert split_for_telegram(rendered) == [TelegramChunk(rendered, "Hi & bye")]


def test_paragraph_break_preferred_over_line_break_and_space() -> None:
    # At 30 units the first chunk could run to "ffff"; the blank line wins (it is past half).
    rendered = "aaaa bbbb cccc dddd\n\neeee\nffff gggg"
    chunks = split_for_telegram(rendered, 30)
    assert [c.html for c in chunks] == ["aaaa bbbb cccc dddd", "eeee\nffff gggg"]


def test_a_break_in_the_first_half_of_a_chunk_yields_to_a_later_lesser_one() -> None:
    rendered = "alpha beta gamma\n\ndelta epsilon\nzeta eta theta iota kappa"
    chunks = split_for_telegram(rendered, 30)
    assert [c.html for c in chunks] == [
        "alpha beta gamma",
        "delta epsilon\nzeta eta theta",  # the line break at 13 of 30 would waste the chunk
        "iota kappa",
    ]


def test_line_break_preferred_over_space_when_no_paragraph_fits() -> None:
    rendered = "alpha beta gamma delta\nepsilon zeta eta theta iota kappa"
    chunks = split_for_telegram(rendered, 30)
    assert [c.html for c in chunks] == [
        "alpha beta gamma delta",
        "epsilon zeta eta theta iota",
        "kappa",
    ]


def test_open_tags_are_closed_and_reopened_with_their_attributes() -> None:
    rendered = (
        '<blockquote><b>one two three <a href="https://e.x/?q=1&amp;r=2">four five six seven'
        "</a> eight</b></blockquote>"
    )
    chunks = split_for_telegram(rendered, 100)
    assert [c.html for c in chunks] == [
        '<blockquote><b>one two three <a href="https://e.x/?q=1&amp;r=2">four five six</a></b>'
        "</blockquote>",
        '<blockquote><b><a href="https://e.x/?q=1&amp;r=2">seven</a> eight</b></blockquote>',
    ]
    assert [c.plain for c in chunks] == ["one two three four five six", "seven eight"]


def test_code_block_continues_with_its_language_in_the_next_chunk() -> None:
    rendered = '<pre><code class="language-python">x = 1\ny = 2\nz = 3</code></pre>'
    chunks = split_for_telegram(rendered, 60)
    assert [c.html for c in chunks] == [
        '<pre><code class="language-python">x = 1\ny = 2</code></pre>',
        '<pre><code class="language-python">z = 3</code></pre>',
    ]
    assert [c.plain for c in chunks] == ["x = 1\ny = 2", "z = 3"]


def test_hard_cut_never_splits_an_entity() -> None:
    rendered = "<b>" + "&amp;&lt;" * 20 + "</b>"
    chunks = split_for_telegram(rendered, 20)
    assert_valid_chunks(rendered, chunks, 20)
    # <b> + &amp; + &lt; + </b> is 16 units; one more &amp; would make 21.
    assert [c.html for c in chunks] == ["<b>&amp;&lt;</b>"] * 20


def test_hard_cut_never_splits_a_surrogate_pair() -> None:
    text = "😀" * 30
    pieces = split_plain_for_telegram(text, 17)
    assert pieces == ["😀" * 8, "😀" * 8, "😀" * 8, "😀" * 6]
    chunks = split_for_telegram("x" + text, 17)
    assert [c.html for c in chunks] == ["x" + "😀" * 8, "😀" * 8, "😀" * 8, "😀" * 6]


def test_a_link_too_long_to_reopen_keeps_its_text() -> None:
    rendered = f'<a href="https://e.x/{"p" * 60}">label words here</a>'
    chunks = split_for_telegram(rendered, 40)
    assert [c.plain for c in chunks] == ["label words here"]
    assert chunks[0].html == "label words here"


def test_plain_fallback_is_the_visible_text() -> None:
    rendered = markdown_to_telegram_html("**Total:** 3 < 4 & `a > b`")
    assert [c.plain for c in split_for_telegram(rendered)] == ["Total: 3 < 4 & a > b"]


def test_plain_text_splits_prefer_paragraphs_and_keep_the_text_as_is() -> None:
    text = "first <b>line & more</b>\n\nsecond paragraph text\nthird"
    assert split_plain_for_telegram(text, 30) == [
        "first <b>line & more</b>",
        "second paragraph text\nthird",
    ]


def test_utf16_len_counts_like_telegram() -> None:
    assert utf16_len("") == 0
    assert utf16_len("abc") == 3
    assert utf16_len("é中") == 2
    assert utf16_len("a😀") == 3


def test_a_limit_too_small_to_hold_a_tag_pair_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        split_for_telegram("<b>x</b>", 10)
