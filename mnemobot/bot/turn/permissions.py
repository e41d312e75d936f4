"""Who may run the commands that act on a whole chat's memory or conversation.

In a private chat its one user owns everything in it. In a group, `/export` posts the
group's memory to the group, `/forget_me` erases it for everyone and `/compact` rewrites
everyone's conversation: `permissions.<command>` in the runtime config says who may, by
default the group's administrators and the bot's operators. The model's tools are doors
into the same memory: `permissions.editMemory` says who may have them forget or rewrite
it (the memory tool's forget, update, write_file; the files tool writing over a file),
while what anyone says, and the facts, notes and new files the tools add, stays open to
all. With `memory.scope: "global"` one memory holds what every chat said, so only an
operator may export, erase or rewrite it. `permissions.stopOthers` says who may /stop a
reply another member is waiting for; a reply to one's own message anyone may stop.

Who is an operator or an administrator is a channel's business (`ChatRoles`): Telegram asks
`getChatMember` (cached, see `bot.channels.telegram.member_roles`); at the console the person at the
terminal runs the bot. A chat of a channel that registered no roles has no operator and no
administrator, so the safe answer is "no".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from mnemobot.bot.i18n import N_, Words, words_for
from mnemobot.config.runtime import PermissionLevel, RuntimeConfig
from mnemobot.memory.store.scope_paths import all_chats_share
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)

# Commands whose permission is a setting (`permissions.<name>`; forget_me -> forgetMe);
# "schedule" covers the schedule tool and changing /reminders; "edit_memory" the tools'
# ways of forgetting or rewriting what the chat's memory and files hold.
# "stop_others" covers /stop of a reply to another member's message.
GUARDED_COMMANDS = frozenset(
    {"export", "forget_me", "compact", "schedule", "edit_memory", "stop_others"}
)
EDIT_MEMORY = "edit_memory"
STOP_OTHERS = "stop_others"
# Whole sentences, so each language words them its own way: who may (admins or the
# operator) by what they may not do (a command, or the actions named here).
_ADMINS_ONLY = {
    "schedule": N_(
        "In this group only this group's administrators and the bot's operator may "
        "schedule, cancel or resume reminders and tasks ({setting})."
    ),
    EDIT_MEMORY: N_(
        "In this group only this group's administrators and the bot's operator may erase "
        "or rewrite its shared memory and files; everyone may add to them ({setting})."
    ),
    STOP_OTHERS: N_(
        "In this group only this group's administrators and the bot's operator may stop "
        "a reply to another member's message; everyone may stop the replies to their own "
        "({setting})."
    ),
    None: N_(
        "In this group only this group's administrators and the bot's operator may use "
        "/{command} ({setting})."
    ),
}
_OPERATOR_ONLY = {
    "schedule": N_(
        "In this group only the bot's operator may schedule, cancel or resume reminders "
        "and tasks ({setting})."
    ),
    EDIT_MEMORY: N_(
        "In this group only the bot's operator may erase or rewrite its shared memory and "
        "files; everyone may add to them ({setting})."
    ),
    STOP_OTHERS: N_(
        "In this group only the bot's operator may stop a reply to another member's "
        "message; everyone may stop the replies to their own ({setting})."
    ),
    None: N_("In this group only the bot's operator may use /{command} ({setting})."),
}
# Commands that act on the whole memory: operators only when all chats share one.
WHOLE_MEMORY_COMMANDS = frozenset({"export", "forget_me", EDIT_MEMORY})


class RolesUnavailable(Exception):
    """The channel could not tell whether the user is an administrator right now."""


class ChatRoles(Protocol):
    """What a channel knows about the people in its chats."""

    def is_operator(self, chat: ChatRef) -> bool:
        """Whether the user of `chat` runs the bot."""
        ...

    async def is_admin(self, chat: ChatRef) -> bool:
        """Whether the user of `chat` administers the group; raises RolesUnavailable."""
        ...


def _level(config: RuntimeConfig, command: str) -> PermissionLevel:
    level: PermissionLevel = getattr(config.permissions, command)
    return level


def _setting(command: str) -> str:
    head, *rest = command.split("_")
    return "permissions." + head + "".join(word.title() for word in rest)


class Permissions:
    """Answers "may this user run this command here?" with None (yes) or the refusal."""

    def __init__(self, config: Callable[[], RuntimeConfig]) -> None:
        self.config = config
        self._roles: dict[str, ChatRoles] = {}

    def register(self, channel: str, roles: ChatRoles) -> None:
        """`roles` answers for the chats of `channel` (e.g. "telegram")."""
        self._roles[channel] = roles

    def is_operator(self, chat: ChatRef) -> bool:
        roles = self._roles.get(chat.channel)
        return roles is not None and roles.is_operator(chat)

    async def has_level(self, chat: ChatRef, level: PermissionLevel) -> bool:
        """Whether the user of `chat` is at `level` in its group ("members": any member);
        False when the channel cannot tell right now."""
        if level == "members" or self.is_operator(chat):
            return True
        roles = self._roles.get(chat.channel)
        if level != "admins" or roles is None:
            return False
        try:
            return await roles.is_admin(chat)
        except RolesUnavailable as exc:
            log.warning("could not check the role of %s in %s: %s", chat.user_id, chat.key, exc)
            return False

    async def refusal(self, chat: ChatRef, command: str, words: Words | None = None) -> str | None:
        """None when the user of `chat` may run `/command` there, else why not (one line),
        in `words`' language: the reader's for a command; English (the default) for a tool's
        answer to the model."""
        if command not in GUARDED_COMMANDS:
            return None
        said = words or words_for(None)
        config = self.config()
        if command in WHOLE_MEMORY_COMMANDS and all_chats_share(config.memory.scope):
            if self.is_operator(chat) and command == "export" and chat.is_group:
                # The file would go to every member of the group.
                return said.gettext(
                    "All chats share one memory here: send /export to me in a private chat, "
                    "so the file goes to you alone."
                )
            if self.is_operator(chat):
                return None
            if command == EDIT_MEMORY:
                return said.gettext(
                    "All chats share one memory here, so only the bot's operator may erase "
                    "or rewrite it: it holds what everyone told me."
                )
            return said.gettext(
                "All chats share one memory here, so only the bot's operator may use "
                "/{command}: it holds what everyone told me.",
                command=command,
            )
        if not chat.is_group:
            return None
        level = _level(config, command)
        if level == "members" or self.is_operator(chat):
            return None
        sentences = _OPERATOR_ONLY
        if level == "admins":
            roles = self._roles.get(chat.channel)
            try:
                if roles is not None and await roles.is_admin(chat):
                    return None
            except RolesUnavailable as exc:
                log.warning("could not check the role of %s in %s: %s", chat.user_id, chat.key, exc)
                return said.gettext(
                    "I could not check whether you are an administrator of this group just "
                    "now; please try again in a minute."
                )
            sentences = _ADMINS_ONLY
        sentence = sentences.get(command, sentences[None])
        return said.gettext(sentence, command=command, setting=_setting(command))

    async def may(self, chat: ChatRef, command: str) -> bool:
        """Whether the user of `chat` may run `command` there (no refusal)."""
        return await self.refusal(chat, command) is None


class ConsoleRoles:
    """At the console, the person at the terminal runs the bot."""

    def is_operator(self, chat: ChatRef) -> bool:
        return True

    async def is_admin(self, chat: ChatRef) -> bool:
        return True
