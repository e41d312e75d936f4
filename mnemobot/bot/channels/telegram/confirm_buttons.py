"""Tool confirmations on Telegram: the question with "Run it" / "Cancel" buttons, and presses.

The question goes through the outbox like any note (in order, retried through outages).
A press is settled at once (`Confirmations.press`: only the user who was asked counts);
telling Telegram about it (the small notice on the presser's screen, the question edited
to say who answered) goes on in the background, off the path that reads updates.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from telegram import Bot, CallbackQuery, Message
from telegram.error import TelegramError

from mnemobot.bot.channels.telegram.replies import ReplyTarget, text_messages
from mnemobot.bot.delivery.outbox import Outbox
from mnemobot.bot.tools.confirmations import Confirmations, Press
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)

CALLBACK_PREFIX = "confirm:"
HOW_TO_ANSWER = 'Press a button, or reply "yes" or "no".'


def buttons(confirmation_id: str) -> dict[str, Any]:
    """The Bot API's inline keyboard for one question."""
    data = f"{CALLBACK_PREFIX}{confirmation_id}"
    return {
        "inline_keyboard": [
            [
                {"text": "Run it", "callback_data": f"{data}:y"},
                {"text": "Cancel", "callback_data": f"{data}:n"},
            ]
        ]
    }


class TelegramConfirmButtons:
    """The Telegram channel's `ConfirmationPrompter`, and what it does with presses."""

    def __init__(self, bot: Bot, confirmations: Confirmations, outbox: Outbox) -> None:
        self.bot = bot
        self.confirmations = confirmations
        self.outbox = outbox
        self._background: set[asyncio.Task[None]] = set()

    async def ask(self, chat: ChatRef, confirmation_id: str, question: str) -> None:
        target = ReplyTarget(
            chat_id=int(chat.chat_id),
            thread_id=int(chat.thread_id) if chat.thread_id else None,
        )
        messages = text_messages(target, f"{question}\n{HOW_TO_ANSWER}")
        messages[-1]["buttons"] = buttons(confirmation_id)
        await self.outbox.put(chat.key, messages)

    def on_press(self, query: CallbackQuery) -> None:
        """Settle the question a button answers; Telegram is told in the background."""
        data = query.data or ""
        if not data.startswith(CALLBACK_PREFIX):
            self._later(self._answer(query, None))
            return
        confirmation_id, _, choice = data.removeprefix(CALLBACK_PREFIX).rpartition(":")
        yes = choice == "y"
        press = self.confirmations.press(confirmation_id, str(query.from_user.id), yes)
        if press is Press.NOT_YOURS:
            self._later(self._answer(query, "Only the person who asked can answer this."))
            return
        if press is Press.CLOSED:
            self._later(self._answer(query, "This question is no longer open."))
            self._later(self._settle(query, "(no longer open)"))
            return
        name = query.from_user.first_name or query.from_user.username or "the user"
        self._later(self._answer(query, "Running it." if yes else "Cancelled."))
        self._later(self._settle(query, f"{'Confirmed' if yes else 'Cancelled'} by {name}."))

    def _later(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _answer(self, query: CallbackQuery, text: str | None) -> None:
        try:
            await self.bot.answer_callback_query(query.id, text=text)
        except TelegramError as error:
            log.debug("answering a button press failed: %s", error)

    async def _settle(self, query: CallbackQuery, outcome: str) -> None:
        """The question without its buttons, saying how it was answered."""
        message = query.message
        if not isinstance(message, Message) or not message.text:
            return
        try:
            await self.bot.edit_message_text(
                chat_id=message.chat.id,
                message_id=message.message_id,
                text=f"{message.text.removesuffix(HOW_TO_ANSWER).rstrip()}\n{outcome}",
                reply_markup=None,
            )
        except TelegramError as error:
            log.debug("editing a confirmation question failed: %s", error)
