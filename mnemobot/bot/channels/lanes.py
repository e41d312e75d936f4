"""Per-chat ordered lanes: chats run side by side, one chat's work runs strictly in order.

Shared by every channel. A lane belongs to one session key (`telegram:<chatId>[:<threadId>]`,
`console:local`). What arrives while the lane's current job runs waits in the lane's queue.
Nothing a channel hands over is refused: a message the channel took (Telegram: kept in its
durable inbox, acknowledged) is answered. Messages of one sender that arrive together (a
batch of forwards, an album, a backlog replayed after a restart or an outage: each within
`burst_seconds` of the one before) wait as one turn; a batch the channel marks (`gather`:
forwards, albums) waits for its last message even when nothing else is running; and once
`queue_cap` turns wait, a new message joins its sender's last waiting turn instead of
adding one more. In `collect` mode every waiting message of a sender joins one turn, the
way a person who sends three short messages in a row means one thing. Each job runs as its
own asyncio task so `/stop` can cancel it even while it waits on the LLM.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, Literal

from mnemobot.bot.schedule.tasks import Firing
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)

FINISHING_GRACE_SECONDS = 0.05


QueueMode = Literal["queue", "collect"]
# Most turns waiting in one chat; past it a new message joins its sender's last waiting
# turn (nothing is refused). Not measured; far more than a person types during a reply,
# few enough that a flood replays as a handful of turns.
QUEUE_CAP = 20
# Messages of one sender arriving within this many seconds of each other (a batch of
# forwards, an album, a backlog replayed after a restart) wait as one turn. Not measured;
# Telegram delivers an album's or a forwarded batch's messages well within it, and a
# person's next thought usually takes longer.
BURST_SECONDS = 1.5


@dataclass(frozen=True, slots=True)
class LaneRules:
    """How a channel's lanes queue: the channel's `queue_mode` (Telegram's is a setting,
    `telegram.queueMode`), the cap and the burst (constants; a test passes others)."""

    # "queue": messages sent during a reply wait and get their own turns (those arriving
    # together share one); "collect": they are merged into one turn.
    queue_mode: QueueMode = "queue"
    queue_cap: int = QUEUE_CAP
    burst_seconds: float = BURST_SECONDS


DEFAULT_LANE_RULES = LaneRules()


@dataclass(frozen=True, slots=True)
class _Job:
    """What every job of a lane has, whatever its kind (`LaneJob`)."""

    chat: ChatRef
    text: str
    _: KW_ONLY
    # The channel's id of the message to quote in the reply (Telegram groups), the newest
    # one when merged.
    reply_to_message_id: int | None = None
    received_at: float = field(default_factory=time.monotonic)
    # Ids of the durable inbox entries this job answers (all of them, when merged): they
    # are marked done once the job's answer is safely on its way.
    receipts: tuple[str, ...] = ()
    # Stands for the job while its turn runs, to tell how it goes (a tool's status line):
    # what is sent for it is not the job's answer, so it goes out at once.
    progress: bool = False


@dataclass(frozen=True, slots=True)
class MessageJob(_Job):
    """A message, or several of one sender merged into one turn."""

    message_refs: tuple[str, ...] = ()
    # How many messages the job answers (more than one when merged).
    messages: int = 1
    # What the channel needs to read the messages when the turn starts (files to fetch,
    # forwards' origins), in arrival order; the channel's own objects.
    parts: tuple[object, ...] = ()
    # Part of a batch that arrives together (a forwarded batch, an album): the turn waits
    # until the chat has been quiet for `burst_seconds`, so the batch is one turn.
    gather: bool = False
    # Words typed as they are: no file, photo or forward (only such a message can answer
    # a confirmation question).
    typed: bool = True


@dataclass(frozen=True, slots=True)
class CommandJob(_Job):
    """A command. /new and /compact run in order with the messages around them, never
    merged; the others are answered at once, outside the lane."""

    command: ParsedCommand


@dataclass(frozen=True, slots=True)
class EditJob(_Job):
    """An edit of the message with this ref whose turn already ran: memory is updated in
    order with the chat's turns, and nothing is replied."""

    edit_of: str


@dataclass(frozen=True, slots=True)
class FiringJob(_Job):
    """A scheduled task's occurrence, waiting its turn like a message; never merged."""

    firing: Firing


# One kind or another, never two: a job's class says what it is.
LaneJob = MessageJob | CommandJob | EditJob | FiringJob


def firing_job(firing: Firing, *, receipt: str | None = None) -> FiringJob:
    """A scheduled task's occurrence as a job of its chat (or forum topic); `receipt`: the
    inbox entry it answers, under the firing's stable id."""
    return FiringJob(
        firing.task.chat.ref(),
        firing.task.text,
        firing,
        receipts=(receipt,) if receipt else (),
    )


def messages_of(job: LaneJob) -> int:
    """How many messages a job answers: a merged one more than one."""
    return job.messages if isinstance(job, MessageJob) else 1


