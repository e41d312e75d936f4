"""/retry in Telegram: a sender's last message that could not be read, read again.

A voice note the speech server could not hear, a file Telegram would not hand over: the
message is kept (its file in the chat's files folder, its note in the chat session's
metadata) and `/retry` reads it again as a turn of its own, in order with the chat's
other messages. Apart from the reading itself (`media_turn`): this is what is kept between
the failure and the retry, and the job that asks for it.
"""

from __future__ import annotations

import logging
from typing import Any

from mnemobot.bot.channels.lanes import MessageJob
from mnemobot.bot.channels.telegram.inbound import Inbound, inbound_from_json, inbound_to_json
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)


class RetryRequest:
    """A job part standing for /retry: the chat's last unread message, looked up when the
    turn starts (in order with the chat's other messages)."""


RETRY = RetryRequest()


def retry_job(chat: ChatRef, message_id: int, quote: int | None, receipt: str) -> MessageJob:
    """/retry as a turn in the chat's lane (answering the /retry message itself)."""
    return MessageJob(
        chat,
        "",
        message_refs=(f"tg:{message_id}",),
        reply_to_message_id=quote,
        receipts=(receipt,),
        parts=(RETRY,),
    )


class UnreadNotes:
    """The last message of a sender in a chat that could not be read (its file as kept),
    for /retry: in the chat session's metadata, so it outlives a restart, reaches every
    replica and goes with the chat when it is erased. In a group each member retries
    their own."""

    KEY = "telegramUnread"

    def __init__(self, assistant: Assistant, chat: ChatRef) -> None:
        self.assistant = assistant
        self.chat = chat
        self.sender = chat.user_id or ""

    def _held(self, metadata: dict[str, Any]) -> dict[str, Any]:
        held = metadata.get(self.KEY)
        return held if isinstance(held, dict) else {}

    async def waiting(self) -> Inbound | None:
        """The note /retry reads again, left in place until `settle`: a crash or /stop
        while it is read leaves it for the next /retry."""
        found: list[object] = []

        def look(metadata: dict[str, Any]) -> None:
            found.append(self._held(metadata).get(self.sender))

        # Under the chat's lock, which also fetches the session another replica saved.
        await self.assistant.read_metadata(self.chat, look)
        note = found[0] if found else None
        try:
            return inbound_from_json(note) if isinstance(note, dict) else None
        except (KeyError, TypeError, ValueError):
            return None  # written by another version: nothing to read again

    async def settle(self, last_unread: Inbound | None, read_kinds: set[str]) -> None:
        """After the turn's messages were read: the newest unread one waits for /retry; a
        waiting one of a kind this turn did read (read by /retry, or sent again and heard)
        is dropped, since /retry would answer the same words a second time."""
        if last_unread is None and not read_kinds:
            return

        def settle(metadata: dict[str, Any]) -> bool:
            held = self._held(metadata)
            if last_unread is not None:
                held[self.sender] = inbound_to_json(last_unread)
            else:
                waiting = held.get(self.sender)
                file = waiting.get("file") if isinstance(waiting, dict) else None
                if not isinstance(file, dict) or file.get("kind") not in read_kinds:
                    return False
                del held[self.sender]
            metadata[self.KEY] = held
            return True

        try:
            await self.assistant.change_metadata(self.chat, settle)
        except OSError as exc:
            # Kept in memory all the same, and written with the chat's next save.
            log.warning("could not store the session of %s (%s)", self.chat.key, exc)
