"""Who runs the bot and who administers a group, for `bot.turn.permissions`, on Telegram.

Operators are the user ids of `Settings.operators`. Whether a member administers a group is
Telegram's answer to `getChatMember`, kept for `ADMIN_CACHE_SECONDS`: a group's
commands then cost one Bot API call per member and period, not one per command. Only a
positive answer of Telegram counts; when it cannot be asked, the command is refused.

A message sent as the group itself comes from one of its administrators writing
anonymously (only they can), so its sender, whose id is the group's, is an administrator;
one sent as a channel is not (its id is the channel's, never a member's). Neither is
asked of Telegram.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from telegram import Bot, ChatMember
from telegram.error import TelegramError

from mnemobot.bot.turn.permissions import RolesUnavailable
from mnemobot.systems.core.context import ChatRef

ADMIN_STATUSES = frozenset({ChatMember.OWNER, ChatMember.ADMINISTRATOR})
# Answers kept at most; the oldest go first. A bound, not a knob: far above the members
# who run guarded commands in one cache period.
MAX_CACHED_ANSWERS = 10_000
# How long Telegram's answer to "is this member an administrator?" is reused: a member
# made or unmade administrator is seen after at most this long. Not measured; ten minutes
# keep a busy group's commands to a few getChatMember calls an hour.
ADMIN_CACHE_SECONDS = 600.0


class TelegramRoles:
    def __init__(
        self,
        bot: Bot,
        operators: frozenset[int],
        cache_seconds: float = ADMIN_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bot = bot
        self.operators = operators
        self.cache_seconds = cache_seconds
        self.clock = clock
        # (chat id, user id) -> (is admin, when asked)
        self._answers: dict[tuple[str, str], tuple[bool, float]] = {}

    def is_operator(self, chat: ChatRef) -> bool:
        return (
            chat.user_id is not None
            and chat.user_id.lstrip("-").isdigit()
            and (int(chat.user_id) in self.operators)
        )

    async def is_admin(self, chat: ChatRef) -> bool:
        if chat.user_id is None:
            return False
        if chat.user_id.startswith("-"):
            # A chat's id (users' ids are positive): the group itself is an anonymous admin.
            return chat.user_id == chat.chat_id
        key = (chat.chat_id, chat.user_id)
        now = self.clock()
        known = self._answers.get(key)
        if known is not None and now - known[1] < self.cache_seconds:
            return known[0]
        try:
            member = await self.bot.get_chat_member(int(chat.chat_id), int(chat.user_id))
        except TelegramError as exc:
            raise RolesUnavailable(f"getChatMember failed: {exc}") from None
        admin = member.status in ADMIN_STATUSES
        self._answers.pop(key, None)
        self._answers[key] = (admin, now)
        while len(self._answers) > MAX_CACHED_ANSWERS:
            del self._answers[next(iter(self._answers))]
        return admin
