"""/forget_me: ask, confirm, erase; and finish an erasure a crash cut short.

The ask and the erasure are kept in the erasure journal (`erasure_journal`), not in this
process: a restart between ask and confirm, or a confirmation that another replica
handles, still counts; an erasure begun is finished when its confirmation comes in again
(a durable inbox hands it in after a restart) or, for a channel without one, when the
channel starts (`finish_interrupted`). The user is told either way.
"""

from __future__ import annotations

import contextlib
import logging

from mnemobot.bot.i18n import Words, words_for
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.erasure import SHARED_FILES_LEFT, ScopeErasure
from mnemobot.bot.turn.erasure_journal import PendingErasure
from mnemobot.memory.store.scope_paths import all_chats_share
from mnemobot.systems.core.context import ChatRef

# How long a /forget_me waits for its "/forget_me confirm". Not a runtime setting: it
# guards against a mistyped command, and a few minutes is enough to read the warning.
FORGET_ME_CONFIRM_MINUTES = 5

log = logging.getLogger(__name__)


class ForgetMe:
    def __init__(self, assistant: Assistant, erasure: ScopeErasure) -> None:
        self.assistant = assistant
        self.erasure = erasure
        # Scopes being erased by this process now: pending in the journal, not cut short.
        self._running: set[str] = set()

    async def interrupted(self, chat: ChatRef) -> PendingErasure | None:
        """The erasure of the chat's memory that was confirmed and cut short, if any."""
        scope = self.assistant.scope_for(chat, self.assistant.config())
        if scope in self._running:
            return None
        pending = await self.erasure.journal.pending()
        return next((erasure for erasure in pending if erasure.scope == scope), None)

    async def answer(self, chat: ChatRef, args: str) -> str:
        """/forget_me [confirm]: ask, or erase once the asker confirms in time."""
        interrupted = await self.interrupted(chat)
        if interrupted is not None:
            # Confirmed before a crash or a restart cut it: finished now, whatever was said.
            removed = await self._erase(chat, interrupted)
            return erased_text(removed, interrupted=True, words=words_for(chat.language))
        now = self.assistant.clock()
        journal = self.erasure.journal
        # Only the user who asked can confirm: another member's "confirm" is a new ask.
        asked_until = await journal.take_ask(chat.key, chat.user_id)
        if args.strip().lower() != "confirm" or asked_until is None or now > asked_until:
            until = now + FORGET_ME_CONFIRM_MINUTES * 60
            await journal.ask(chat.key, chat.user_id, until, now)
            return self._ask_text(chat)
        assistant = self.assistant
        erasure = PendingErasure(
            scope=assistant.scope_for(chat, assistant.config()),
            channel=chat.channel,
            chat_id=chat.chat_id,
            thread_id=chat.thread_id,
            user_id=chat.user_id,
            is_group=chat.is_group,
            began_at=now,
        )
        return erased_text(await self._erase(chat, erasure), words=words_for(chat.language))

    async def _erase(self, chat: ChatRef, erasure: PendingErasure) -> list[str]:
        assistant = self.assistant
        target = self.erasure.target(erasure.scope)
        # Waits for the running turns of the scope's other chats (forum topics, or every
        # chat of a global memory), so none writes back what is erased. This chat's own
        # turn is over: /forget_me waits its turn in the chat's lane.
        async with contextlib.AsyncExitStack() as held:
            for key in sorted({chat.key, *target.session_keys}):
                await held.enter_async_context(assistant.lock_for(key))
            self._running.add(erasure.scope)
            try:
                removed = await self.erasure.erase_confirmed(erasure)
            finally:
                self._running.discard(erasure.scope)
        log.info("/forget_me erased %s: %s", erasure.scope, "; ".join(removed) or "nothing")
        return removed

    async def finish_interrupted(self, channel: str) -> list[tuple[ChatRef, str]]:
        """Finish the erasures of `channel`'s chats that a crash cut; for each, its chat
        and what to tell it. For a channel without a durable inbox (the console), whose
        confirmation is not handed in again after a restart."""
        told = []
        for erasure in await self.erasure.journal.pending():
            if erasure.channel != channel:
                continue
            chat = ChatRef(
                erasure.channel,
                erasure.chat_id,
                user_id=erasure.user_id,
                thread_id=erasure.thread_id,
                is_group=erasure.is_group,
            )
            told.append((chat, erased_text(await self._erase(chat, erasure), interrupted=True)))
        return told

    def _ask_text(self, chat: ChatRef) -> str:
        asked = self._ask_words(chat)
        if not self.assistant.config().files.shared:
            return asked
        words = words_for(chat.language)
        stays = words.gettext(
            "The files folder every chat shares stays as it is; the files sent to this chat go."
        )
        return joined_sentences(asked, stays, words.language)

    def _ask_words(self, chat: ChatRef) -> str:
        words = words_for(chat.language)
        minutes = FORGET_ME_CONFIRM_MINUTES
        if all_chats_share(self.assistant.config().memory.scope):
            return words.ngettext(
                "This erases everything I remember of every chat (all chats share one "
                "memory here), and every chat's conversation and logs. It cannot be undone. "
                "To go ahead, send /forget_me confirm within {count} minute. "
                "(/export first keeps a copy.)",
                "This erases everything I remember of every chat (all chats share one "
                "memory here), and every chat's conversation and logs. It cannot be undone. "
                "To go ahead, send /forget_me confirm within {count} minutes. "
                "(/export first keeps a copy.)",
                minutes,
            )
        if chat.is_group:
            return words.ngettext(
                "This erases everything I remember of this group, for all its members: "
                "long-term memory, daily notes, remembered items, files, every topic's "
                "conversation and its logs. It cannot be undone. To go ahead, send "
                "/forget_me confirm within {count} minute. (/export first keeps a copy.)",
                "This erases everything I remember of this group, for all its members: "
                "long-term memory, daily notes, remembered items, files, every topic's "
                "conversation and its logs. It cannot be undone. To go ahead, send "
                "/forget_me confirm within {count} minutes. (/export first keeps a copy.)",
                minutes,
            )
        return words.ngettext(
            "This erases everything I remember of this chat: long-term memory, daily notes, "
            "remembered items, files, this conversation and its logs. It cannot be undone. "
            "To go ahead, send /forget_me confirm within {count} minute. "
            "(/export first keeps a copy.)",
            "This erases everything I remember of this chat: long-term memory, daily notes, "
            "remembered items, files, this conversation and its logs. It cannot be undone. "
            "To go ahead, send /forget_me confirm within {count} minutes. "
            "(/export first keeps a copy.)",
            minutes,
        )


def erased_text(
    removed: list[str], *, interrupted: bool = False, words: Words | None = None
) -> str:
    """The answer to a finished erasure; `interrupted`: it was confirmed before a crash or
    restart cut it, and finished only now. `removed` (the workspace's files and records) is
    the operator's to read in the log: in a group every member reads the answer."""
    words = words or words_for(None)
    if interrupted:
        erased = words.gettext(
            "Erased. The erasure you confirmed was cut short by a restart of the bot; it "
            "is finished now, and I no longer remember anything of this chat."
        )
    elif not removed:
        return words.gettext("There was nothing to erase: I hold no memory of this chat.")
    else:
        erased = words.gettext("Erased. I no longer remember anything of this chat.")
    if SHARED_FILES_LEFT in removed:
        left = words.gettext("The files folder every chat shares was left as it is.")
        return joined_sentences(erased, left, words.language)
    return erased


def joined_sentences(first: str, second: str, language: str | None) -> str:
    """Two sentences as one text: Chinese runs its sentences on without a space."""
    return f"{first}{'' if language == 'zh' else ' '}{second}"
