"""The inline pass of the Markdown renderer: escaping, code spans, links and emphasis.

A small tokenizer turns a block's text into literal HTML pieces and delimiter runs
(``*``, ``_``, ``~``); the CommonMark delimiter algorithm then pairs the runs into
``<b>``, ``<i>``, ``<s>`` and ``<u>`` tags, so every tag is closed and properly nested.
Only ``LINK_SCHEMES`` become clickable; a link contains no link or code. Pure functions:
``markdown_html`` (the block pass) calls ``render_inline`` on each block's text.
"""

from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["LINK_SCHEMES", "escape_attribute", "escape_text", "render_inline", "visible_text"]

# Only these become clickable: anything else (javascript:, data:, relative paths) is shown
# as text so a model cannot plant a surprising link.
LINK_SCHEMES = ("http://", "https://", "tg://", "mailto:")

_ASCII_PUNCTUATION = frozenset(string.punctuation)
# A longer URL stays text: its opening tag alone would crowd out a message when re-opened.
_MAX_URL_LENGTH = 2048
# A URL that cannot be a link is shown after its label, unless it is longer than this.
_MAX_SHOWN_URL = 200
# Bound the work spent on one '[' that never becomes a link (keeps rendering linear).
_MAX_LINK_LABEL = 1000

_TAG = re.compile(r"<[^>]*>")
_INLINE_SPECIAL = re.compile(r"[\\`*_~\[!<]|(?<![\w/])https?://", re.IGNORECASE)
_BARE_URL = re.compile(r"https?://[^\s<>`]*", re.IGNORECASE)
_AUTOLINK = re.compile(r"<((?:https?|tg)://[^\s<>]+|mailto:[^\s<>]+)>", re.IGNORECASE)
_URL_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_URL_TRAILING_PUNCTUATION = ".,:;!?\"'*_~"


def escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attribute(text: str) -> str:
    return escape_text(text).replace('"', "&quot;")


def visible_text(html: str) -> str:
    """Tags removed, our own four entities decoded (we never emit any other)."""
    text = _TAG.sub("", html)
    return (
        text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    )


def _is_link_target(url: str) -> bool:
    lowered = url.lower()
    return (
        lowered.startswith(LINK_SCHEMES)
        and len(url) <= _MAX_URL_LENGTH
        and _URL_FORBIDDEN.search(url) is None
    )


# --------------------------------------------------------------------------- blocks


@dataclass(eq=False, slots=True)
class _Delimiter:
    """A run of ``*``, ``_`` or ``~``; matched runs gain tags, leftovers stay literal."""

    char: str
    length: int
    count: int
    can_open: bool
    can_close: bool
    active: bool = True
    open_tags: list[str] = field(default_factory=list)
    close_tags: list[str] = field(default_factory=list)

    def render(self) -> str:
        if not self.open_tags and not self.close_tags:
            return self.char * self.count
        closing = "".join(f"</{tag}>" for tag in self.close_tags)
        opening = "".join(f"<{tag}>" for tag in self.open_tags)
        return closing + self.char * self.count + opening


def render_inline(text: str, *, in_link: bool = False) -> str:
    nodes = _inline_nodes(text, in_link=in_link)
    _match_emphasis([node for node in nodes if isinstance(node, _Delimiter)])
    return "".join(node if isinstance(node, str) else node.render() for node in nodes)


def _is_space(ch: str) -> bool:
    return not ch or ch.isspace()


def _is_punctuation(ch: str) -> bool:
    if ch.isascii():
        return ch in _ASCII_PUNCTUATION
    return unicodedata.category(ch)[0] in "PS"


