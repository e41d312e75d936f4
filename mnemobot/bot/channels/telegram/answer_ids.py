"""Where the answer of a lane job goes, and the ids that keep it sent once.

An answer's outbox ids and the name of what it answers are made from the job's inbox
receipts, so the same job answered again (after a crash, or by this replica after a
restart) reuses them and the outbox keeps one copy; see `bot.delivery.outbox`.
"""

from __future__ import annotations

import hashlib

from mnemobot.bot.channels.lanes import LaneJob
from mnemobot.bot.channels.telegram.replies import ReplyTarget
from mnemobot.bot.delivery.outbox import Answering


def target_for_job(job: LaneJob) -> ReplyTarget:
    return ReplyTarget(
        chat_id=int(job.chat.chat_id),
        thread_id=int(job.chat.thread_id) if job.chat.thread_id else None,
        reply_to_message_id=job.reply_to_message_id,
    )


def outbox_ids(job: LaneJob, kind: str, text: str, count: int) -> list[str] | None:
    """Stable outbox ids for what answers an inbox message, so answering it again after a
    crash (before its inbox entry was marked done) does not send the answer twice.

    A reply is one per message whatever its words; notes (progress, notices) are told
    apart by their text.
    """
    if not job.receipts:
        return None
    label = kind
    if kind != "reply":
        label += ":" + hashlib.blake2s(text.encode(), digest_size=6).hexdigest()
    return [f"{job.receipts[-1]}:{label}:{n}" for n in range(count)]


def answering_for(job: LaneJob, replica_id: str) -> Answering | None:
    """What the replies `job` gets from this replica answer (None for a progress note,
    which is not an answer, or a job without inbox entries).

    Named like its outbox ids (`outbox_ids`): the same job answered again by this replica
    (after a restart) has the same name and ids, so the outbox keeps one copy and the mark
    releases it; an answer by another replica, or of other messages merged in, has a name
    of its own, and this one's replies are dropped for it.
    """
    if job.progress or not job.receipts:
        return None
    return Answering(job.receipts, f"{replica_id}/{job.receipts[-1]}")
