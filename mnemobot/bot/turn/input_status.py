"""What `/status` says of the conversation's input tokens (`prompt_usage`), in the reader's
words: how many the model server took from its cache, and which figures are estimates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemobot.bot.i18n import Words
from mnemobot.systems.model_call.prompt_usage import input_counts


def input_tokens_line(words: Words, metadata: Mapping[str, Any]) -> str:
    counts = input_counts(metadata)
    if counts is None:
        return words.gettext("Input tokens: no model call in this conversation yet")
    # "~": some calls' figures are the bot's estimate (the server did not say them).
    about = "~" if counts.estimated else ""
    if counts.estimated == counts.calls:
        guess = words.gettext("estimated: the model server does not say how many")
    else:
        guess = words.gettext(
            "{count} of them estimated: the model server did not say how many",
            count=words.number(counts.estimated),
        )
    if not counts.told:
        why = (
            guess
            if counts.estimated
            else words.gettext("the model server does not say what it cached")
        )
        return words.ngettext(
            "Input tokens: {tokens} in {count} model call ({why})",
            "Input tokens: {tokens} in {count} model calls ({why})",
            counts.calls,
            tokens=about + words.number(counts.prompt),
            why=why,
        )
    share = f"{counts.cached / counts.prompt:.0%}" if counts.prompt else "0%"
    line = words.ngettext(
        "Input tokens: {cached} cached, {new} new ({share} from the model server's cache) in "
        "{count} model call",
        "Input tokens: {cached} cached, {new} new ({share} from the model server's cache) in "
        "{count} model calls",
        counts.calls,
        cached=words.number(counts.cached),
        new=about + words.number(counts.prompt - counts.cached),
        share=share,
    )
    return f"{line}; {guess}" if counts.estimated else line
