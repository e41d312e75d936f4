"""The conversation as the lines the summary and flush models read, and their answers read
back: pure functions for `compactor`.

Each message is one line ("user (Anna): ...", "assistant: ..."), cut to a length; a text
forgotten and not yet erased reads "[forgotten]"; the lines are split into parts that fit
the model's window.
"""

from __future__ import annotations

import re

from mnemobot.base.tokens import cut_to_tokens, estimate_tokens
from mnemobot.conversation.session import Message
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.systems.core.context import NO_REPLY


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def transcript_lines(
    messages: list[Message],
    per_message_chars: int,
    *,
    tools: bool,
    forgotten: ForgottenTexts | None = None,
) -> list[str]:
    lines = []
    for message in messages:
        role = message.get("role")
        if role == "tool" and not tools:
            continue
        content = str(message.get("content") or "")
        if forgotten:
            content = forgotten.redact(content)
        if not content and message.get("tool_calls"):
            names = ", ".join(c["function"]["name"] for c in message["tool_calls"])
            content = f"(called tools: {names})"
        if content:
            # Who wrote it, so a group's summary and flushed facts keep each member's own.
            who = f"{role} ({message['from']})" if role == "user" and message.get("from") else role
            lines.append(f"{who}: {_cut(content, per_message_chars)}")
    return lines


_LABEL = re.compile(r"^(?:user \((?P<name>[^)]*)\)|[a-z]+): ")


def said(line: str) -> tuple[str | None, str]:
    """A transcript line's writer (a group member's name; None for a role alone) and
    text: "user (Boris): hi" is ("Boris", "hi"), "assistant: hi" is (None, "hi")."""
    match = _LABEL.match(line)
    if match is None:
        return None, line
    return match["name"], line[match.end() :]


def transcript(messages: list[Message], per_message_chars: int, *, tools: bool) -> str:
    return "\n".join(transcript_lines(messages, per_message_chars, tools=tools))


def split_lines(lines: list[str], budget_tokens: int) -> list[list[str]]:
    """`lines` in consecutive parts of at most `budget_tokens` (estimated) each; a line
    longer than that on its own is cut to fit."""
    parts: list[list[str]] = []
    current: list[str] = []
    used = 0
    for line in lines:
        cost = estimate_tokens(line) + 1
        if cost > budget_tokens:
            # The newline and the "…" cost a token each; a part has room for a few words.
            line = cut_to_tokens(" ".join(line.split()), max(4, budget_tokens - 2)) + "…"
            cost = estimate_tokens(line) + 1
        if current and used + cost > budget_tokens:
            parts.append(current)
            current, used = [], 0
        current.append(line)
        used += cost
    if current:
        parts.append(current)
    return parts


def parse_bullets(answer: str) -> list[str]:
    """The flush model's bullets; none when it answered NO_REPLY, its word for nothing
    worth keeping (part of the prompt's contract, not a tunable)."""
    if answer.strip().upper().startswith(NO_REPLY):
        return []
    bullets = []
    for line in answer.splitlines():
        line = line.strip()
        if line[:2] in ("- ", "* ", "• "):
            line = line[2:].strip()
        elif line[:1] == "-":
            line = line[1:].strip()
        else:
            continue
        if len(line) >= 3:
            bullets.append(line)
    return bullets
