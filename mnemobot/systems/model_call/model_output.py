"""What the model sends back, made safe to keep, resend and show. Pure functions.

A model server is trusted to be an API, not to be well-behaved: it may answer with control
characters (a NUL makes Telegram refuse the message), with millions of characters where
`maxOutputTokens` allowed thousands, with two tool calls under one id (every later request
would carry the pair, and strict servers refuse it), or with megabytes of arguments that
the session would resend with every request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import orjson

from mnemobot.systems.core.llm import ToolCall

# C0 controls but tab and newline, DEL and the C1 controls; a carriage return goes too
# (a CR LF becomes LF, a lone CR a newline).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def without_control_characters(text: str) -> str:
    """`text` without control characters; line breaks and tabs stay."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def cut_reply(text: str, max_chars: int) -> str:
    """`text`, or its first `max_chars` characters and a line saying the rest was cut."""
    if len(text) <= max_chars:
        return text
    return (
        text[:max_chars].rstrip()
        + f"\n\n(The model's answer was {len(text):,} characters long; it was cut after "
        f"{max_chars:,}, the most one answer may have.)"
    )


def unique_call_ids(calls: Sequence[ToolCall], taken: Iterable[str]) -> list[ToolCall]:
    """`calls` with every id unique, within the response and against `taken` (the ids
    already in the session): a repeated or empty id gets a suffix."""
    seen = set(taken)
    unique = []
    for number, call in enumerate(calls):
        call_id = call.id or f"call_{number}"
        if call_id in seen:
            suffix = 2
            while f"{call_id}_{suffix}" in seen:
                suffix += 1
            call_id = f"{call_id}_{suffix}"
        seen.add(call_id)
        unique.append(call if call_id == call.id else ToolCall(call_id, call.name, call.arguments))
    return unique


def stored_arguments(arguments: str, max_chars: int) -> str:
    """Tool-call arguments as the session keeps them: as they are, or when longer than
    `max_chars`, a small JSON object with their start and their length (still valid JSON,
    which some servers parse when the history is sent back)."""
    if len(arguments) <= max_chars:
        return arguments
    start = arguments[: max(0, max_chars - 200)]
    note = {"cut": f"arguments of {len(arguments):,} characters, kept cut", "start": start}
    return orjson.dumps(note).decode()
