"""Texts forgotten and not yet erased, kept out of the conversation a request carries.

The erasure redacts a chat's session only when it can hold it: with replicas, a chat that
never goes quiet for its wait keeps the old messages until the next maintenance run, hours
later. Meanwhile every turn redacts its own session the same way the erasure would, so
the model is never sent a forgotten text from an earlier message: the user's words, the
answers, the tool results and the arguments of the tool calls (the memory tool's `add`
quotes what it keeps) alike. The message being answered stays as written: a text said
again now is said on purpose.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemobot.conversation.session import Message
from mnemobot.memory.upkeep.forgetting import NO_ARGUMENTS
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts


def keep_forgotten_out(
    messages: Sequence[Message], forgotten: ForgottenTexts, *, current: object
) -> int:
    """Redact, in place, every message but `current` holding a forgotten text; how many."""
    if not forgotten:
        return 0
    redacted = 0
    for message in messages:
        if message is current:
            continue
        content = message.get("content")
        changed = False
        if isinstance(content, str) and forgotten.holds(content):
            message["content"] = forgotten.redact(content)
            changed = True
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            if forgotten.holds(str(function.get("arguments") or "")):
                function["arguments"] = NO_ARGUMENTS
                changed = True
        redacted += changed
    return redacted