def _delimiter(text: str, start: int, end: int) -> _Delimiter:
    char = text[start]
    length = end - start
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    left = not _is_space(after) and (
        not _is_punctuation(after) or _is_space(before) or _is_punctuation(before)
    )
    right = not _is_space(before) and (
        not _is_punctuation(before) or _is_space(after) or _is_punctuation(after)
    )
    if char == "_":
        can_open = left and (not right or _is_punctuation(before))
        can_close = right and (not left or _is_punctuation(after))
    else:
        can_open, can_close = left, right
        if char == "*" and length == 1:
            # Stricter than CommonMark: a lone '*' inside a word (2*3*4, a*b) is a symbol.
            can_open = can_open and not before.isalnum()
            can_close = can_close and not after.isalnum()
        if char == "~" and length != 2:
            can_open = can_close = False
    return _Delimiter(char, length, length, can_open, can_close)


@lru_cache(maxsize=16)
def _backtick_closer(length: int) -> re.Pattern[str]:
    return re.compile(rf"(?<!`)`{{{length}}}(?!`)")


def _inline_nodes(text: str, *, in_link: bool) -> list[str | _Delimiter]:
    nodes: list[str | _Delimiter] = []
    literal: list[str] = []
    no_closer_after: dict[int, int] = {}  # backtick run length -> position with no closer beyond
    next_label_end = -1  # where the next "](" is: without one, no '[' can start a link

    def flush() -> None:
        if literal:
            nodes.append(escape_text("".join(literal)))
            literal.clear()

    i = 0
    n = len(text)
    while i < n:
        match = _INLINE_SPECIAL.search(text, i)
        if match is None:
            literal.append(text[i:])
            break
        j = match.start()
        if j > i:
            literal.append(text[i:j])
        ch = text[j]
        if ch == "\\":
            following = text[j + 1 : j + 2]
            if following and following in _ASCII_PUNCTUATION:
                literal.append(following)
                i = j + 2
            else:
                literal.append("\\")
                i = j + 1
        elif ch == "`":
            end = j
            while end < n and text[end] == "`":
                end += 1
            length = end - j
            closer = None
            if no_closer_after.get(length, n + 1) > end:
                closer = _backtick_closer(length).search(text, end)
                if closer is None:
                    no_closer_after[length] = end
            if closer is None:
                literal.append(text[j:end])
                i = end
                continue
            code = text[end : closer.start()].replace("\n", " ")
            if len(code) > 1 and code[0] == " " and code[-1] == " " and code.strip(" "):
                code = code[1:-1]
            flush()
            nodes.append(escape_text(code) if in_link else f"<code>{escape_text(code)}</code>")
            i = closer.end()
        elif ch in "*_~":
            end = j
            while end < n and text[end] == ch:
                end += 1
            flush()
            nodes.append(_delimiter(text, j, end))
            i = end
        elif ch in "[!":
            image = ch == "!"
            if image and not text.startswith("[", j + 1):
                literal.append("!")
                i = j + 1
                continue
            bracket = j + 1 if image else j
            if next_label_end < bracket:
                next_label_end = text.find("](", bracket)
                if next_label_end < 0:
                    next_label_end = n  # no link can start from here on
            link = None if in_link or next_label_end >= n else _parse_link(text, bracket)
            if link is None:
                literal.append(ch)
                i = j + 1
                continue
            label, url, i = link
            flush()
            nodes.append(_render_link(label, url))
        elif ch == "<":
            autolink = _AUTOLINK.match(text, j)
            if autolink and not in_link and _is_link_target(autolink.group(1)):
                flush()
                url = autolink.group(1)
                nodes.append(f'<a href="{escape_attribute(url)}">{escape_text(url)}</a>')
                i = autolink.end()
            else:
                literal.append("<")
                i = j + 1
        else:
            # A bare URL is kept whole so its underscores and stars are never emphasis;
            # Telegram makes it clickable by itself.
            url = _bare_url(text, j)
            literal.append(url)
            i = j + len(url)
    flush()
    return nodes


def _bare_url(text: str, start: int) -> str:
    match = _BARE_URL.match(text, start)
    url = match.group(0) if match else text[start]
    while url:
        last = url[-1]
        if last in _URL_TRAILING_PUNCTUATION or (last == ")" and url.count("(") < url.count(")")):
            url = url[:-1]
            continue
        break
    return url or text[start]


