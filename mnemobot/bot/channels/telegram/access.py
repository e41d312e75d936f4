"""Who the Telegram channel serves, and which group messages are meant for the bot.

Pure functions over PTB's `Message`: no I/O, so the rules are easy to read and test.
Order of the checks matters: in a group, a message that is not addressed to the bot is
ignored before access is checked, so strangers chatting in a shared group never get a
refusal for messages that were not meant for the bot at all.

A message may be sent on behalf of a chat (`sender_chat`) rather than by a user (`from` is
then one of Telegram's placeholder bots):

- as the group itself: one of its administrators writing anonymously. The sender's id is
  the group's id; the group's administrators may do what such a message asks (Telegram
  lets only them write so), and `TELEGRAM_ALLOWED_USERS` lets them in by naming the
  group's id (or `*`): they have no user id of their own to name.
- as a channel (a linked channel's admin, or a member writing as their own channel): the
  sender's id is the channel's, never an administrator of the group, let in only when
  `TELEGRAM_ALLOWED_USERS` names that channel's id (or is `*`).

A channel's post that Telegram copies into its linked discussion group is nobody
speaking to the bot, and is ignored.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from telegram import Message, MessageEntity

from mnemobot.bot.i18n import words_for
from mnemobot.bot.turn.commands import COMMAND_NAMES
from mnemobot.config.settings import AllowedUsers, Settings
from mnemobot.systems.core.context import ChatRef

PRIVATE = "private"
GROUP_TYPES = frozenset({"group", "supergroup"})


class Verdict(enum.Enum):
    SERVE = "serve"
    # Known user, but not for us (group chatter, channel posts, service messages).
    IGNORE = "ignore"
    # Addressed to us by someone who is not allowed: one short reply, nothing else.
    REFUSE = "refuse"


@dataclass(frozen=True, slots=True)
class BotIdentity:
    user_id: int
    username: str


@dataclass(frozen=True, slots=True)
class Sender:
    """Who wrote a message: a user, or a chat it was sent on behalf of."""

    # The user's id; for a message sent on behalf of a chat, that chat's id.
    id: int
    name: str | None
    language: str | None = None
    # Sent as the group itself: one of the group's administrators, anonymously.
    as_group: bool = False
    # Sent on behalf of a channel.
    as_channel: bool = False


ANONYMOUS_ADMIN_NAME = "Anonymous admin"


def sender_of(message: Message) -> Sender | None:
    """Who wrote `message`; None when nobody did that the bot answers (another bot, a
    channel post copied into its discussion group)."""
    chat = message.sender_chat
    if chat is not None:
        if message.is_automatic_forward:
            return None
        if chat.id == message.chat.id:
            signature = message.author_signature
            name = f"{signature} ({ANONYMOUS_ADMIN_NAME})" if signature else ANONYMOUS_ADMIN_NAME
            return Sender(chat.id, name, as_group=True)
        return Sender(chat.id, chat.title or chat.username or "a channel", as_channel=True)
    user = message.from_user
    if user is None or user.is_bot:
        return None
    return Sender(user.id, user.first_name or user.username, user.language_code or None)


def allowed_with_operators(settings: Settings) -> AllowedUsers:
    """TELEGRAM_ALLOWED_USERS, plus the operators: whoever runs the bot may talk to it."""
    allowed = settings.telegram_allowed_users
    if allowed.everyone or settings.operators <= allowed:
        return allowed
    return AllowedUsers(allowed | settings.operators)


def set_by_allowed_user(chat: ChatRef, allowed: AllowedUsers) -> bool:
    """Whether the user who set a scheduled task may still talk to the bot: a task of
    someone taken off the allowed users is passed over (a repeating one stays listed)."""
    user = chat.user_id
    return allowed.allows(int(user) if user and user.lstrip("-").isdigit() else None)


def refusal_text(sender: Sender) -> str:
    """In the sender's language: all the bot knows of a stranger is what their app says."""
    words = words_for(sender.language)
    if sender.as_group:
        return words.gettext(
            "Sorry, this is a private bot. You are writing as the group (an anonymous admin), "
            "whose id is {id}. To let its anonymous admins in, the owner adds {id} to "
            "TELEGRAM_ALLOWED_USERS. Until then I will not reply to your messages.",
            id=sender.id,
        )
    if sender.as_channel:
        return words.gettext(
            "Sorry, this is a private bot. You are writing as a channel, whose id is {id}. "
            "To let it in, the owner adds {id} to TELEGRAM_ALLOWED_USERS. Until then I will "
            "not reply to your messages.",
            id=sender.id,
        )
    return words.gettext(
        "Sorry, this is a private bot. Your Telegram user id is {id}. To let you in, the "
        "owner adds {id} to TELEGRAM_ALLOWED_USERS. Until then I will not reply to your "
        "messages.",
        id=sender.id,
    )


