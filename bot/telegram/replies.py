"""Delivering replies to Telegram: Markdown -> HTML, split, send, fall back, retry, typing.

The reply is already in the session when it gets here (the Assistant saves the turn), so a
reply that cannot be delivered is logged and given up on without losing anything: the user
can ask again and the bot still knows what it said.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from telegram import Bot, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from bot.telegram.markdown_html import markdown_to_telegram_html
from bot.telegram.split import split_for_telegram, split_plain_for_telegram

log = logging.getLogger(__name__)

NETWORK_ATTEMPTS = 5
FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    chat_id: int
    # Forum topic of the message being answered; replies must go to the same topic.
    thread_id: int | None = None
    # Quoted by the first chunk (groups), so it is clear whom the bot answers.
    reply_to_message_id: int | None = None


def is_entity_parse_error(error: BadRequest) -> bool:
    return "can't parse entities" in error.message.lower()


class ReplySender:
    def __init__(
        self,
        bot: Bot,
        *,
        attempts: int = NETWORK_ATTEMPTS,
        first_backoff_seconds: float = FIRST_BACKOFF_SECONDS,
    ) -> None:
        self.bot = bot
        self.attempts = attempts
        self.first_backoff_seconds = first_backoff_seconds

    async def send_reply(self, target: ReplyTarget, markdown: str) -> bool:
        """Send the model's Markdown as formatted chunks; True if every chunk got through."""
        chunks = split_for_telegram(markdown_to_telegram_html(markdown))
        delivered = True
        for index, chunk in enumerate(chunks):
            quote = target.reply_to_message_id if index == 0 else None
            try:
                sent = await self._send(target, chunk.html, ParseMode.HTML, quote)
            except BadRequest as error:
                if not is_entity_parse_error(error):
                    raise
                # Our HTML should always parse; if Telegram disagrees, the words still matter
                # more than the formatting.
                log.warning(
                    "Telegram rejected reply HTML in %s (%s); sending plain text",
                    target.chat_id,
                    error.message,
                )
                sent = await self._send(target, chunk.plain, None, quote)
            delivered = delivered and sent
        return delivered

    async def send_text(self, target: ReplyTarget, text: str) -> bool:
        """Send our own plain text (notices, command answers) without any parse mode."""
        delivered = True
        for index, part in enumerate(split_plain_for_telegram(text)):
            quote = target.reply_to_message_id if index == 0 else None
            delivered = await self._send(target, part, None, quote) and delivered
        return delivered

    async def _send(
        self, target: ReplyTarget, text: str, parse_mode: str | None, quote: int | None
    ) -> bool:
        """One sendMessage with retries on network trouble; False if it never got through."""
        reply_parameters = (
            ReplyParameters(message_id=quote, allow_sending_without_reply=True)
            if quote is not None
            else None
        )
        backoff = self.first_backoff_seconds
        for attempt in range(1, self.attempts + 1):
            try:
                await self.bot.send_message(
                    chat_id=target.chat_id,
                    text=text,
                    parse_mode=parse_mode,
                    message_thread_id=target.thread_id,
                    reply_parameters=reply_parameters,
                )
                return True
            except BadRequest as error:
                if parse_mode is not None and is_entity_parse_error(error):
                    raise
                log.error("Telegram refused a reply to %s: %s", target.chat_id, error.message)
                return False
            except Forbidden as error:
                # Blocked by the user or removed from the group: retrying cannot help.
                log.warning("cannot write to %s: %s", target.chat_id, error.message)
                return False
            except RetryAfter as error:
                # The rate limiter already retried; wait as told and try once more per attempt.
                wait = error.retry_after
                seconds = wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)
                await asyncio.sleep(seconds)
            except NetworkError as error:
                if attempt == self.attempts:
                    log.error(
                        "reply to %s not delivered after %d attempts: %s",
                        target.chat_id,
                        attempt,
                        error,
                    )
                    return False
                log.info(
                    "sending to %s failed (%s); retrying in %.1fs", target.chat_id, error, backoff
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
            except TelegramError as error:
                log.error("reply to %s failed: %s", target.chat_id, error)
                return False
        return False

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget, interval_seconds: float) -> AsyncIterator[None]:
        """Show "typing..." at once and keep it up until the block ends (it lasts ~5 s)."""
        task = asyncio.create_task(self._keep_typing(target, interval_seconds))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep_typing(self, target: ReplyTarget, interval_seconds: float) -> None:
        while True:
            try:
                await self.bot.send_chat_action(
                    chat_id=target.chat_id,
                    action=ChatAction.TYPING,
                    message_thread_id=target.thread_id,
                )
            except TelegramError as error:
                # Cosmetic: a lost typing action must never hold up or fail the reply.
                log.debug("typing action for %s failed: %s", target.chat_id, error)
            await asyncio.sleep(interval_seconds)