# A coroutine: each job runs as its own task.
JobRunner = Callable[[LaneJob], Coroutine[Any, Any, None]]


class Admission(enum.Enum):
    STARTED = "started"
    QUEUED = "queued"
    # Joined a turn already waiting (a burst, or a full queue).
    JOINED = "joined"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class StopOutcome:
    cancelled_running: bool
    dropped_jobs: tuple[LaneJob, ...] = ()

    @property
    def dropped(self) -> int:
        """Messages dropped (a merged job counts each of its messages)."""
        return sum(map(messages_of, self.dropped_jobs))


@dataclass(slots=True)
class _Lane:
    pending: deque[LaneJob] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
    job: asyncio.Task[None] | None = None
    # What `job` runs: whose reply it is decides who may /stop it.
    running: LaneJob | None = None
    # When the newest waiting message arrived: a burst is measured message to message.
    last_arrival: float = 0.0


def can_join(waiting: LaneJob, job: LaneJob) -> bool:
    """Whether `job` may share the turn of the `waiting` one: both messages, one sender."""
    return (
        isinstance(waiting, MessageJob)
        and isinstance(job, MessageJob)
        and waiting.chat.user_id == job.chat.user_id
    )


def merge_jobs(jobs: list[MessageJob]) -> MessageJob:
    """One turn from several messages of the same sender, texts in arrival order."""
    if len(jobs) == 1:
        return jobs[0]
    refs = tuple(ref for job in jobs for ref in job.message_refs)
    return replace(
        jobs[-1],
        text="\n\n".join(job.text for job in jobs),
        message_refs=refs,
        received_at=jobs[0].received_at,
        receipts=tuple(receipt for job in jobs for receipt in job.receipts),
        messages=sum(job.messages for job in jobs),
        parts=tuple(part for job in jobs for part in job.parts),
        gather=jobs[0].gather,
    )