def message_text(message: Message) -> str | None:
    """The text a user wrote: the message text, or the caption of a photo, file..."""
    return message.text if message.text is not None else message.caption


def _entities(message: Message) -> tuple[MessageEntity, ...]:
    return message.entities if message.text is not None else message.caption_entities


def _entity_text(message: Message, entity: MessageEntity) -> str:
    # Offsets are UTF-16 units; PTB's parse_entity converts them correctly.
    if message.text is not None:
        return message.parse_entity(entity)
    return message.parse_caption_entity(entity)


def is_addressed_to_bot(message: Message, bot: BotIdentity) -> bool:
    """A group message is for the bot when it mentions it, replies to it, or is our command."""
    replied = message.reply_to_message
    if (
        replied is not None
        and replied.from_user is not None
        and replied.from_user.id == bot.user_id
    ):
        return True
    handle = f"@{bot.username}".lower()
    for entity in _entities(message):
        if entity.type == MessageEntity.MENTION:
            if _entity_text(message, entity).lower() == handle:
                return True
        elif entity.type == MessageEntity.TEXT_MENTION:
            if entity.user is not None and entity.user.id == bot.user_id:
                return True
        elif entity.type == MessageEntity.BOT_COMMAND and entity.offset == 0:
            name, _, target = _entity_text(message, entity)[1:].partition("@")
            if target:
                if target.lower() == bot.username.lower():
                    return True
            # A bare /command in a group is meant for every bot in it (Telegram delivers it
            # to bots in privacy mode too); answer only the ones we have.
            elif name.lower() in COMMAND_NAMES:
                return True
    return False


def verdict_for(message: Message, bot: BotIdentity, allowed: AllowedUsers) -> Verdict:
    sender = sender_of(message)
    if sender is None:
        return Verdict.IGNORE
    chat_type = message.chat.type
    if chat_type in GROUP_TYPES:
        if not is_addressed_to_bot(message, bot):
            return Verdict.IGNORE
    elif chat_type != PRIVATE:
        return Verdict.IGNORE
    return Verdict.SERVE if allowed.allows(sender.id) else Verdict.REFUSE


def without_bot_mention(text: str, bot: BotIdentity) -> str:
    """`@bot what is X` -> `what is X`: the handle is addressing, not content."""
    pattern = re.compile(rf"(?<![\w@])@{re.escape(bot.username)}(?!\w)", re.IGNORECASE)
    stripped = pattern.sub("", text)
    return re.sub(r"[ \t]{2,}", " ", stripped).lstrip(" \t,:").strip()


# The channel's name in chat keys ("telegram:<chat id>").
CHANNEL = "telegram"
# Chats whose message ids Telegram gives per account (each bot numbers them its own way);
# a supergroup's and a channel's ids are the chat's, the same for every bot.
PER_ACCOUNT_NUMBERING = frozenset({"private", "group"})


def chat_ref_for(message: Message, bot_id: int | None = None) -> ChatRef:
    """Who and where `message` is; `bot_id`: the bot receiving it (whose numbering a
    private chat's message ids are in)."""
    # An anonymous admin's user id is the group's own id (see `access`).
    sender = sender_of(message)
    # Forum topics are separate conversations; plain reply threads are not.
    thread = message.message_thread_id if message.is_topic_message else None
    return ChatRef(
        channel=CHANNEL,
        chat_id=str(message.chat.id),
        user_id=str(sender.id) if sender else None,
        thread_id=str(thread) if thread is not None else None,
        user_name=sender.name if sender else None,
        is_group=message.chat.type in GROUP_TYPES,
        language=sender.language if sender else None,
        ref_numbering=(
            str(bot_id)
            if bot_id is not None and message.chat.type in PER_ACCOUNT_NUMBERING
            else None
        ),
    )
