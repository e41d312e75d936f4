"""A count with its English noun, "1 page", "2 pages": for words never translated (the
CLI's and the log's lines, what the model reads, file listings). What the bot says to a
user in the user's language counts with `Words.ngettext` (bot/i18n.py) instead; its
strings are in the gettext catalogs, these are not."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, the noun plural (`plural`, else noun + "s") unless count is 1."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
