"""The LLM's Markdown as Telegram HTML: what each construct looks like, and that any input
gives HTML Telegram accepts (only its tags, balanced, nested the way it allows)."""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.bot.channels.telegram.markdown_html import markdown_to_telegram_html

# Markdown pieces a model produces, mixed with arbitrary text so odd combinations come up.
MARKDOWN_FRAGMENTS = [
    "**",
    "__",
    "*",
    "_",
    "~~",
    "~",
    "`",
    "``",
    "```",
    "```python\n",
    "\n```\n",
    "~~~\n",
    "\n",
    "\n\n",
    "# ",
    "### ",
    "> ",
    ">> ",
    "- ",
    "* ",
    "  - ",
    "1. ",
    "2) ",
    "- [ ] ",
    "|",
    " | ",
    "| a | b |\n|---|:-:|\n",
    "---\n",
    "***",
    "[",
    "]",
    "(",
    ")",
    '](https://example.com/a_b?x=1&y="2")',
    "](javascript:alert(1))",
    "<",
    ">",
    "&",
    "&amp;",
    '"',
    "\\",
    "https://example.com/snake_case_path",
    "<https://t.me/x>",
    "![img](http://i.example/p.png)",
    "snake_case",
    "2*3*4",
    " ",
    "  ",
    "\t",
    "😀",
    "é",
    "中文",
    "\u200b",
    "word",
    "Word",
    "x",
]
markdown_text = st.lists(
    st.one_of(st.sampled_from(MARKDOWN_FRAGMENTS), st.text(max_size=8)), max_size=60
).map("".join)

_TOKEN = re.compile(
    r'<(?P<slash>/?)(?P<name>[a-z-]+)(?P<attrs>(?: [a-z]+="[^"<>]*")*)>'
    r"|(?P<entity>&(?:amp|lt|gt|quot|#[0-9]+|#x[0-9a-fA-F]+);)"
    r"|(?P<text>[^<>&]+)"
)
_ATTRIBUTE = re.compile(r' ([a-z]+)="([^"]*)"')
_ATTRIBUTE_VALUE = re.compile(r"(?:[^&]|&(?:amp|lt|gt|quot|#[0-9]+|#x[0-9a-fA-F]+);)*")
_ALLOWED_ATTRIBUTES = {
    "b": set(),
    "i": set(),
    "u": set(),
    "s": set(),
    "tg-spoiler": set(),
    "blockquote": set(),
    "pre": set(),
    "code": {"class"},
    "a": {"href"},
}


def assert_telegram_html(text: str) -> None:
    """Fail unless ``text`` is HTML that Telegram's parse_mode=HTML accepts as we use it:
    only its tags and attributes, every tag closed in order, no stray ``< > &``, no empty
    element, nothing inside code, no link in a link, no quote in a quote, no code block
    in a quote."""
    stack: list[str] = []
    element_has_text: list[bool] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        assert match, f"stray markup at {position}: {text[position : position + 20]!r} in {text!r}"
        position = match.end()
        name = match.group("name")
        if name is None:  # text or an entity: every open element now has content
            element_has_text = [True] * len(element_has_text)
            continue
        if match.group("slash"):
            assert stack and stack[-1] == name, f"</{name}> closes {stack} in {text!r}"
            stack.pop()
            assert element_has_text.pop(), f"empty <{name}> in {text!r}"
            continue
        assert name in _ALLOWED_ATTRIBUTES, f"tag <{name}> not allowed: {text!r}"
        attributes = dict(_ATTRIBUTE.findall(match.group("attrs")))
        assert set(attributes) <= _ALLOWED_ATTRIBUTES[name], f"attributes of {match.group(0)}"
        for value in attributes.values():
            assert _ATTRIBUTE_VALUE.fullmatch(value), f"bad attribute value {value!r}"
        if name == "a":
            assert "href" in attributes
        inside = set(stack)
        assert "code" not in inside, f"<{name}> inside <code>: {text!r}"
        if "pre" in inside:
            assert name == "code" and stack[-1] == "pre", f"<{name}> inside <pre>: {text!r}"
            assert text[match.start() - 5 : match.start()] == "<pre>", "code must open the pre"
        assert not (name == "a" and "a" in inside), f"link in a link: {text!r}"
        assert not (name == "blockquote" and "blockquote" in inside), f"nested quote: {text!r}"
        assert not (name == "pre" and inside), f"<pre> inside {stack}: {text!r}"
        stack.append(name)
        element_has_text.append(False)
    assert not stack, f"unclosed {stack} in {text!r}"


