"""Replies to Telegram: Markdown -> HTML chunks for the outbox, one delivery, typing.

A reply becomes outbox messages (`reply_messages`, `text_messages`): each chunk under
Telegram's 4096 UTF-16 units, with its HTML and a plain-text twin. The outbox keeps them on
disk and calls `TelegramDelivery.deliver` for each, in order per chat, until Telegram takes
it. `deliver` makes one attempt and says what happened: sent; worth retrying (network,
server errors, rate limits, with Telegram's `retry_after` when it gives one); or refused for
good (blocked by the user, chat gone, a request Telegram will never accept). A chunk whose
HTML Telegram cannot parse is sent again at once as plain text: the words matter more than
the formatting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from telegram import Bot, InlineKeyboardMarkup, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)

from mnemobot.bot.channels.telegram.markdown_html import markdown_to_telegram_html
from mnemobot.bot.channels.telegram.split import split_for_telegram, split_plain_for_telegram
from mnemobot.bot.delivery.outbox import Delivery, DeliveryResult

log = logging.getLogger(__name__)

# Telegram's limit on a document's caption, in characters.
CAPTION_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    chat_id: int
    # Forum topic of the message being answered; replies must go to the same topic.
    thread_id: int | None = None
    # Quoted by the first chunk (groups), so it is clear whom the bot answers.
    reply_to_message_id: int | None = None


def is_entity_parse_error(error: BadRequest) -> bool:
    return "can't parse entities" in error.message.lower()


def _message(target: ReplyTarget, index: int, plain: str, html: str | None) -> dict[str, Any]:
    return {
        "chat_id": target.chat_id,
        "thread_id": target.thread_id,
        "quote": target.reply_to_message_id if index == 0 else None,
        "html": html,
        "plain": plain,
    }


def reply_messages(target: ReplyTarget, markdown: str) -> list[dict[str, Any]]:
    """The model's Markdown as outbox messages: formatted chunks with plain twins."""
    chunks = split_for_telegram(markdown_to_telegram_html(markdown))
    return [_message(target, i, chunk.plain, chunk.html) for i, chunk in enumerate(chunks)]


def text_messages(target: ReplyTarget, text: str) -> list[dict[str, Any]]:
    """Our own plain text (notices, command answers) as outbox messages."""
    return [
        _message(target, i, part, None) for i, part in enumerate(split_plain_for_telegram(text))
    ]


def document_message(target: ReplyTarget, path: str, filename: str, caption: str) -> dict[str, Any]:
    """A file on disk, sent as a document (Telegram caps captions at 1024 characters)."""
    return {
        "chat_id": target.chat_id,
        "thread_id": target.thread_id,
        "quote": target.reply_to_message_id,
        "document": path,
        "filename": filename,
        "plain": caption[:CAPTION_LIMIT],
    }


def long_reply_messages(
    target: ReplyTarget, markdown: str, max_messages: int
) -> list[dict[str, Any]]:
    """A reply as outbox messages, at most `max_messages` of text: a longer one sends its
    first part and then the whole reply as a Markdown file (kept in the outbox entry
    itself, so nothing else on disk holds it)."""
    messages = reply_messages(target, markdown)
    if len(messages) <= max_messages:
        return messages
    caption = (
        f"The whole answer ({len(markdown):,} characters, too long for {max_messages} "
        "messages) is in this file; the messages above are its beginning."
    )
    document = {
        "chat_id": target.chat_id,
        "thread_id": target.thread_id,
        "quote": None,
        "document_text": markdown,
        "filename": "answer.md",
        "plain": caption[:CAPTION_LIMIT],
    }
    return [*messages[:max_messages], document]


def as_edits(messages: list[dict[str, Any]], preview_ids: list[int]) -> list[dict[str, Any]]:
    """The reply's messages as edits of the preview messages the user already sees (one per
    chunk, in order; the rest are sent); preview messages left over are deleted."""
    out = []
    for index, message in enumerate(messages):
        is_text = "document" not in message and "document_text" not in message
        if index < len(preview_ids) and is_text:
            message = {**message, "edit_message_id": preview_ids[index]}
        out.append(message)
    chunk_count = sum("edit_message_id" in m for m in out)
    for message_id in preview_ids[chunk_count:]:
        out.append({**messages[0], "delete_message_id": message_id, "html": None, "plain": ""})
    return out


def is_not_modified(error: BadRequest) -> bool:
    return "message is not modified" in error.message.lower()


def is_gone(error: BadRequest) -> bool:
    """The message to edit is not there to edit (deleted, too old, not ours)."""
    lowered = error.message.lower()
    return "message to edit not found" in lowered or "message can't be edited" in lowered


def _sent_to(message: dict[str, Any], chat_id: int) -> dict[str, Any]:
    """`message` for the supergroup a group became: no topic, no quote of the old chat."""
    return {**message, "chat_id": chat_id, "thread_id": None, "quote": None}


def _retry_seconds(error: RetryAfter) -> float:
    wait = error.retry_after
    return wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)


Migrated = Callable[[int, int], None]


