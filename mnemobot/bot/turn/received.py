"""A message already in the conversation, found by its channel refs: a redelivered one
(not stored or answered twice), an edited one, a scheduled task's firing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mnemobot.base.clock import from_iso
from mnemobot.conversation.session import Message

# How far back a redelivered message is looked for: far more than one crash can leave
# unanswered in a chat (its queue is capped), few enough to cost nothing per turn.
RECEIVED_LOOKBACK_MESSAGES = 200


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    index: int
    # The final answer that followed it, if the turn got that far.
    answer: str | None


def find_received(messages: list[Message], refs: list[str]) -> ReceivedMessage | None:
    """The user message with these channel refs among the newest ones, and its answer.

    A message handed to the bot again (redelivered after a crash) is recognised by its refs,
    so it is neither stored twice nor, if it was answered, answered by a second turn.
    """
    if not refs:
        return None
    wanted = list(refs)
    start = max(0, len(messages) - RECEIVED_LOOKBACK_MESSAGES)
    for index in range(len(messages) - 1, start - 1, -1):
        message = messages[index]
        if message.get("role") == "user" and message.get("refs") == wanted:
            answer = None
            for later in messages[index + 1 :]:
                if later.get("role") == "user":
                    break
                # `reply`: the whole text the user read, when it is more than the content
                # (what the model wrote before its tool calls, a stop mark).
                content = later.get("reply") or later.get("content")
                if later.get("role") == "assistant" and content and not later.get("tool_calls"):
                    answer = str(content)
            return ReceivedMessage(index, answer)
    return None


def find_cut_short(messages: list[Message], refs: list[str]) -> int | None:
    """The index of the newest user message when it is still unanswered and `refs` holds
    its refs and more: a turn a crash cut short, handed over again merged with newer
    messages. That turn goes on, with their words too, from the steps it had done."""
    newest = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"),
        None,
    )
    if newest is None:
        return None
    own = messages[newest].get("refs")
    if not isinstance(own, list) or not own or not set(own) < set(refs):
        return None
    found = find_received(messages, [str(ref) for ref in own])
    return newest if found is not None and found.answer is None else None


def find_containing(messages: list[Message], ref: str) -> ReceivedMessage | None:
    """The newest user message whose refs include `ref` (alone, or merged with others)."""
    start = max(0, len(messages) - RECEIVED_LOOKBACK_MESSAGES)
    for index in range(len(messages) - 1, start - 1, -1):
        message = messages[index]
        refs = message.get("refs")
        if message.get("role") == "user" and isinstance(refs, list) and ref in refs:
            found = find_received(messages, [str(r) for r in refs])
            return found if found is not None else ReceivedMessage(index, None)
    return None


# Session metadata: the numbering the session's channel refs are in (a Telegram bot's id
# for a private chat or a basic group, which Telegram numbers per account).
REFS_NUMBERED_BY = "refsNumberedBy"
_LIVE_PREFIX = "tg:"


def retire_other_numbering(
    messages: list[Message], metadata: dict[str, Any], numbering: str | None
) -> bool:
    """Give the refs of an earlier numbering names of their own; True when any changed.

    A workspace moved to another bot: that bot numbers a private chat's messages from 1
    again, so its message 1 would be taken for the earlier bot's message 1 (answered with
    that message's answer, or an edit of it rewriting the older one). The earlier refs
    become `tg-bot<earlier bot>:<n>`. A session from before this was recorded is taken
    as the current bot's, as the bot that upgrades is the one that received it.
    `numbering` None: the chat numbers messages once for every bot (a supergroup).
    """
    if numbering is None:
        return False
    earlier = metadata.get(REFS_NUMBERED_BY)
    metadata[REFS_NUMBERED_BY] = numbering
    if earlier is None or earlier == numbering:
        return earlier is None
    retired = f"tg-bot{earlier}:"

    def retire(ref: str) -> str:
        return retired + ref.removeprefix(_LIVE_PREFIX) if ref.startswith(_LIVE_PREFIX) else ref

    for message in messages:
        refs = message.get("refs")
        if isinstance(refs, list):
            message["refs"] = [retire(str(ref)) for ref in refs]
        parts = message.get("parts")
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, dict) and isinstance(part.get("ref"), str):
                    part["ref"] = retire(part["ref"])
    return True


_RETIRED_REF = re.compile(r"^tg-bot(\d+):\d+$")
_LIVE_REF = re.compile(r"^tg:\d+$")


def earlier_numberings(messages: list[Message], now: float) -> list[tuple[str, float]]:
    """(earlier bot, when the next bot's first message came) for each move the
    conversation shows, oldest first: what memory from before it kept which bot numbers
    its refs needs to rename them (`memory.upkeep.ref_numbering`). Newest messages of an
    earlier bot: the move is this turn's (`now`). A move whose messages the conversation
    no longer holds (cleared, compacted away) is not shown."""
    moves: list[tuple[str, float]] = []
    before: str | None = None
    for message in messages:
        numbering = _numbering_of(message)
        if numbering is None:
            continue
        if before and numbering != before:
            try:
                moves.append((before, from_iso(str(message.get("at")))))
            except ValueError:
                continue
        before = numbering
    if before:
        moves.append((before, now))
    return moves


def _numbering_of(message: Message) -> str | None:
    """The earlier bot whose message a user message is; "" the current bot's; None when
    its refs name no Telegram message of the chat's own numbering."""
    refs = message.get("refs")
    if message.get("role") != "user" or not isinstance(refs, list):
        return None
    for ref in refs:
        if retired := _RETIRED_REF.match(str(ref)):
            return retired.group(1)
        if _LIVE_REF.match(str(ref)):
            return ""
    return None