def visible_text(telegram_html: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", "", telegram_html))


@settings(max_examples=400, deadline=None)
@given(markdown_text)
def test_any_markdown_renders_to_html_telegram_accepts(markdown: str) -> None:
    rendered = markdown_to_telegram_html(markdown)
    assert_telegram_html(rendered)
    assert rendered == rendered.strip()


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="abc <>&\"'\n", max_size=60).filter(
        lambda text: not any(line.lstrip().startswith(">") for line in text.split("\n"))
    )
)
def test_text_without_markdown_shows_exactly_as_written(text: str) -> None:
    # ('>' opening a line would be a quote, so it only appears inside lines here.)
    rendered = markdown_to_telegram_html(text)
    expected_lines = [line.strip() for line in text.strip().split("\n")]
    expected = re.sub(r"\n{2,}", "\n\n", "\n".join(expected_lines)).strip()
    assert visible_text(rendered) == expected


def test_empty_and_whitespace_only_input_renders_nothing() -> None:
    assert markdown_to_telegram_html("") == ""
    assert markdown_to_telegram_html(" \n\t\n  ") == ""


def test_emphasis_strike_and_inline_code() -> None:
    assert markdown_to_telegram_html(
        "**bold**, __bold__, *italic*, _italic_, ~~gone~~, `x < y`"
    ) == (
        "<b>bold</b>, <b>bold</b>, <i>italic</i>, <i>italic</i>, <s>gone</s>, <code>x &lt; y</code>"
    )


def test_nested_and_combined_emphasis() -> None:
    assert markdown_to_telegram_html("***all*** and *a **b** c*") == (
        "<i><b>all</b></i> and <i>a <b>b</b> c</i>"
    )


def test_no_italics_inside_words_or_arithmetic() -> None:
    text = "use my_var_name and snake_case_words; 2*3*4 = 24; a*b*c"
    assert markdown_to_telegram_html(text) == text


def test_underscores_in_bare_urls_stay_as_written() -> None:
    text = "see https://example.com/some_path_here_ok and _this_"
    assert markdown_to_telegram_html(text) == (
        "see https://example.com/some_path_here_ok and <i>this</i>"
    )


def test_unmatched_markers_stay_literal() -> None:
    assert markdown_to_telegram_html("**open and `tick and ~~tilde") == (
        "**open and `tick and ~~tilde"
    )


def test_html_in_the_text_is_escaped_not_interpreted() -> None:
    assert markdown_to_telegram_html('<script>alert("x")</script> & <b>no</b>') == (
        '&lt;script&gt;alert("x")&lt;/script&gt; &amp; &lt;b&gt;no&lt;/b&gt;'
    )


def test_fenced_code_keeps_its_language_and_is_not_interpreted() -> None:
    markdown = "Run:\n\n```python\nif a < b and **c**:\n    print(`x` & _y_)\n```\n\nDone."
    assert markdown_to_telegram_html(markdown) == (
        "Run:\n\n"
        '<pre><code class="language-python">if a &lt; b and **c**:\n'
        "    print(`x` &amp; _y_)</code></pre>\n\n"
        "Done."
    )


def test_code_fence_without_language_and_tilde_fence() -> None:
    assert markdown_to_telegram_html("```\n*a*\n```") == "<pre>*a*</pre>"
    assert markdown_to_telegram_html("~~~\n`b`\n~~~") == "<pre>`b`</pre>"


def test_unclosed_fence_at_the_end_is_still_a_code_block() -> None:
    assert markdown_to_telegram_html("Partial answer:\n```js\nconst a = 1 && 2;") == (
        'Partial answer:\n<pre><code class="language-js">const a = 1 &amp;&amp; 2;</code></pre>'
    )