class TelegramDelivery:
    """Sends outbox messages through the bot (and its rate limiter), one attempt each.

    A group that became a supergroup has a new chat id: a message for the old id is sent
    to the new one (without its quote, which Telegram would not find there), and so is
    every later one; `on_migrated` hears of the move.
    """

    def __init__(self, bot: Bot, on_migrated: Migrated | None = None) -> None:
        self.bot = bot
        self.on_migrated = on_migrated
        self.moved: dict[int, int] = {}

    async def deliver(self, message: dict[str, Any]) -> DeliveryResult:
        moved_to = self.moved.get(int(message["chat_id"]))
        if moved_to is not None:
            message = _sent_to(message, moved_to)
        try:
            return await self._deliver_once(message)
        except ChatMigrated as error:
            old, new = int(message["chat_id"]), int(error.new_chat_id)
        self.moved[old] = new
        log.info("chat %s became supergroup %s; sending there", old, new)
        if self.on_migrated is not None:
            self.on_migrated(old, new)
        try:
            return await self._deliver_once(_sent_to(message, new))
        except ChatMigrated as error:
            return DeliveryResult(Delivery.REFUSED, str(error))

    async def _deliver_once(self, message: dict[str, Any]) -> DeliveryResult:
        try:
            if "delete_message_id" in message:
                with contextlib.suppress(BadRequest):  # gone already
                    await self.bot.delete_message(message["chat_id"], message["delete_message_id"])
                return DeliveryResult(Delivery.SENT)
            if "document" in message or "document_text" in message:
                await self._send_document(message)
                return DeliveryResult(Delivery.SENT)
            html = message.get("html")
            if html is not None:
                try:
                    await self._send(message, html, ParseMode.HTML)
                    return DeliveryResult(Delivery.SENT)
                except BadRequest as error:
                    if not is_entity_parse_error(error):
                        raise
                    log.warning(
                        "Telegram rejected reply HTML in %s (%s); sending plain text",
                        message["chat_id"],
                        error.message,
                    )
            await self._send(message, message["plain"], None)
            return DeliveryResult(Delivery.SENT)
        except RetryAfter as error:
            return DeliveryResult(Delivery.RETRY, "rate limited", _retry_seconds(error))
        except ChatMigrated:
            raise  # `deliver` sends it to the new chat
        except Forbidden as error:
            # Blocked by the user or removed from the group: no retry helps.
            return DeliveryResult(Delivery.REFUSED, str(error))
        except BadRequest as error:
            return DeliveryResult(Delivery.REFUSED, error.message)
        except InvalidToken as error:
            # A revoked token may be replaced by the operator; keep the reply until then.
            return DeliveryResult(Delivery.RETRY, f"token rejected ({type(error).__name__})")
        except (NetworkError, TelegramError, OSError) as error:
            return DeliveryResult(Delivery.RETRY, str(error) or type(error).__name__)

    async def _send_document(self, message: dict[str, Any]) -> None:
        quote = message.get("quote")
        if "document_text" in message:
            data = str(message["document_text"]).encode()
        else:
            try:
                data = Path(message["document"]).read_bytes()
            except OSError as error:
                raise BadRequest(f"the file to send is gone: {error.strerror}") from None
        await self.bot.send_document(
            chat_id=message["chat_id"],
            document=data,
            filename=message["filename"],
            caption=message.get("plain") or None,
            message_thread_id=message.get("thread_id"),
            reply_parameters=(
                ReplyParameters(message_id=quote, allow_sending_without_reply=True)
                if quote is not None
                else None
            ),
        )

    async def _send(self, message: dict[str, Any], text: str, parse_mode: str | None) -> None:
        edit_id = message.get("edit_message_id")
        if edit_id is not None:
            try:
                await self.bot.edit_message_text(
                    text, chat_id=message["chat_id"], message_id=edit_id, parse_mode=parse_mode
                )
                return
            except BadRequest as error:
                if is_not_modified(error):
                    return  # already shows this (sent before a crash, or the preview had it)
                if not is_gone(error):
                    raise
                log.info("preview %s in %s is gone; sending the reply", edit_id, message["chat_id"])
        quote = message.get("quote")
        # Inline buttons (a tool's confirmation), kept in the entry as Bot API JSON.
        buttons = message.get("buttons")
        await self.bot.send_message(
            chat_id=message["chat_id"],
            text=text,
            parse_mode=parse_mode,
            message_thread_id=message.get("thread_id"),
            reply_parameters=(
                ReplyParameters(message_id=quote, allow_sending_without_reply=True)
                if quote is not None
                else None
            ),
            reply_markup=InlineKeyboardMarkup.de_json(buttons, self.bot) if buttons else None,
        )


@contextlib.asynccontextmanager
async def typing(
    bot: Bot,
    target: ReplyTarget,
    interval_seconds: float,
    delay_seconds: float,
    *,
    until: asyncio.Event | None = None,
) -> AsyncIterator[None]:
    """Show "typing..." while a reply is written, once it takes longer than `delay_seconds`.

    A quick reply needs no indicator, and every action spends part of the bot's share of
    Telegram's rate limit; a slow one shows it, refreshed every `interval_seconds` (an
    action lasts about 5 s).
    """
    task = asyncio.create_task(
        _keep_typing(bot, target, interval_seconds, delay_seconds, until or asyncio.Event())
    )
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _keep_typing(
    bot: Bot,
    target: ReplyTarget,
    interval_seconds: float,
    delay_seconds: float,
    until: asyncio.Event,
) -> None:
    await asyncio.sleep(delay_seconds)
    while not until.is_set():
        try:
            await bot.send_chat_action(
                chat_id=target.chat_id,
                action=ChatAction.TYPING,
                message_thread_id=target.thread_id,
            )
        except TelegramError as error:
            # Cosmetic: a lost typing action must never hold up or fail the reply.
            log.debug("typing action for %s failed: %s", target.chat_id, error)
        # The reply's text showing ends "typing…" (`until`).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until.wait(), interval_seconds)
