"""A message of a Telegram Desktop export (`result.json`), as the import tests write them."""

from __future__ import annotations

from datetime import datetime


def export_message(
    message_id: int, at: datetime, author: str, text: object, **more: object
) -> dict[str, object]:
    """One exported message by `author` at `at`; `more` adds or replaces keys (a forward's
    `forwarded_from`, a service message's `type`)."""
    return {
        "id": message_id,
        "type": "message",
        "date": at.strftime("%Y-%m-%dT%H:%M:%S"),
        "date_unixtime": str(int(at.timestamp())),
        "from": author,
        "from_id": f"user{len(author)}",
        "text": text,
        "text_entities": [],
        **more,
    }
