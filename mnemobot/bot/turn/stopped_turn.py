"""A turn the user stopped (/stop): its message's words are remembered, its answer not.

A stopped turn never reaches MemoryPersist (the cancellation ends the pipeline), yet the
user said what they said: "remember my sister's birthday is on 12 March", then /stop
because the answer was slow, must not be lost when the conversation is cleared later.
The half-written answer is not remembered: it is not the answer the model would have
given. Only /stop comes here; a turn cut by a shutdown runs again at the next start.
"""

from __future__ import annotations

import logging
from functools import partial

from mnemobot.base.clock import from_iso
from mnemobot.bot.tools.clock_tool import chat_zone_name
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.received import find_received
from mnemobot.config.zones import zone_or_local
from mnemobot.conversation.session import Message
from mnemobot.memory.services.unanswered import UnansweredTurn, record_unanswered
from mnemobot.systems.core.context import ChatRef, sole_speaker
from mnemobot.systems.core.turn_media import kept_parts, own_words

log = logging.getLogger(__name__)


def _answered_in_full(after: list[Message]) -> bool:
    """Whether the messages after a user message hold its whole answer (then its turn
    wrote its memory already): an answer, before the next user message, not stopped."""
    for message in after:
        if message.get("role") == "user":
            return False
        if message.get("role") != "assistant" or message.get("tool_calls"):
            continue
        if message.get("stopped"):
            return False
        if message.get("content"):
            return True
    return False


async def remember_stopped(assistant: Assistant, chat: ChatRef, refs: list[str]) -> bool:
    """Remember the words of the stopped turn of the message with these refs, unless its
    turn got that far itself; True when they were written now."""
    config = assistant.config()
    record = assistant.record
    if record is None or not refs or not config.memory.enabled:
        return False
    async with assistant.lock_for(chat.key), assistant.sessions.exclusive(chat.key):
        session = assistant.sessions.get(chat.key)
        found = find_received(session.messages, refs)
        if found is None:
            # Stopped before its message was kept: nothing of it is in the conversation.
            return False
        message = session.messages[found.index]
        if (
            message.get("remembered")
            or message.get("scheduled")
            or _answered_in_full(session.messages[found.index + 1 :])
        ):
            return False
        parts = kept_parts(message.get("parts"))
        words = own_words(parts) if parts else str(message.get("content") or "")
        stamp = message.get("at")
        try:
            at = from_iso(stamp) if isinstance(stamp, str) else assistant.clock()
        except ValueError:
            at = assistant.clock()
        tags = message.get("tags")
        turn = UnansweredTurn(
            scope=assistant.scope_for(chat, config),
            chat_key=chat.key,
            user_text=words,
            at=at,
            tz=zone_or_local(chat_zone_name(session.metadata, config)),
            message_refs=list(refs),
            speaker=chat.user_name,
            note_speaker=chat.user_name if chat.is_group else None,
            tags=[str(tag) for tag in tags] if isinstance(tags, list) else (),
            sole_speaker=sole_speaker(chat, config),
        )
        try:
            await record.scopes.run(
                turn.scope, partial(record_unanswered, record, turn), write=True
            )
        except OSError as exc:
            log.warning("could not remember the stopped message in %s: %s", chat.key, exc)
            return False
        message["remembered"] = True
        await assistant.sessions.save_async(session)
        return True
