"""Confirmations: a tool with side effects asks the user in the chat before it runs.

The question goes to the chat of the turn: on a channel that registered a
`ConfirmationPrompter` (Telegram: a message with "Run it" / "Cancel" buttons), else as a
plain note, in the asker's language. The user who asked answers with a button or a reply
("yes" / "no", or the same in any language the bot speaks: "да", "nein", "好"); nobody
else's answer counts, so in a group another member cannot approve what one member asked
for. No answer within the time limit is a no.
"""

from __future__ import annotations

import asyncio
import enum
import re
import secrets
from dataclasses import dataclass
from typing import Protocol

from mnemobot.bot.i18n import N_, words_for
from mnemobot.systems.core.context import ChatRef, TurnContext

# The replies read as an answer, in every language the bot speaks (not only the asker's:
# many people keep Telegram in English and write in their own language). English always;
# each language's own include the words its "how to answer" lines quote.
YES_WORDS = frozenset(
    {"yes", "y", "ok", "okay", "confirm", "run", "run it", "go", "go ahead"}
    | {"да", "ага", "давай", "хорошо", "ок", "выполнить", "выполняй", "запускай", "подтверждаю"}
    | {"ja", "jawohl", "los", "mach", "bestätigen", "ausführen"}
    | {"sí", "si", "vale", "dale", "adelante", "confirmar", "ejecutar"}
    | {"是", "是的", "好", "好的", "可以", "行", "确认", "执行", "运行"}
)
NO_WORDS = frozenset(
    {"no", "n", "cancel", "don't", "dont", "do not"}
    | {"нет", "не", "не надо", "не нужно", "отмена", "отменить", "стоп"}
    | {"nein", "nö", "abbrechen", "nicht"}
    | {"cancelar", "no lo hagas"}
    | {"否", "不", "不要", "不用", "不行", "取消"}
)
# Longer than this, a message is no answer word ("no lo hagas" with a few marks around it
# is the longest); every message is looked at, so nothing longer is read further.
LONGEST_ANSWER_CHARS = 40
# Around an answer word and taken off it: "да!", "好。", "¡sí!" (not "?": "да?" asks).
_ANSWER_PUNCTUATION = re.compile(r"^[\s¡]+|[\s.!。！]+$")
HOW_TO_ANSWER = N_('Reply "yes" to go ahead or "no" to cancel.')


class Answer(enum.Enum):
    YES = "yes"
    NO = "no"
    # Nobody answered in time.
    TIMEOUT = "timeout"
    # There is nobody to ask (no user, or a chat nothing can be sent to).
    UNAVAILABLE = "unavailable"


class Press(enum.Enum):
    """What became of an answer given by button."""

    ACCEPTED = "accepted"
    # Someone other than the user who asked pressed it.
    NOT_YOURS = "not yours"
    # Answered, timed out or cancelled already.
    CLOSED = "closed"


class ConfirmationPrompter(Protocol):
    """How a channel asks: `confirmation_id` comes back through `Confirmations.press`."""

    async def ask(self, chat: ChatRef, confirmation_id: str, question: str) -> None: ...


@dataclass(slots=True)
class _Pending:
    chat: ChatRef
    answer: asyncio.Future[bool]


def answer_word(text: str) -> bool | None:
    """True for a yes, False for a no, None for anything else."""
    if len(text) > LONGEST_ANSWER_CHARS:
        return None  # a message, not an answer; and the strip below stays cheap
    word = _ANSWER_PUNCTUATION.sub("", text.strip().lower())
    word = " ".join(word.split())
    if word in YES_WORDS:
        return True
    if word in NO_WORDS:
        return False
    return None


class Confirmations:
    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}
        self._prompters: dict[str, ConfirmationPrompter] = {}

    def register(self, channel: str, prompter: ConfirmationPrompter) -> None:
        self._prompters[channel] = prompter

    def waiting(self, chat: ChatRef) -> bool:
        """Whether a question to this chat's user is open (asked, not yet answered)."""
        return any(self._matches(p, chat) and not p.answer.done() for p in self._pending.values())

    async def ask(self, ctx: TurnContext, question: str, timeout_seconds: float) -> Answer:
        """Ask the user of the turn; wait for their answer at most `timeout_seconds`."""
        chat = ctx.chat
        if chat.user_id is None:
            return Answer.UNAVAILABLE
        prompter = self._prompters.get(chat.channel)
        if prompter is None and ctx.notify is None:
            return Answer.UNAVAILABLE
        confirmation_id = secrets.token_urlsafe(9)
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[confirmation_id] = _Pending(chat, answer)
        try:
            if prompter is not None:
                await prompter.ask(chat, confirmation_id, question)
            elif ctx.notify is not None:
                how = words_for(chat.language).gettext(HOW_TO_ANSWER)
                await ctx.notify(f"{question}\n{how}")
            async with asyncio.timeout(timeout_seconds):
                return Answer.YES if await answer else Answer.NO
        except TimeoutError:
            return Answer.TIMEOUT
        finally:
            del self._pending[confirmation_id]

    def press(self, confirmation_id: str, user_id: str | None, yes: bool) -> Press:
        """An answer by button: only the user who was asked settles the question."""
        pending = self._pending.get(confirmation_id)
        if pending is None or pending.answer.done():
            return Press.CLOSED
        if user_id is None or user_id != pending.chat.user_id:
            return Press.NOT_YOURS
        pending.answer.set_result(yes)
        return Press.ACCEPTED

    def asked_as_group(self, confirmation_id: str) -> ChatRef | None:
        """The chat of an open question asked by someone writing as the group itself (an
        anonymous administrator, whose user id is the group's), else None: their press
        comes from their own account, so the channel decides whether it is theirs."""
        pending = self._pending.get(confirmation_id)
        if pending is None or pending.answer.done():
            return None
        chat = pending.chat
        # A group's id is negative; in a private chat the chat's id is the user's own.
        anonymous = chat.user_id is not None and chat.user_id.startswith("-")
        return chat if anonymous and chat.user_id == chat.chat_id else None

    def answer_text(self, chat: ChatRef, text: str) -> bool:
        """A message that answers an open question of its sender in its chat settles it
        (the newest one) and returns True; any other message returns False."""
        yes = answer_word(text)
        if yes is None:
            return False
        for pending in reversed(list(self._pending.values())):
            if self._matches(pending, chat) and not pending.answer.done():
                pending.answer.set_result(yes)
                return True
        return False

    @staticmethod
    def _matches(pending: _Pending, chat: ChatRef) -> bool:
        return pending.chat.key == chat.key and pending.chat.user_id == chat.user_id