def _render_link(label: str, url: str) -> str:
    label_html = render_inline(label, in_link=True)
    if _is_link_target(url):
        shown = label_html if visible_text(label_html).strip() else escape_text(url)
        return f'<a href="{escape_attribute(url)}">{shown}</a>'
    if not url or len(url) > _MAX_SHOWN_URL:
        return label_html  # (a data: URL of an image would flood the message)
    return f"{label_html} ({escape_text(url)})"


def _parse_link(text: str, start: int) -> tuple[str, str, int] | None:
    """``[label](url "title")`` at ``start`` (the '['): label, url, index after ')'."""
    n = len(text)
    depth = 0
    i = start + 1
    limit = min(n, start + 1 + _MAX_LINK_LABEL)
    while i < limit:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "`":
            end = i
            while end < n and text[end] == "`":
                end += 1
            closer = _backtick_closer(end - i).search(text, end, limit)
            i = closer.end() if closer else end
            continue
        if ch == "[":
            depth += 1
        elif ch == "]":
            if depth == 0:
                break
            depth -= 1
        i += 1
    else:
        return None
    label_end = i
    if not text.startswith("(", label_end + 1):
        return None
    i = label_end + 2
    while i < n and text[i] in " \t":
        i += 1
    if i < n and text[i] == "<":
        close = text.find(">", i + 1)
        if close == -1 or "\n" in text[i + 1 : close]:
            return None
        url = text[i + 1 : close]
        i = close + 1
    else:
        url_start = i
        parens = 0
        while i < n and not text[i].isspace() and i - url_start <= _MAX_URL_LENGTH:
            if text[i] == "(":
                parens += 1
            elif text[i] == ")":
                if parens == 0:
                    break
                parens -= 1
            i += 1
        url = text[url_start:i]
    while i < n and text[i] in " \t\n":
        i += 1
    if i < n and text[i] in "\"'(":
        closing = ")" if text[i] == "(" else text[i]
        close = text.find(closing, i + 1)
        if close == -1:
            return None
        i = close + 1
        while i < n and text[i] in " \t\n":
            i += 1
    if i >= n or text[i] != ")":
        return None
    return text[start + 1 : label_end], url, i + 1


def _match_emphasis(delimiters: list[_Delimiter]) -> None:
    """CommonMark's "process emphasis": pair each closer with the nearest fitting opener.

    Pairing with the nearest opener and retiring every run between the two is what keeps
    the resulting tags properly nested.
    """
    bottoms: dict[tuple[str, bool, int], int] = {}
    for closer_index, closer in enumerate(delimiters):
        while closer.active and closer.can_close and closer.count:
            key = (closer.char, closer.can_open, closer.length % 3)
            bottom = bottoms.get(key, -1)
            opener_index = -1
            for index in range(closer_index - 1, bottom, -1):
                opener = delimiters[index]
                if (
                    not (opener.active and opener.can_open and opener.count)
                    or opener.char != closer.char
                ):
                    continue
                if (
                    opener.char != "~"
                    and (opener.can_close or closer.can_open)
                    and (opener.length + closer.length) % 3 == 0
                    and not (opener.length % 3 == 0 and closer.length % 3 == 0)
                ):
                    continue
                opener_index = index
                break
            if opener_index < 0:
                bottoms[key] = closer_index - 1
                break
            opener = delimiters[opener_index]
            if closer.char == "~":
                used, tag = 2, "s"
            else:
                used = 2 if opener.count >= 2 and closer.count >= 2 else 1
                tag = "b" if used == 2 else "i"
            opener.count -= used
            closer.count -= used
            opener.open_tags.insert(0, tag)
            closer.close_tags.append(tag)
            for between in delimiters[opener_index + 1 : closer_index]:
                between.active = False
