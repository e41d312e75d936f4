"""Tool confirmations on Telegram: the question with "Run it" / "Cancel" buttons, and presses.

The question goes through the outbox like any note (in order, retried through outages),
its buttons and "how to answer" line in the asker's language.
A press is settled at once (`Confirmations.press`: only the user who was asked counts);
telling Telegram about it (the small notice on the presser's screen, the question edited
to say who answered), in the presser's language, goes on in the background, off the path
that reads updates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from telegram import Bot, CallbackQuery, Message
from telegram.error import TelegramError

from mnemobot.bot.channels.telegram.replies import ReplyTarget, text_messages
from mnemobot.bot.delivery.outbox import Outbox
from mnemobot.bot.i18n import LANGUAGES, N_, Words, words_for
from mnemobot.bot.tools.confirmations import Confirmations, Press
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)

CALLBACK_PREFIX = "confirm:"
HOW_TO_ANSWER = N_('Press a button, or reply "yes" or "no".')


def buttons(confirmation_id: str, words: Words) -> dict[str, Any]:
    """The Bot API's inline keyboard for one question."""
    data = f"{CALLBACK_PREFIX}{confirmation_id}"
    return {
        "inline_keyboard": [
            [
                {"text": words.gettext("Run it"), "callback_data": f"{data}:y"},
                {"text": words.gettext("Cancel"), "callback_data": f"{data}:n"},
            ]
        ]
    }


def without_how_to_answer(question: str) -> str:
    """The question without its last line saying how to answer, in whichever language it
    was asked (the presser's may differ, and a press after a restart knows no asker)."""
    for language in LANGUAGES:
        how = words_for(language).gettext(HOW_TO_ANSWER)
        if question.endswith(how):
            return question.removesuffix(how).rstrip()
    return question.rstrip()


class TelegramConfirmButtons:
    """The Telegram channel's `ConfirmationPrompter`, and what it does with presses."""

    def __init__(
        self,
        bot: Bot,
        confirmations: Confirmations,
        outbox: Outbox,
        is_admin: Callable[[ChatRef], Awaitable[bool]] | None = None,
    ) -> None:
        """`is_admin`: whether a chat's member administers it (asked of Telegram), for a
        question an anonymous administrator asked; None: only the asker's own id counts."""
        self.is_admin = is_admin
        self.bot = bot
        self.confirmations = confirmations
        self.outbox = outbox
        self._background: set[asyncio.Task[None]] = set()

    async def ask(self, chat: ChatRef, confirmation_id: str, question: str) -> None:
        target = ReplyTarget(
            chat_id=int(chat.chat_id),
            thread_id=int(chat.thread_id) if chat.thread_id else None,
        )
        words = words_for(chat.language)
        messages = text_messages(target, f"{question}\n{words.gettext(HOW_TO_ANSWER)}")
        messages[-1]["buttons"] = buttons(confirmation_id, words)
        await self.outbox.put(chat.key, messages)

    def on_press(self, query: CallbackQuery) -> None:
        """Settle the question a button answers; Telegram is told in the background."""
        data = query.data or ""
        if not data.startswith(CALLBACK_PREFIX):
            self._later(self._answer(query, None))
            return
        confirmation_id, _, choice = data.removeprefix(CALLBACK_PREFIX).rpartition(":")
        yes = choice == "y"
        group = self.confirmations.asked_as_group(confirmation_id)
        if group is not None and self.is_admin is not None:
            # Asked by an anonymous administrator: any administrator's press answers it
            # (Telegram cannot say which one asked); asking Telegram is not done here.
            self._later(self._press_for_group(query, confirmation_id, group, yes))
            return
        self._settle_press(query, confirmation_id, str(query.from_user.id), yes)

    async def _press_for_group(
        self, query: CallbackQuery, confirmation_id: str, group: ChatRef, yes: bool
    ) -> None:
        presser = replace(group, user_id=str(query.from_user.id))
        try:
            admin = self.is_admin is not None and await self.is_admin(presser)
        except Exception as error:  # Telegram unreachable: the press does not count
            log.warning("could not ask whether a presser administers %s: %s", group.key, error)
            admin = False
        self._settle_press(
            query, confirmation_id, group.user_id if admin else str(query.from_user.id), yes
        )

    def _settle_press(
        self, query: CallbackQuery, confirmation_id: str, user_id: str | None, yes: bool
    ) -> None:
        press = self.confirmations.press(confirmation_id, user_id, yes)
        words = words_for(query.from_user.language_code)
        if press is Press.NOT_YOURS:
            notice = words.gettext("Only the person who asked can answer this.")
            self._later(self._answer(query, notice))
            return
        if press is Press.CLOSED:
            self._later(self._answer(query, words.gettext("This question is no longer open.")))
            self._later(self._settle(query, words.gettext("(no longer open)")))
            return
        name = query.from_user.first_name or query.from_user.username or words.gettext("the user")
        if yes:
            notice = words.gettext("Running it.")
            outcome = words.gettext("Confirmed by {name}.", name=name)
        else:
            notice = words.gettext("Cancelled.")
            outcome = words.gettext("Cancelled by {name}.", name=name)
        self._later(self._answer(query, notice))
        self._later(self._settle(query, outcome))

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
                text=f"{without_how_to_answer(message.text)}\n{outcome}",
                reply_markup=None,
            )
        except TelegramError as error:
            log.debug("editing a confirmation question failed: %s", error)
