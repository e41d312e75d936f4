"""Reading a chat's raw message history: the append-only offload log plus the live session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemobot.base.atomic_file import read_jsonl
from mnemobot.conversation.session import Message
from mnemobot.memory.text.terms import terms


@dataclass(frozen=True, slots=True)
class LoggedMessage:
    at: str
    role: str
    text: str


def _text_of(message: Mapping[str, Any]) -> str:
    """A session message's text, or a logged record's (any JSON object: read with care)."""
    content = message.get("content")
    if isinstance(content, str) and content:
        return content
    calls = message.get("tool_calls") or []
    if calls:
        return "(called " + ", ".join(str(c.get("function", {}).get("name")) for c in calls) + ")"
    return ""


def read_history(log_path: Path, live: list[Message]) -> list[LoggedMessage]:
    """Every raw message of the chat, oldest first: the offload log, then the live session."""
    logged = read_jsonl(log_path).records
    out = []
    for message in [*logged, *(m for m in live if m.get("role") != "system")]:
        text = _text_of(message)
        if text:
            out.append(LoggedMessage(str(message.get("at", "")), str(message.get("role")), text))
    return out


def search_history(log_paths: list[Path], query: str, *, limit: int = 10) -> list[LoggedMessage]:
    """Offloaded messages sharing the most terms with `query`, best first, newest on ties."""
    wanted = set(terms(query))
    if not wanted:
        return []
    scored: list[tuple[int, int, LoggedMessage]] = []
    position = 0
    for path in log_paths:
        for message in read_jsonl(path).records:
            position += 1
            text = _text_of(message)
            hits = len(wanted.intersection(terms(text)))
            if hits:
                entry = LoggedMessage(str(message.get("at", "")), str(message.get("role")), text)
                scored.append((hits, position, entry))
    scored.sort(key=lambda row: (row[0], row[1]), reverse=True)
    return [entry for _, _, entry in scored[:limit]]
