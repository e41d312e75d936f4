"""What any channel does with a chat message: commands now or in order, turns in the lane.

`/status`, `/stop`, `/help` and `/start` are answered at once, even while a reply of the
same chat is being written; `/new`, `/compact`, `/export` and `/forget_me` read or change
the chat's session and memory, so they wait their turn in the chat's lane with the messages
around them. Nothing here waits in the path that reads updates: answers outside the lane
are worked out and sent in the background, in order per chat, so one chat's slow reply
never holds up another chat's command.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from mnemobot.base.clock import to_iso
from mnemobot.bot.channels.base import Channel, ChannelReplyStream
from mnemobot.bot.channels.lanes import (
    Admission,
    ChatLanes,
    CommandJob,
    EditJob,
    FiringJob,
    LaneJob,
    LaneRules,
    MessageJob,
)
from mnemobot.bot.channels.stop_command import StopRequests
from mnemobot.bot.i18n import N_, words_for
from mnemobot.bot.schedule.firing import FiringRunner
from mnemobot.bot.tools.confirmations import Confirmations
from mnemobot.bot.turn.assistant import STORAGE_FAILED_TEXT, Assistant, TurnOutcome
from mnemobot.bot.turn.commands import CommandReply, Commands, StopHandler
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)

# Commands that read or change the session or memory run in the chat's lane, in order with
# its messages: /forget_me then never erases under a running turn that would write back.
LANE_COMMANDS = frozenset({"new", "compact", "export", "forget_me"})
# Lane commands slow enough (an LLM summary) to show the channel's "working" sign.
SLOW_COMMANDS = frozenset({"compact"})
# How long shutdown waits for answers still being sent once the turns are over.
SEND_DRAIN_SECONDS = 5.0
COMMAND_FAILED_TEXT = N_("Sorry, that command failed; the bot's log says why.")
# A channel with a durable inbox answers a message it could not store once it can.
STORAGE_WAIT_TEXT = N_(
    "I could not save your message yet (the bot's storage is failing right now). I will "
    "answer it as soon as I can; there is no need to send it again."
)
STORAGE_RETRY_FIRST_SECONDS = 1.0
STORAGE_RETRY_LAST_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class FiringReplies:
    """A firing's way back to its chat: the channel, for the firing's lane job."""

    channel: Channel
    job: LaneJob

    async def reply(self, markdown: str) -> None:
        await self.channel.send_reply(self.job, markdown)

    async def note(self, text: str) -> None:
        await self.channel.send_text(self.job, text)

    def working(self) -> AbstractAsyncContextManager[object]:
        return self.channel.working(self.job)


Answered = Callable[[Sequence[LaneJob]], Awaitable[None]]


class ChatDispatcher:
    """One channel's lanes, command routing and turn running.

    `answered`, when given, hears of every job whose answer has been handed to the channel,
    or that will get none (dropped by /stop); a channel with a
    durable inbox marks those messages done there. Jobs still queued at shutdown are not
    answered: with `answered` they stay in the channel's inbox for the next start, without
    it they are kept in their sessions, marked unanswered.
    """

    def __init__(
        self,
        assistant: Assistant,
        commands: Commands,
        channel: Channel,
        config: Callable[[], LaneRules],
        *,
        answered: Answered | None = None,
        confirmations: Confirmations | None = None,
        firings: FiringRunner | None = None,
    ) -> None:
        self.assistant = assistant
        # Questions a running turn asks its user: a "yes" / "no" message answers them.
        self.confirmations = confirmations
        # Runs the scheduled tasks' firings that reach the lanes (None: none reach them).
        self.firings = firings
        self.commands = commands
        self.channel = channel
        # Read on every message, so a hot-reloaded queue mode applies at once.
        self.config = config
        self.answered = answered
        self._shutting_down = False
        self.lanes = ChatLanes(
            self._run_job,
            config,
            keep_unanswered=None if answered is not None else self._keep_unanswered,
        )
        self._background: set[asyncio.Task[Any]] = set()
        # Last notice per chat: notices of one chat go out in the order they were made.
        self._last_notice: dict[str, asyncio.Task[Any]] = {}
        # The stream of each chat's running turn, for /stop.
        self._streams: dict[str, ChannelReplyStream] = {}
        self.stop_requests = StopRequests(
            self.lanes,
            self._streams,
            commands.permissions,
            self._answered,
            channel=channel,
            assistant=assistant,
            end_stream=self._end_stream,
        )

    # -- intake ----------------------------------------------------------------------------------

    async def receive(self, job: LaneJob) -> Admission | None:
        """Take one message or command; returns the lane admission, None if answered
        outside the lane. Returns without waiting for any chat's turn or any send."""
        if isinstance(job, CommandJob) and job.command.name not in LANE_COMMANDS:
            stop: StopHandler = self.stop_requests.stop
            if job.command.name == "stop":
                stop = self.stop_requests.stop_of(job.chat)
            self._in_order(job.chat.key, partial(self._answer_command, job, stop))
            return None
        if (
            # Not a command, an edit, or a firing (it carries the chat's user but is not them
            # speaking: a reminder that says "ok" confirms nothing).
            isinstance(job, MessageJob)
            # Only words typed as they are: a photo captioned "ok" or a forwarded "нет" is
            # a message to read, not an answer.
            and job.typed
            and self.confirmations is not None
            and self.confirmations.answer_text(job.chat, job.text)
        ):
            # "yes" / "no" to a tool waiting for this user's confirmation: an answer for
            # the running turn, not a message of its own.
            self._in_order(job.chat.key, partial(self._answered, [job]))
            return None
        admission = self.lanes.submit(job)
        if admission is Admission.CLOSED:
            log.info("not taking a message in %s: shutting down", job.chat.key)
        return admission

    def notify(self, job: LaneJob, text: str, *, answered: bool = False) -> None:
        """Send a short answer without holding up intake, in order within the chat.

        With `answered`, the job counts as answered once the text is handed to the channel.
        """

        async def send() -> None:
            await self.channel.send_text(job, text)
            if answered:
                await self._answered([job])

        self._in_order(job.chat.key, send)

    def _in_order(self, key: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run `work` in the background after the chat's earlier notices and answers."""
        previous = self._last_notice.get(key)

        async def run() -> None:
            if previous is not None:
                await asyncio.wait({previous})
            try:
                await work()
            except Exception as exc:
                # One line: the cause (a failing disk, an outage) is logged where it arises.
                log.warning("an answer in %s was not sent (%s: %s)", key, type(exc).__name__, exc)

        task = asyncio.create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        self._last_notice[key] = task

        def forget(done: asyncio.Task[Any]) -> None:
            if self._last_notice.get(key) is done:
                del self._last_notice[key]

        task.add_done_callback(forget)

    async def wait_idle(self, chat: ChatRef) -> None:
        """Return once the chat's lane is empty and its notices are out."""
        await self.lanes.wait_idle(chat.key)
        while (notice := self._last_notice.get(chat.key)) is not None:
            await asyncio.wait({notice})

    # -- control ---------------------------------------------------------------------------------

    async def _answer_command(self, job: CommandJob, stop: StopHandler) -> None:
        """Work out a command's answer and send it (with its file, if any)."""
        await self._send_command_reply(job, await self._command_reply(job, stop))
        await self._answered([job])

    async def _command_reply(self, job: CommandJob, stop: StopHandler) -> CommandReply:
        """The command's answer; a failure is one log line and one line for the user."""
        try:
            return await self.commands.reply(
                job.chat, job.command, stop=stop, channel_status=self.status_lines
            )
        except OSError as exc:
            # The disk, not the code: no traceback.
            log.warning("/%s in %s failed on storage (%s)", job.command.name, job.chat.key, exc)
            return CommandReply(words_for(job.chat.language).gettext(STORAGE_FAILED_TEXT))
        except Exception:
            log.exception("/%s failed in %s", job.command.name, job.chat.key)
            return CommandReply(words_for(job.chat.language).gettext(COMMAND_FAILED_TEXT))

    async def _send_command_reply(self, job: LaneJob, reply: CommandReply) -> None:
        if reply.attachment is not None:
            await self.channel.send_document(job, reply.attachment, reply.text)
        else:
            await self.channel.send_text(job, reply.text)

    async def shutdown(self, grace_seconds: float) -> None:
        """Finish (or after `grace_seconds` cancel) running turns, then pending sends."""
        self._shutting_down = True
        await self.lanes.shutdown(grace_seconds)
        if self._background:
            await asyncio.wait(set(self._background), timeout=SEND_DRAIN_SECONDS)

    def status_lines(self, chat: ChatRef) -> list[str]:
        """What `/status` in `chat` adds for this channel: its lane, then the channel's own."""
        config = self.config()
        words = words_for(chat.language)
        values = {
            "waiting": words.number(self.lanes.waiting(chat.key)),
            "mode": config.queue_mode,
            "cap": words.number(config.queue_cap),
        }
        if self.lanes.is_running(chat.key):
            queue = words.gettext(
                "Queue: a reply is running, {waiting} waiting (mode {mode}, cap {cap})", **values
            )
        else:
            queue = words.gettext(
                "Queue: idle, {waiting} waiting (mode {mode}, cap {cap})", **values
            )
        return [queue, *self.channel.status_lines(chat)]

    # -- turns -----------------------------------------------------------------------------------

    async def _answered(self, jobs: Sequence[LaneJob]) -> None:
        if self.answered is not None and jobs:
            await self.answered(jobs)

    async def _run_job(self, job: LaneJob) -> None:
        try:
            await self._answer_job(job)
        except asyncio.CancelledError:
            # Cancelled by /stop: the user dropped it. By shutdown: it runs again next start.
            if not self._shutting_down:
                await asyncio.shield(self.stop_requests.stopped(job))
            else:
                await asyncio.shield(self._end_stream(job, answered=False))
            raise
        except Exception:
            # Logged by the lane; answered anyway, so one bad message cannot come back forever.
            await self._end_stream(job, answered=True)
            await self._answered([job])
            raise
        await self._answered([job])

    async def _end_stream(self, job: LaneJob, *, answered: bool) -> None:
        self._streams.pop(job.chat.key, None)
        await self.channel.close_stream(job, answered=answered)

    async def _answer_job(self, job: LaneJob) -> None:
        if isinstance(job, EditJob):
            # An edit of a message answered before: memory learns the new wording, in
            # order with the chat's turns; there is nothing to reply.
            await self.assistant.revise(job.chat, job.edit_of, job.text)
            return
        if isinstance(job, CommandJob) and job.command.name not in SLOW_COMMANDS:
            await self._send_command_reply(
                job, await self._command_reply(job, self.stop_requests.stop)
            )
            return
        # Progress notes are not answers: they quote nothing.
        progress_job = replace(job, reply_to_message_id=None, progress=True)

        async def progress(text: str) -> None:
            await self.channel.send_text(progress_job, text)

        if isinstance(job, FiringJob):
            if self.firings is not None:
                out = FiringReplies(self.channel, job)
                await self.firings.run(job.firing, job.chat, out, progress)
            return

        stream = self.channel.reply_stream(job) if isinstance(job, MessageJob) else None
        if stream is not None:
            self._streams[job.chat.key] = stream
        async with self.channel.working(job):
            if isinstance(job, CommandJob):
                await self._send_command_reply(
                    job, await self._command_reply(job, self.stop_requests.stop)
                )
                return
            outcome = await self._turn(job, progress, stream)
            if outcome is None:
                await self._end_stream(job, answered=True)
                return
            # Without a durable inbox the user is told to send it again later.
            if not outcome.storage_failed or self.answered is None:
                self._streams.pop(job.chat.key, None)
                await self.channel.send_reply(job, outcome.reply)
                return
        await self._end_stream(job, answered=False)
        # Waits outside `working`: no "typing..." while the storage is down.
        stored = await self._when_stored(job, progress)
        if stored is not None:
            await self.channel.send_reply(job, stored.reply)

    async def _turn(
        self,
        job: MessageJob,
        progress: Callable[[str], Awaitable[None]],
        stream: ChannelReplyStream | None = None,
    ) -> TurnOutcome | None:
        prepared = await self.channel.prepare_turn(job)
        if not prepared.text.strip():
            # Nothing to answer (a voice note that could not be heard): the lines saying
            # why are the answer.
            if prepared.notices:
                await self.channel.send_text(job, "\n".join(prepared.notices))
            return None
        for notice in prepared.notices:
            await progress(notice)
        outcome = await self.assistant.handle_text(
            job.chat,
            prepared.text,
            message_refs=list(job.message_refs),
            notify=progress,
            media=prepared.media,
            reply_stream=stream,
        )
        if outcome is not None and prepared.reply_notes and not outcome.storage_failed:
            notes = "\n\n".join(prepared.reply_notes)
            outcome.reply = f"{outcome.reply}\n\n{notes}"
        return outcome

    async def _when_stored(
        self, job: MessageJob, progress: Callable[[str], Awaitable[None]]
    ) -> TurnOutcome | None:
        """The message could not be stored (a full or read-only disk): say so once, then try
        again with growing pauses until it can be, and answer it then. The chat's later
        messages wait behind it; /stop drops it, a shutdown leaves it in the inbox."""
        await progress(words_for(job.chat.language).gettext(STORAGE_WAIT_TEXT))
        pause = STORAGE_RETRY_FIRST_SECONDS
        while True:
            await asyncio.sleep(pause)
            outcome = await self._turn(job, progress)
            if outcome is None or not outcome.storage_failed:
                return outcome
            pause = min(pause * 2, STORAGE_RETRY_LAST_SECONDS)

    def _keep_unanswered(self, jobs: list[MessageJob]) -> None:
        """Queued messages that never got a turn stay in their sessions, marked unanswered."""
        for job in jobs:
            session = self.assistant.session(job.chat)
            session.messages.append(
                {
                    "role": "user",
                    "content": job.text,
                    "at": to_iso(self.assistant.clock()),
                    "refs": list(job.message_refs),
                    "unanswered": True,
                }
            )
            self.assistant.sessions.save(session)
        log.warning("kept %d queued messages unanswered in their sessions", len(jobs))
