"""`/reminders`: the chat's scheduled tasks, and cancelling, resuming, the heartbeat.

    /reminders                 list them, soonest first, with their next time
    /reminders cancel N        cancel task N
    /reminders resume N        resume a task paused after failing
    /reminders heartbeat on    check in daily (at 09:00 in the chat's zone), off by default
    /reminders heartbeat off

Listing is for everyone in the chat; changing follows `permissions.schedule` in a group.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.i18n import N_, words_for
from mnemobot.bot.schedule.limits import DEFAULT_SCHEDULE_LIMITS, ScheduleLimits
from mnemobot.bot.schedule.store import TaskStore, TooManyTasks
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat
from mnemobot.bot.schedule.timing import (
    format_when,
    next_occurrence,
    repeat_suffix,
)
from mnemobot.bot.schedule.wording import (
    DONE_SYMBOL,
    KIND_SYMBOLS,
    PAUSED_SYMBOL,
    local_repeat,
    local_when,
    locale_for,
)
from mnemobot.bot.turn.permissions import Permissions
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.zones import zone_of
from mnemobot.systems.core.context import ChatRef

if TYPE_CHECKING:
    from babel import Locale

USAGE = N_(
    "/reminders lists what is scheduled here; /reminders cancel N cancels one; "
    "/reminders resume N resumes a paused one; /reminders heartbeat on|off."
)
EMPTY = N_(
    'Nothing is scheduled in this chat. Ask me, for example: "remind me tomorrow at 9 to '
    'call the landlord" or "every Monday at 8 send me what I planned for the week".'
)
# A task without text, as /reminders names it.
KIND_NAMES = {"reminder": N_("reminder"), "task": N_("task"), "heartbeat": N_("heartbeat")}


def task_line(task: Task, now: float, language: str | None = None) -> str:
    """One task as `/reminders` lists it, in `language` (the asker's) when not English."""
    locale = locale_for(language)
    if locale is not None:
        return _local_task_line(task, now, locale)
    if task.paused:
        # English only: every other language reads the symbols (`_local_task_line`).
        when = f"paused after {task.failures} failure{'' if task.failures == 1 else 's'}"
    elif task.next_due is None:
        when = "done"
    else:
        when = format_when(task.next_due, task.zone, now)
    repeat = repeat_suffix(task.schedule, task.zone)
    text = f": {task.text}" if task.text else ""
    return f"#{task.number} {when}{repeat} — {task.kind}{text}"


def _local_task_line(task: Task, now: float, locale: Locale) -> str:
    if task.paused:
        when = f"{PAUSED_SYMBOL} ×{task.failures}"
    elif task.next_due is None:
        when = DONE_SYMBOL
    else:
        when = local_when(task.next_due, task.zone, now, locale)
    repeat = local_repeat(task.schedule, task.zone, locale)
    text = f": {task.text}" if task.text else ""
    return f"#{task.number} {KIND_SYMBOLS[task.kind]} {when}{repeat}{text}"


class RemindersCommand:
    def __init__(
        self,
        store: TaskStore,
        permissions: Permissions,
        config: Callable[[], RuntimeConfig],
        zone_for: Callable[[ChatRef], str],
        *,
        clock: Clock = SYSTEM_CLOCK,
        on_changed: Callable[[], None] = lambda: None,
        unavailable: Callable[[ChatRef], Awaitable[str | None]] | None = None,
        limits: ScheduleLimits = DEFAULT_SCHEDULE_LIMITS,
    ) -> None:
        """`unavailable`: why the model cannot set reminders in a chat now (its context
        window leaves no room for the schedule tool), or None when it can."""
        self.limits = limits
        self.unavailable = unavailable
        self.store = store
        self.permissions = permissions
        self.config = config
        self.zone_for = zone_for
        self.clock = clock
        self.on_changed = on_changed

    async def __call__(self, chat: ChatRef, args: str) -> str:
        said = words_for(chat.language)
        words = args.split()
        action = words[0].lower() if words else "list"
        if action == "list":
            return await self.listing(chat)
        if action not in ("cancel", "resume", "heartbeat"):
            return said.gettext(USAGE)
        refusal = await self.permissions.refusal(chat, "schedule", said)
        if refusal is not None:
            return refusal
        if action == "heartbeat":
            return await self._heartbeat(chat, words[1].lower() if len(words) > 1 else "")
        number = words[1].lstrip("#") if len(words) > 1 else ""
        if not number.isdigit():
            return said.gettext(
                "Usage: /reminders {action} N (the number /reminders shows).", action=action
            )
        if action == "cancel":
            task = await self.store.remove(chat.key, int(number))
            if task is None:
                return said.gettext(
                    "There is no task #{number} here; /reminders lists them.", number=number
                )
            self.on_changed()
            return said.gettext(
                "Cancelled #{number}: {what}.",
                number=task.number,
                what=task.text or said.gettext(KIND_NAMES[task.kind]),
            )
        resumed = await self.store.resume(chat.key, int(number), self.clock())
        if resumed is None:
            return said.gettext(
                "There is no task #{number} here; /reminders lists them.", number=number
            )
        self.on_changed()
        line = await asyncio.to_thread(task_line, resumed, self.clock(), chat.language)
        return said.gettext("Resumed: {task}", task=line)

    async def listing(self, chat: ChatRef) -> str:
        said = words_for(chat.language)
        tasks = await self.store.tasks(chat.key)
        why_not = await self.unavailable(chat) if self.unavailable is not None else None
        if not tasks:
            if why_not:
                return said.gettext("Nothing is scheduled in this chat. {why_not}", why_not=why_not)
            return said.gettext(EMPTY)
        now = self.clock()
        # Sentences of ours in English or a language we have words for; in any other the
        # lines say it with the symbols, not half in English.
        worded = said.translated or locale_for(chat.language) is None
        lines = [said.gettext("Scheduled in this chat:") if worded else "🗓"]
        # Babel loads its data for a language on first use: not on the event loop.
        lines += await asyncio.to_thread(
            lambda: [task_line(task, now, chat.language) for task in tasks]
        )
        lines.append(
            said.gettext("/reminders cancel N cancels one.") if worded else "/reminders cancel N"
        )
        if why_not:
            # What is scheduled still happens; only new reminders cannot be asked for.
            lines.append(why_not)
        return "\n".join(lines)

    async def _heartbeat(self, chat: ChatRef, state: str) -> str:
        said = words_for(chat.language)
        beats = [t for t in await self.store.tasks(chat.key) if t.kind == "heartbeat"]
        if state == "off":
            for task in beats:
                await self.store.remove(chat.key, task.number)
            self.on_changed()
            if beats:
                return said.gettext("Heartbeat off.")
            return said.gettext("The heartbeat was not on.")
        if state != "on":
            return said.gettext("Usage: /reminders heartbeat on|off")
        if beats:
            line = await asyncio.to_thread(task_line, beats[0], self.clock(), chat.language)
            return said.gettext("The heartbeat is on: {task}", task=line)
        zone = self.zone_for(chat)
        now = self.clock()
        schedule = Schedule(type="cron", cron=self.limits.heartbeat_cron)
        task = Task(
            id=uuid.uuid4().hex,
            number=0,
            chat=TaskChat.of(chat),
            kind="heartbeat",
            text="",
            schedule=schedule,
            zone=zone,
            created_at=now,
            next_due=next_occurrence(schedule, now, zone_of(zone)),
        )
        try:
            task = await self.store.add(task, max_per_chat=self.limits.max_tasks_per_chat)
        except TooManyTasks as exc:
            return said.gettext("No room for the heartbeat: {why}; cancel one first.", why=exc)
        self.on_changed()
        line = await asyncio.to_thread(task_line, task, now, chat.language)
        return said.gettext(
            "Heartbeat on: {task}. I check what I remember of this chat then and write only "
            "when there is something worth saying.",
            task=line,
        )
