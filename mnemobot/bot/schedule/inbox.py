"""Firings as inbox entries and lane jobs: how a channel with a durable inbox takes them.

A firing is kept in the channel's inbox under its stable id, with the chat's inbox key
(`telegram:42`: a forum topic's firing waits with its group's messages), and comes back
out as a lane job of its chat (or topic) that answers that entry.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemobot.bot.channels.lanes import LaneJob
from mnemobot.bot.delivery.journal import QueuedEntry
from mnemobot.bot.schedule.model import Firing
from mnemobot.config.settings import AllowedUsers


def firing_entries(channel: str, firings: Sequence[Firing]) -> list[QueuedEntry]:
    return [
        QueuedEntry(id=f.entry_id, key=f"{channel}:{f.task.chat.chat_id}", data=f.to_json())
        for f in firings
    ]


def set_by_allowed_user(job: LaneJob, allowed: AllowedUsers) -> bool:
    """Whether the user who set the task may still talk to the bot: a task of someone
    taken off the allowed users is passed over (a repeating one stays listed, to cancel)."""
    user = job.chat.user_id
    return allowed.allows(int(user) if user and user.lstrip("-").isdigit() else None)


def firing_job(entry: QueuedEntry) -> LaneJob:
    firing = Firing.from_json(entry.data)
    return LaneJob(
        chat=firing.task.chat.ref(),
        text=firing.task.text,
        message_refs=(entry.id,),
        receipts=(entry.id,),
        firing=firing,
    )