def test_fence_indented_in_a_list_item_loses_that_indentation() -> None:
    markdown = "1. Install:\n   ```bash\n   pip install x\n     --upgrade\n   ```\n2. Run it"
    assert markdown_to_telegram_html(markdown) == (
        "1. Install:\n"
        '<pre><code class="language-bash">pip install x\n  --upgrade</code></pre>\n'
        "2. Run it"
    )


def test_links_with_allowed_schemes_become_links() -> None:
    assert markdown_to_telegram_html(
        '[docs](https://example.com/?a=1&b="2") [me](tg://user?id=1) [mail](mailto:a@b.c)'
    ) == (
        '<a href="https://example.com/?a=1&amp;b=&quot;2&quot;">docs</a> '
        '<a href="tg://user?id=1">me</a> <a href="mailto:a@b.c">mail</a>'
    )


def test_links_with_other_schemes_stay_text() -> None:
    assert markdown_to_telegram_html("[click](javascript:alert(1)) [file](notes/a.md)") == (
        "click (javascript:alert(1)) file (notes/a.md)"
    )


def test_autolink_image_and_formatted_link_label() -> None:
    assert markdown_to_telegram_html("<https://t.me/x> ![a cat](https://i.example/c.png)") == (
        '<a href="https://t.me/x">https://t.me/x</a> <a href="https://i.example/c.png">a cat</a>'
    )
    assert markdown_to_telegram_html("[**bold** `code`](https://e.x)") == (
        '<a href="https://e.x"><b>bold</b> code</a>'
    )


def test_headings_become_bold_lines() -> None:
    assert markdown_to_telegram_html("# Title #\n\n### Step *two*\ntext\n#hashtag") == (
        "<b>Title</b>\n\n<b>Step <i>two</i></b>\ntext\n#hashtag"
    )


def test_bullet_numbered_nested_and_task_lists() -> None:
    markdown = (
        "- apples\n* pears\n  - green\n1. one\n1. two\n   more of two\n- [ ] todo\n- [x] done"
    )
    assert markdown_to_telegram_html(markdown) == (
        "• apples\n• pears\n  • green\n1. one\n2. two\n   more of two\n• ☐ todo\n• ☑ done"
    )


def test_loose_list_keeps_its_blank_lines_and_numbering() -> None:
    assert markdown_to_telegram_html("1. **a**\n\n1. b\n\nafter") == (
        "1. <b>a</b>\n\n2. b\n\nafter"
    )


def test_blockquote_with_formatting_and_quoted_code() -> None:
    markdown = "> said **this**\n> and that\n>> nested\n>\n> ```\n> code\n> ```\n> end"
    assert markdown_to_telegram_html(markdown) == (
        "<blockquote>said <b>this</b>\nand that\nnested</blockquote>\n\n"
        "<pre>code</pre>\n<blockquote>end</blockquote>"
    )


def test_horizontal_rule_and_setext_heading() -> None:
    assert markdown_to_telegram_html("above\n\n---\n\nTitle\n=====\nbelow") == (
        "above\n\n────────────\n\n<b>Title</b>\nbelow"
    )


def test_table_becomes_an_aligned_preformatted_block() -> None:
    markdown = (
        "| Name | Qty | Note |\n"
        "|:-----|----:|:----:|\n"
        "| **Apple** | 3 | a<br>b |\n"
        "| Kiwi \\| Fig | 12 |\n"
        "| 中文 | 1 | x |"
    )
    assert markdown_to_telegram_html(markdown) == (
        "<pre>"
        "Name       | Qty | Note\n"
        "-----------+-----+-----\n"
        "Apple      |   3 | a b\n"
        "Kiwi | Fig |  12 |\n"
        "中文       |   1 |  x"
        "</pre>"
    )


def test_pipe_lines_without_a_delimiter_row_are_text() -> None:
    assert markdown_to_telegram_html("a | b\nc | d") == "a | b\nc | d"