class ChatLanes:
    def __init__(
        self,
        runner: JobRunner,
        config: Callable[[], LaneRules],
        *,
        keep_unanswered: Callable[[list[MessageJob]], None] | None = None,
    ) -> None:
        self._runner = runner
        # At shutdown, queued messages that never got their turn are handed here, so they
        # are kept (in their sessions) instead of vanishing with the process.
        self._keep_unanswered = keep_unanswered
        # Read on every submit, so a hot-reloaded queue mode applies at once.
        self._config = config
        self._lanes: dict[str, _Lane] = {}
        self._closed = False

    # -- state for /status --------------------------------------------------------------------

    def is_running(self, key: str) -> bool:
        lane = self._lanes.get(key)
        return lane is not None and lane.job is not None and not lane.job.done()

    def waiting(self, key: str) -> int:
        """Messages waiting in the chat's lane (those merged into one turn each count)."""
        lane = self._lanes.get(key)
        return sum(map(messages_of, lane.pending)) if lane is not None else 0

    @property
    def active_chats(self) -> int:
        return sum(1 for lane in self._lanes.values() if lane.worker is not None)

    async def wait_idle(self, key: str) -> None:
        """Return once the chat has nothing running and nothing waiting."""
        while (lane := self._lanes.get(key)) is not None and lane.worker is not None:
            await asyncio.wait({lane.worker})

    # -- intake ----------------------------------------------------------------------------------

    def submit(self, job: LaneJob) -> Admission:
        if self._closed:
            return Admission.CLOSED
        key = job.chat.key
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane()
        busy = lane.worker is not None
        config = self._config()
        waiting = lane.pending[-1] if busy and lane.pending else None
        if isinstance(waiting, MessageJob) and isinstance(job, MessageJob):
            in_burst = job.received_at - lane.last_arrival <= config.burst_seconds
            if can_join(waiting, job) and (in_burst or len(lane.pending) >= config.queue_cap):
                lane.pending[-1] = merge_jobs([waiting, job])
                lane.last_arrival = job.received_at
                return Admission.JOINED
        lane.pending.append(job)
        lane.last_arrival = job.received_at
        if not busy:
            lane.worker = asyncio.create_task(self._work(key, lane), name=f"lane:{key}")
            return Admission.STARTED
        return Admission.QUEUED

    def replace_waiting(
        self, key: str, ref: str, replace_part: Callable[[object], object], text: str
    ) -> bool:
        """An edit of a message still waiting for its turn: the turn takes the new wording
        (`replace_part` maps the job's parts, `text` replaces a job's own text). False when
        no waiting job holds the message (its turn ran, or is running)."""
        lane = self._lanes.get(key)
        if lane is None:
            return False
        for index, job in enumerate(lane.pending):
            if isinstance(job, MessageJob) and ref in job.message_refs:
                parts = tuple(replace_part(part) for part in job.parts)
                new_text = text if len(job.message_refs) == 1 else job.text
                lane.pending[index] = replace(job, parts=parts, text=new_text)
                return True
        return False

    def _next_job(self, lane: _Lane) -> LaneJob:
        first = lane.pending.popleft()
        if not isinstance(first, MessageJob) or self._config().queue_mode != "collect":
            return first
        batch = [first]
        while lane.pending and isinstance(joining := lane.pending[0], MessageJob):
            if not can_join(first, joining):
                break
            batch.append(joining)
            lane.pending.popleft()
        return merge_jobs(batch)

    async def _quiet(self, lane: _Lane) -> None:
        """Wait until no message joined the lane for `burst_seconds` (the batch is in)."""
        while True:
            left = lane.last_arrival + self._config().burst_seconds - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(left)

    async def _work(self, key: str, lane: _Lane) -> None:
        try:
            # Once shutdown begins no queued job starts: it would only be cancelled.
            while lane.pending and not self._closed:
                if isinstance(lane.pending[0], MessageJob) and lane.pending[0].gather:
                    await self._quiet(lane)
                    if not lane.pending or self._closed:
                        continue
                job = self._next_job(lane)
                lane.running = job
                lane.job = asyncio.create_task(self._runner(job), name=f"turn:{key}")
                # wait() instead of awaiting the task: a cancelled job must not cancel the lane.
                await asyncio.wait({lane.job})
                if not lane.job.cancelled() and lane.job.exception() is not None:
                    log.error("job in %s failed", key, exc_info=lane.job.exception())
                lane.job = None
                lane.running = None
        finally:
            lane.worker = None
            lane.job = None
            lane.running = None
            if not lane.pending and self._lanes.get(key) is lane:
                del self._lanes[key]

    # -- control ---------------------------------------------------------------------------------

    def running(self, key: str) -> LaneJob | None:
        """The job whose turn runs in the chat's lane now, if any."""
        lane = self._lanes.get(key)
        return lane.running if lane is not None and self.is_running(key) else None

    def queued(self, key: str) -> tuple[LaneJob, ...]:
        """The jobs waiting in the chat's lane, in order."""
        lane = self._lanes.get(key)
        return tuple(lane.pending) if lane is not None else ()

    def drop_queued(
        self, key: str, which: Callable[[LaneJob], bool] | None = None
    ) -> tuple[LaneJob, ...]:
        """Take the chat's waiting jobs (those `which` picks; all without it) out of its
        lane, at once (the first half of /stop)."""
        lane = self._lanes.get(key)
        if lane is None:
            return ()
        dropped = tuple(job for job in lane.pending if which is None or which(job))
        kept = [job for job in lane.pending if not any(job is gone for gone in dropped)]
        lane.pending.clear()
        lane.pending.extend(kept)
        return dropped

    async def stop(
        self,
        key: str,
        *,
        dropped: tuple[LaneJob, ...] | None = None,
        running: LaneJob | None = None,
    ) -> StopOutcome:
        """/stop: drop the queue and cancel the running job; returns once it has ended.

        `dropped`: the queue was already emptied by `drop_queued`, with these jobs.
        `running`: cancel the running job only if it is still this one (None: whichever runs).
        """
        if dropped is None:
            dropped = self.drop_queued(key)
        lane = self._lanes.get(key)
        if lane is None or (running is not None and lane.running is not running):
            return StopOutcome(cancelled_running=False, dropped_jobs=dropped)
        job = lane.job
        if job is not None and not job.done():
            # A job whose reply just went out is only tidying up (typing indicator, save):
            # let it end rather than claim to have stopped something.
            await asyncio.wait({job}, timeout=FINISHING_GRACE_SECONDS)
        if job is None or job.done():
            return StopOutcome(cancelled_running=False, dropped_jobs=dropped)
        job.cancel()
        # The turn saves its session in a finally block; wait for that before answering.
        await asyncio.wait({job}, timeout=5)
        return StopOutcome(cancelled_running=True, dropped_jobs=dropped)

    async def shutdown(self, grace_seconds: float) -> None:
        """Take nothing new and start nothing queued; let running jobs finish for
        `grace_seconds`, then cancel them. Queued jobs go to `keep_unanswered`."""
        self._closed = True
        left = [
            job
            for lane in self._lanes.values()
            for job in lane.pending
            if isinstance(job, MessageJob)
        ]
        for lane in self._lanes.values():
            lane.pending.clear()
        if left and self._keep_unanswered is not None:
            try:
                self._keep_unanswered(left)
            except Exception:
                log.exception("could not keep %d queued messages at shutdown", len(left))
        workers = [lane.worker for lane in self._lanes.values() if lane.worker is not None]
        if not workers:
            return
        _, unfinished = await asyncio.wait(workers, timeout=grace_seconds)
        if not unfinished:
            return
        log.warning("cancelling %d chat turn(s) still running at shutdown", len(unfinished))
        for lane in list(self._lanes.values()):
            if lane.job is not None:
                lane.job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait(unfinished, timeout=5)
