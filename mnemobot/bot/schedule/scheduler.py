"""The firing loop: hands each due task to its chat once, then moves the task on.

A channel that can take firings attaches a `FiringSink` (Telegram: its durable inbox). The
loop sleeps until the soonest task of an attached channel is due (or `wake()` is called, or
`ScheduleLimits.poll_seconds` pass: another replica may have added one), then for each due task:

1. works out the occurrence to hand over (`plan_firing`: on time, late with a note, or
   missed and only reported, when the bot was offline longer than the grace period);
2. hands the firings to the sink, which keeps them durably under their stable ids
   (`s:<task>:<due>`) and puts them in their chats' lanes, like messages;
3. moves each task past the occurrence (`TaskStore.advance`, a compare-and-set).

A crash between 2 and 3 finds the task still due after the restart and hands the same
occurrence over again: the sink recognises its id and drops it (the file inbox remembers
the last 100,000 ids; in Redis, the claim on it lasts 48 hours). With replicas every one
runs this loop; the claim lets one of them hand the occurrence over, and the
compare-and-set lets the first move the task on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.schedule.limits import DEFAULT_SCHEDULE_LIMITS, ScheduleLimits
from mnemobot.bot.schedule.store import TaskStore
from mnemobot.bot.schedule.tasks import Firing, Task
from mnemobot.bot.schedule.timing import plan_firing
from mnemobot.config.runtime import ScheduleConfig

log = logging.getLogger(__name__)

# What a channel does with firings: keep them durably and queue them in their chats'
# lanes; returns once they are kept. Raises when they could not be kept (retried later).
FiringSink = Callable[[Sequence[Firing]], Awaitable[None]]

# Due tasks handed over per round: a backlog after an outage goes out in rounds this big.
BATCH = 200
FIRST_RETRY_SECONDS = 1.0
LAST_RETRY_SECONDS = 30.0


class Scheduler:
    def __init__(
        self,
        store: TaskStore,
        config: Callable[[], ScheduleConfig],
        *,
        clock: Clock = SYSTEM_CLOCK,
        limits: ScheduleLimits = DEFAULT_SCHEDULE_LIMITS,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.limits = limits
        self._sinks: dict[str, FiringSink] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Fired occurrences handed over by this process (for benches and /status).
        self.handed_over = 0

    # -- lifecycle -------------------------------------------------------------------------

    def attach(self, channel: str, sink: FiringSink) -> None:
        """Fire the tasks of `channel` through `sink` (from inside the event loop)."""
        self._sinks[channel] = sink
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="scheduler")
        self.wake()

    async def detach(self, channel: str) -> None:
        """Stop firing `channel`'s tasks; the loop ends with the last channel."""
        self._sinks.pop(channel, None)
        if not self._sinks:
            await self.close()

    async def close(self) -> None:
        self._sinks.clear()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def wake(self) -> None:
        """Look again now (a task was added or changed, or the clock was moved)."""
        self._wake.set()

    # -- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        pause = FIRST_RETRY_SECONDS
        while self._sinks:
            self._wake.clear()
            try:
                busy = await self._round()
                pause = FIRST_RETRY_SECONDS
            except Exception as exc:
                # Storage or Redis trouble: nothing was lost (what was not moved on is
                # handed over again and recognised); try again a little later.
                log.warning(
                    "scheduled tasks: a round failed (%s: %s); retrying", type(exc).__name__, exc
                )
                await self._sleep(pause)
                pause = min(pause * 2, LAST_RETRY_SECONDS)
                continue
            if busy:
                continue
            await self._sleep(await self._until_next())

    async def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _until_next(self) -> float:
        if not self.config().enabled:
            return self.limits.poll_seconds
        soonest = None
        for channel in list(self._sinks):
            due = await self.store.next_due(channel)
            if due is not None and (soonest is None or due < soonest):
                soonest = due
        wait = self.limits.poll_seconds
        if soonest is not None:
            wait = min(wait, max(0.0, soonest - self.clock()))
        return wait

    async def _round(self) -> bool:
        """Hand over what is due; True when a full batch went (more may be due)."""
        config = self.config()
        if not config.enabled:
            return False  # kept, not fired, until schedule.enabled is true again
        now = self.clock()
        full = False
        for channel, sink in list(self._sinks.items()):
            tasks = await self.store.due(channel, now, BATCH)
            if not tasks:
                continue
            full = full or len(tasks) >= BATCH
            await self._fire(sink, tasks, now)
        return full

    async def _fire(self, sink: FiringSink, tasks: list[Task], now: float) -> None:
        limits = self.limits
        firings = [
            firing
            for task in tasks
            if (
                firing := plan_firing(
                    task,
                    now,
                    grace_seconds=limits.late_grace_minutes * 60,
                    late_after_seconds=limits.late_after_seconds,
                )
            )
            is not None
        ]
        if not firings:
            return
        await sink(firings)
        self.handed_over += len(firings)
        for firing in firings:
            if firing.late:
                log.info(
                    "task %s of %s %s %.0f s late",
                    firing.task.number,
                    firing.task.chat.key,
                    "missed, reported" if firing.missed else "fired",
                    now - firing.due,
                )
        moved = await asyncio.gather(
            *(self.store.advance(f.task.id, f.task.next_due or f.due, f.next_due) for f in firings),
            return_exceptions=True,
        )
        errors = [result for result in moved if isinstance(result, BaseException)]
        if errors:
            raise errors[0]
