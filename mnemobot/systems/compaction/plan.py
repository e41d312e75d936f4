"""Where to cut a session when compacting (pure functions).

The cut keeps the last `keep_last` messages, moved earlier when needed so that an
assistant message that calls tools is never separated from its tool results, and so the
newest user message always stays; then later to the first user message, so the kept
conversation opens with the user as every chat template accepts.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemobot.conversation.session import Message
from mnemobot.memory.upkeep.text_redaction import SUMMARY_PREFIX

__all__ = ["SUMMARY_PREFIX", "CompactionPlan", "is_summary", "plan_compaction"]


def is_summary(message: Message) -> bool:
    return message.get("role") == "system" and str(message.get("content", "")).startswith(
        SUMMARY_PREFIX
    )


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    previous_summary: str | None
    dropped: list[Message]
    kept: list[Message]

    @property
    def is_empty(self) -> bool:
        return not self.dropped


def plan_compaction(messages: list[Message], keep_last: int) -> CompactionPlan:
    keep_last = max(1, keep_last)
    previous = None
    body = messages
    if messages and is_summary(messages[0]):
        previous = str(messages[0]["content"])
        body = messages[1:]
    cut = max(0, len(body) - keep_last)
    # Never start the kept part with tool results whose call would be dropped.
    while 0 < cut < len(body) and body[cut].get("role") == "tool":
        cut -= 1
    # The newest user message stays, whatever keep_last says.
    last_user = max((i for i, m in enumerate(body) if m.get("role") == "user"), default=None)
    if last_user is not None and cut > last_user:
        cut = last_user
        while cut > 0 and body[cut].get("role") == "tool":
            cut -= 1
    # The kept part starts with a user message: strict chat templates (Mistral's, Gemma's)
    # refuse a conversation whose first turn after the system prompt is the assistant's.
    # The answers before it go into the summary with their tool results.
    if last_user is not None:
        while cut < last_user and body[cut].get("role") != "user":
            cut += 1
    return CompactionPlan(previous_summary=previous, dropped=body[:cut], kept=body[cut:])
