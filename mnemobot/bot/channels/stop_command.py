"""/stop: who may stop what in a chat, and what a stopped reply leaves behind.

In a group, a member stops only what they may: their own replies always, another member's
only with `permissions.stopOthers`. Their own waiting messages leave the queue at once;
whose a job is (its writer: the member whose message it answers, or who set the scheduled
task it runs) decides whether the right is needed, and what runs or waits for someone
else is stopped only once that right is known. Who sent the /stop is noted at /stop time,
so when the turn ends its writer is told the reply was stopped even though they were shown
nothing, and what the user said is remembered all the same. The dispatcher hands over only
what /stop touches: its lanes, its running turns' streams (the same dict, not a copy), the
permissions, its way to mark jobs answered and, for the end of a stopped reply, the channel,
the assistant and its way to close a reply stream.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Protocol

from mnemobot.bot.channels.base import Channel, ChannelReplyStream
from mnemobot.bot.channels.lanes import ChatLanes, LaneJob, MessageJob, StopOutcome, messages_of
from mnemobot.bot.i18n import words_for
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.commands import StopHandler
from mnemobot.bot.turn.permissions import STOP_OTHERS, Permissions
from mnemobot.bot.turn.stopped_turn import remember_stopped
from mnemobot.bot.turn.tool_loop_words import loop_note
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.model_call.loop_notes import LoopNote

log = logging.getLogger(__name__)


def stop_text(cancelled: bool, dropped: int, language: str | None = None) -> str:
    """What /stop did, in the words of a reader of `language`."""
    words = words_for(language)
    if not cancelled and not dropped:
        return words.gettext("Nothing is running.")
    first = (
        words.gettext("Stopped the reply in progress.")
        if cancelled
        else words.gettext("Nothing was running.")
    )
    if not dropped:
        return first  # nothing was queued: "Dropped 0 queued messages" says nothing
    queued = words.ngettext(
        "Dropped {count} queued message.", "Dropped {count} queued messages.", dropped
    )
    return f"{first} {queued}"


class EndStream(Protocol):
    """The dispatcher's end of a job's reply stream (closed, answered or not)."""

    async def __call__(self, job: LaneJob, *, answered: bool) -> None: ...


def noted_at_stop(job: LaneJob, noted: Sequence[LaneJob]) -> bool:
    """Whether `job` is one of `noted`, or what became of them since: a waiting job
    edited, or merged with its sender's next message, is a new job holding their
    messages (their receipts); one holding a message sent after them is not."""
    if any(job is seen for seen in noted):
        return True
    receipts = {receipt for seen in noted for receipt in seen.receipts}
    return bool(job.receipts) and receipts.issuperset(job.receipts)


class StopRequests:
    """One channel's /stop: what a member may stop, and the end of a reply they stopped."""

    def __init__(
        self,
        lanes: ChatLanes,
        streams: dict[str, ChannelReplyStream],
        permissions: Permissions,
        answered: Callable[[Sequence[LaneJob]], Awaitable[None]],
        *,
        channel: Channel,
        assistant: Assistant,
        end_stream: EndStream,
    ) -> None:
        self.lanes = lanes
        # The stream of each chat's running turn (the dispatcher's own dict).
        self._streams = streams
        self.permissions = permissions
        self._answered = answered
        self.channel = channel
        self.assistant = assistant
        self._end_stream = end_stream
        # Who sent the /stop that is cancelling each chat's running turn.
        self._stopped_by: dict[str, ChatRef] = {}

    async def stop(self, chat: ChatRef) -> str:
        """/stop: cancel the running reply, drop the queued messages, say what was done."""
        return await self._stop_dropped(None, chat)

    def stop_of(self, chat: ChatRef) -> StopHandler:
        """/stop from the user of `chat`. Their own waiting messages leave the queue now,
        before the next message lands; what runs or waits for another member is stopped
        only once the user's right to (`permissions.stopOthers`) is known, in the
        background. A job's writer is the member whose message it answers, or who set
        the scheduled task it runs (its turn acts with their rights)."""
        key = chat.key
        own = self.lanes.drop_queued(key, lambda queued: queued.chat.user_id == chat.user_id)
        others = self.lanes.queued(key)
        running = self.lanes.running(key)
        return partial(self._stop_checked, own, others, running)

    async def _stop_checked(
        self,
        own: tuple[LaneJob, ...],
        others: tuple[LaneJob, ...],
        running: LaneJob | None,
        chat: ChatRef,
    ) -> str:
        someone_elses = bool(others) or (
            running is not None and running.chat.user_id != chat.user_id
        )
        refusal = None
        if someone_elses:
            refusal = await self.permissions.refusal(chat, STOP_OTHERS, words_for(chat.language))
        if refusal is None:
            # What was running or waiting when /stop came, wherever it is now: Telegram's
            # answer takes time, in which the running reply may end and a waiting one
            # start. Nothing that came after /stop.
            more = self.lanes.drop_queued(chat.key, lambda job: noted_at_stop(job, others))
            now = self.lanes.running(chat.key)
            noted = (*others, running) if running is not None else others
            target = now if now is not None and noted_at_stop(now, noted) else None
            return await self._stop_dropped(own + more, chat, target, cancel=target is not None)
        # Refused: another member's reply goes on untouched; the user's own stop.
        mine = running if running is not None and running.chat.user_id == chat.user_id else None
        if mine is not None:
            done = await self._stop_dropped(own, chat, mine)
            return f"{done} {refusal}"
        if not own:
            return refusal
        # Not "nothing was running": a reply runs, only not one this user may stop.
        await self._answered(own)
        dropped = sum(map(messages_of, own))
        queued = words_for(chat.language).ngettext(
            "Dropped {count} queued message.", "Dropped {count} queued messages.", dropped
        )
        return f"{queued} {refusal}"

    async def _stop_dropped(
        self,
        dropped: tuple[LaneJob, ...] | None,
        chat: ChatRef,
        running: LaneJob | None = None,
        *,
        cancel: bool = True,
    ) -> str:
        """Cancel the running reply (only `running`, when given) and drop `dropped` (the
        whole queue when None); say what was done."""
        if not cancel:
            outcome = StopOutcome(cancelled_running=False, dropped_jobs=dropped or ())
        else:
            stream = self._streams.get(chat.key)
            if stream is not None and (running is None or self.lanes.running(chat.key) is running):
                stream.request_stop()
            self._stopped_by[chat.key] = chat
            outcome = await self.lanes.stop(chat.key, dropped=dropped, running=running)
            if not outcome.cancelled_running:
                self._stopped_by.pop(chat.key, None)
        await self._answered(outcome.dropped_jobs)
        return stop_text(outcome.cancelled_running, outcome.dropped, chat.language)

    async def stopped(self, job: LaneJob) -> None:
        """/stop cut the reply short: what was shown stays as the reply, marked stopped
        (the turn stored it so), delivered like any reply; then the user's words are
        remembered (the user sees the stop at once, not after a memory write), and the job
        is answered."""
        stream = self._streams.pop(job.chat.key, None)
        stopper = self._stopped_by.pop(job.chat.key, None)
        try:
            if stream is not None and stream.stop_requested and (stream.latest or stream.showing):
                # Only a tool's status line showed: it becomes the stop mark.
                await self.channel.send_reply(
                    job, stream.latest or loop_note(job.chat.language, LoopNote.STOPPED_MARK)
                )
            else:
                await self._end_stream(job, answered=True)
                if stopper is not None and stopper.user_id != job.chat.user_id:
                    # Another member of a group sent /stop: the message's writer was shown
                    # nothing (group replies are not streamed) and would get no answer.
                    await self.channel.send_reply(
                        job, loop_note(job.chat.language, LoopNote.STOPPED_MARK)
                    )
        finally:
            try:
                if isinstance(job, MessageJob):
                    await self._remember_stopped(job)
            finally:
                await self._answered([job])

    async def _remember_stopped(self, job: MessageJob) -> None:
        """What the user said is remembered all the same; a half answer is not."""
        try:
            await remember_stopped(self.assistant, job.chat, list(job.message_refs))
        except Exception:
            # The stop is answered whatever happens to the memory write.
            log.exception("could not remember the stopped message in %s", job.chat.key)
