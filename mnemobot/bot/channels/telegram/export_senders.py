"""Who sent an export's messages, by their sender id (`from_id`): in a chat with a bot
(Telegram Desktop's `bot_chat`), the bot is the sender whose id is the chat's own.

The import tells the assistant's messages by their author's name, and names are not ids: a
person may call themselves as the bot is called, or the bot may have been renamed. Found
live: a person named as the bot had every message kept as the bot's, and no fact of theirs
was kept. The bot's messages then get a name of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The names noted in all (a hostile export may name a million senders).
MAX_NAMES = 10_000


class ExportSenders:
    """The names each sender's messages carried, and the name the bot's are given."""

    def __init__(self) -> None:
        self._names: dict[str, set[str]] = {}
        self._count = 0
        self._bot_renamed: tuple[str, str] | None = None
        # The names the bot's messages carry in the file (`bot`).
        self.bot_names: frozenset[str] = frozenset()

    def author(self, sender: object, name: str) -> str:
        """The name a message of `sender` under `name` is imported with, noted."""
        key = str(sender)
        kept = self._names.get(key)
        if (kept is None or name not in kept) and self._count < MAX_NAMES:
            self._names.setdefault(key, set()).add(name)
            self._count += 1
        if self._bot_renamed is not None and key == self._bot_renamed[0]:
            return self._bot_renamed[1]
        return name

    def bot(self, chat: Mapping[str, Any]) -> str | None:
        """In a chat with a bot, the name its messages are imported with, one no one
        else's carry; None in any other chat. Known once every message was noted."""
        chat_id = chat.get("id")
        if chat.get("type") != "bot_chat" or type(chat_id) is not int:
            return None
        sender = f"user{chat_id}"
        names = self._names.get(sender)
        if not names:
            return None
        self.bot_names = frozenset(names)
        others = {name for key, kept in self._names.items() if key != sender for name in kept}
        name = min(names)
        if len(names) == 1 and name not in others:
            return name
        own = f"{name} (bot)"
        while own in others:
            own += "'"
        self._bot_renamed = (sender, own)
        return own
