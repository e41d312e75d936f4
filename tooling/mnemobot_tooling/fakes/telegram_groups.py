"""Group state of the fake Bot API: members' roles (getChatMember) and upgraded groups.

Kept apart from ``telegram_server`` so the server's module stays about requests and
messages; the server owns one ``GroupState`` and consults it under its own lock.

- A user who wrote in a group is a ``member`` of it; ``set_status`` makes them ``creator``,
  ``administrator``, ``restricted``, ``left`` or ``kicked``; a user never seen is ``left``,
  as Telegram answers for someone outside the group.
- ``migrate`` records that a group became a supergroup: from then on every request naming
  the old id fails the way Telegram's does (400, ``parameters.migrate_to_chat_id``).
- ``sent_as_chat`` gives the fields of a message sent on behalf of a chat: an anonymous
  administrator writes as the group itself (``from`` is Telegram's ``GroupAnonymousBot``,
  ``sender_chat`` the group); a channel's admin writes as the channel (``Channel_Bot``,
  ``sender_chat`` the channel).
"""

from __future__ import annotations

from typing import Any

JsonDict = dict[str, Any]

STATUSES = frozenset({"creator", "administrator", "member", "restricted", "left", "kicked"})
MIGRATED_DESCRIPTION = "Bad Request: group chat was upgraded to a supergroup chat"

# Every right a ChatMemberAdministrator carries (the Bot API sends them all).
_ADMIN_RIGHTS = (
    "can_be_edited",
    "is_anonymous",
    "can_manage_chat",
    "can_delete_messages",
    "can_manage_video_chats",
    "can_restrict_members",
    "can_promote_members",
    "can_change_info",
    "can_invite_users",
    "can_post_stories",
    "can_edit_stories",
    "can_delete_stories",
)
_RESTRICTED_RIGHTS = (
    "is_member",
    "can_send_messages",
    "can_send_audios",
    "can_send_documents",
    "can_send_photos",
    "can_send_videos",
    "can_send_video_notes",
    "can_send_voice_notes",
    "can_send_polls",
    "can_send_other_messages",
    "can_add_web_page_previews",
    "can_change_info",
    "can_invite_users",
    "can_pin_messages",
    "can_manage_topics",
)


# The placeholder users Telegram puts in ``from`` of a message sent on behalf of a chat.
GROUP_ANONYMOUS_BOT: JsonDict = {
    "id": 1087968824,
    "is_bot": True,
    "first_name": "Group",
    "username": "GroupAnonymousBot",
}
CHANNEL_BOT: JsonDict = {
    "id": 136817688,
    "is_bot": True,
    "first_name": "Channel",
    "username": "Channel_Bot",
}


def sent_as_chat(
    chat: JsonDict, channel_id: int | None, channel_title: str, signature: str | None
) -> JsonDict:
    """``from`` and ``sender_chat`` of a message sent in ``chat`` as the group itself (an
    anonymous administrator, ``channel_id`` None) or as the channel ``channel_id``;
    ``signature``: the administrator's custom title, when the group shows it."""
    if channel_id is None:
        fields: JsonDict = {"from": dict(GROUP_ANONYMOUS_BOT), "sender_chat": dict(chat)}
    else:
        sender = {"id": channel_id, "type": "channel", "title": channel_title}
        fields = {"from": dict(CHANNEL_BOT), "sender_chat": sender}
    if signature is not None:
        fields["author_signature"] = signature
    return fields


class GroupState:
    """Roles per (chat, user) and group -> supergroup moves. Not locked: the server is."""

    def __init__(self) -> None:
        self._status: dict[tuple[int, int], str] = {}
        self._users: dict[int, JsonDict] = {}
        self._moved: dict[int, int] = {}

    def seen(self, chat_id: int, user: JsonDict) -> None:
        """A user wrote in a chat: a member of it, unless given another status."""
        self._users[int(user["id"])] = dict(user)
        self._status.setdefault((chat_id, int(user["id"])), "member")

    def set_status(self, chat_id: int, user_id: int, status: str) -> None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {sorted(STATUSES)}, not {status!r}")
        self._status[(chat_id, user_id)] = status

    def member(self, chat_id: int, user_id: int) -> JsonDict:
        """The ChatMember object getChatMember answers with."""
        status = self._status.get((chat_id, user_id), "left")
        user = self._users.get(user_id) or {"id": user_id, "is_bot": False, "first_name": "Test"}
        member: JsonDict = {"status": status, "user": dict(user)}
        if status == "creator":
            member["is_anonymous"] = False
        elif status == "administrator":
            member.update({right: right != "can_be_edited" for right in _ADMIN_RIGHTS})
            member["is_anonymous"] = False
        elif status == "restricted":
            member.update({right: True for right in _RESTRICTED_RIGHTS})
            member["until_date"] = 0
        elif status == "kicked":
            member["until_date"] = 0
        return member

    def migrate(self, old_chat_id: int, new_chat_id: int) -> None:
        self._moved[old_chat_id] = new_chat_id
        for (chat_id, user_id), status in list(self._status.items()):
            if chat_id == old_chat_id:
                self._status.setdefault((new_chat_id, user_id), status)

    def moved_to(self, chat_id: int) -> int | None:
        return self._moved.get(chat_id)
