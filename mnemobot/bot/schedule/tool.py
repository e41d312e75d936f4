"""The `schedule` tool: the model adds, lists and cancels the chat's reminders and tasks.

Times are read in the chat's zone: the one the chat set (`set_timezone`, kept in the
chat's session, so every later turn sees its local time too), else `assistant.timezone`,
else the machine's zone (see `bot.tools.clock_tool`). A task keeps the zone it was made in.

What the tool adds is kept durably before it answers, and the line it returns is also
added to the turn's reply (`TurnContext.reply_notes`) unless the reply already carries it:
the chat always reads the absolute time ("Thursday 27 November, 09:00 (Europe/Berlin)"),
whatever the model writes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mnemobot.bot.i18n import N_, words_for
from mnemobot.bot.schedule.limits import DEFAULT_SCHEDULE_LIMITS, ScheduleLimits
from mnemobot.bot.schedule.parsing import MAX_WHEN_CHARS, WhenError, parse_interval, parse_when
from mnemobot.bot.schedule.reminders import KIND_NAMES
from mnemobot.bot.schedule.repeat_words import cron_from_words
from mnemobot.bot.schedule.store import TaskStore, TooManyTasks
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat, TaskKind
from mnemobot.bot.schedule.timing import (
    describe_schedule,
    describe_seconds,
    format_when,
    next_occurrence,
    repeat_suffix,
    shortest_gap,
    valid_cron,
    wall_time,
)
from mnemobot.bot.schedule.wording import local_confirmation, locale_for
from mnemobot.bot.tools.clock_tool import CHAT_ZONE_KEY, chat_zone_name
from mnemobot.bot.turn.permissions import Permissions
from mnemobot.config.zones import local_zone_name, zone_of
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import Tool

MAX_TEXT_CHARS = 2_000

DESCRIPTION = (
    "Act later in this chat. kind reminder: send text; task: carry text out (tools, "
    "memory); heartbeat: check in. when: 'tomorrow 09:00', 'in 2 hours'. repeat: cron "
    "'0 8 * * 1', monthly '0 9 3 * *', 'every 3 days' or 'every Monday at 8'. action "
    "list, cancel (number), set_timezone (IANA). "
    "The exact time is added to your reply."
)

# What the model reads when the window is too small for every tool in full.
BRIEF = "Remind later: text, when ('in 2 hours', 'tomorrow 09:00'), repeat. action: list, cancel."


def _compact_schema(schema: dict[str, Any]) -> None:
    # The schema goes with every request: no titles pydantic would add to each field.
    for field in schema.get("properties", {}).values():
        field.pop("title", None)


class ScheduleArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_compact_schema)
    action: Literal["add", "list", "cancel", "set_timezone"] = "add"
    kind: Literal["reminder", "task", "heartbeat"] = "reminder"
    text: str = ""
    when: str = ""
    repeat: str = ""
    timezone: str = ""
    number: int = 0


def chat_zone(ctx: TurnContext) -> str:
    """The zone this chat's times are read in (see the module docstring)."""
    return chat_zone_name(ctx.session.metadata, ctx.config) or local_zone_name()


def confirmation(task: Task, now: float) -> str:
    """The line that tells the user what was scheduled and exactly when, in their language
    when they have one other than English."""
    assert task.next_due is not None
    locale = locale_for(task.chat.language)
    if locale is not None:
        timing = (task.next_due, task.zone, now)
        return local_confirmation(task.number, task.kind, task.text, timing, task.schedule, locale)
    what = {"reminder": "Reminder", "task": "Task", "heartbeat": "Heartbeat"}[task.kind]
    when = format_when(task.next_due, task.zone, now)
    repeat = repeat_suffix(task.schedule, task.zone)
    text = f": {task.text}" if task.text else ""
    return f"✅ {what} #{task.number} set for {when}{repeat}{text}"


class ScheduleTool:
    def __init__(
        self,
        store: TaskStore,
        permissions: Permissions,
        *,
        on_added: Callable[[], None] = lambda: None,
        limits: ScheduleLimits = DEFAULT_SCHEDULE_LIMITS,
    ) -> None:
        self.store = store
        self.permissions = permissions
        self.on_added = on_added
        self.limits = limits

    def tool(self) -> Tool:
        return Tool(
            name="schedule",
            description=DESCRIPTION,
            arguments=ScheduleArguments,
            handler=self.handle,
            status=N_("⏰ scheduling…"),
            brief=BRIEF,
        )

    async def handle(self, arguments: ScheduleArguments, ctx: TurnContext) -> str:
        if not ctx.config.schedule.enabled:
            return "error: scheduling is turned off on this bot (schedule.enabled)"
        if arguments.action == "list":
            return await self._list(ctx)
        # The chat's time zone moves every member's reminders: the same permission.
        refusal = await self.permissions.refusal(ctx.chat, "schedule")
        if refusal is not None:
            return f"error: {refusal}"
        if arguments.action == "set_timezone":
            return self._set_zone(arguments, ctx)
        if arguments.action == "cancel":
            return await self._cancel(arguments, ctx)
        return await self._add(arguments, ctx)

    async def _list(self, ctx: TurnContext) -> str:
        tasks = await self.store.tasks(ctx.chat.key)
        if not tasks:
            return "Nothing is scheduled in this chat."
        now = ctx.now.timestamp()
        lines = []
        for task in tasks:
            when = (
                "paused"
                if task.paused
                else format_when(task.next_due, task.zone, now)
                if task.next_due is not None
                else "done"
            )
            repeat = describe_schedule(task.schedule, task.zone)
            lines.append(f"#{task.number} {task.kind}, {when} ({repeat}): {task.text}")
        return "\n".join(lines)

    def _set_zone(self, arguments: ScheduleArguments, ctx: TurnContext) -> str:
        if not arguments.timezone:
            return f"error: give timezone (an IANA name); the chat's zone is {chat_zone(ctx)}"
        try:
            zone_of(arguments.timezone)
        except ValueError as exc:
            return f"error: {exc}"
        ctx.session.metadata[CHAT_ZONE_KEY] = arguments.timezone
        return (
            f"This chat's time zone is now {arguments.timezone}; tasks already scheduled keep "
            "their own zone."
        )

    async def _cancel(self, arguments: ScheduleArguments, ctx: TurnContext) -> str:
        if not arguments.number:
            return "error: give the number of the task to cancel (see action list)"
        task = await self.store.remove(ctx.chat.key, arguments.number)
        if task is None:
            return f"error: this chat has no scheduled task #{arguments.number}"
        # The user reads the note in their language; the model, the English.
        said = words_for(ctx.chat.language)
        what = task.text or said.gettext(KIND_NAMES[task.kind])
        ctx.reply_notes.append(
            said.gettext("Cancelled #{number}: {what}.", number=task.number, what=what)
        )
        return f"Cancelled #{task.number}: {task.text}"

    async def _add(self, arguments: ScheduleArguments, ctx: TurnContext) -> str:
        limits = self.limits
        zone_name = arguments.timezone or chat_zone(ctx)
        text = (arguments.text or "").strip()
        kind: TaskKind = arguments.kind
        if not text and kind != "heartbeat":
            return "error: give text: what to say or do at that time"
        if len(text) > MAX_TEXT_CHARS:
            return f"error: text is longer than {MAX_TEXT_CHARS} characters; shorten it"
        now = ctx.now.timestamp()
        try:
            zone = zone_of(zone_name)
            # dateparser takes tens of milliseconds: not on the event loop.
            schedule = await asyncio.to_thread(self._schedule, arguments, now, zone_name)
        except (ValueError, WhenError) as exc:
            return f"error: {exc}"
        next_due = next_occurrence(schedule, now, zone)
        if next_due is None:
            return "error: that schedule never fires"
        gap = shortest_gap(schedule, zone, now)
        if gap < limits.min_interval_minutes * 60:
            shortest = describe_seconds(limits.min_interval_minutes * 60)
            return (
                f"error: that repeats too often (every {describe_seconds(gap)}); the "
                f"shortest interval allowed is {shortest}"
            )
        task = Task(
            id=uuid.uuid4().hex,
            number=0,
            chat=TaskChat.of(ctx.chat),
            kind=kind,
            text=text,
            schedule=schedule,
            zone=zone_name,
            created_at=now,
            next_due=next_due,
        )
        try:
            task = await self.store.add(task, max_per_chat=limits.max_tasks_per_chat)
        except TooManyTasks as exc:
            return f"error: {exc}; cancel one first"
        except OSError:
            return "error: the bot's storage is failing; nothing was scheduled, try later"
        self.on_added()
        # Babel loads its data for a language on first use: not on the event loop.
        line = await asyncio.to_thread(confirmation, task, now)
        ctx.reply_notes.append(line)
        return f"Scheduled. This line is added to your reply: {line}"

    @staticmethod
    def _schedule(arguments: ScheduleArguments, now: float, zone_name: str) -> Schedule:
        repeat = arguments.repeat.strip()
        if len(repeat) > MAX_WHEN_CHARS:
            raise ValueError(
                f"the repeat given is {len(repeat):,} characters long; say it in a few words, "
                "e.g. '0 8 * * 1', 'every 3 days' or 'every Monday at 08:00'"
            )
        if repeat and not repeat.lower().startswith("every") and valid_cron(repeat):
            return Schedule(type="cron", cron=repeat)
        # Days and a time in words, as a small model passes the user's ("every Monday at 8").
        said = cron_from_words(repeat) if repeat else None
        if said is not None:
            return Schedule(type="cron", cron=said)
        if repeat:
            try:
                interval = parse_interval(repeat)
            except ValueError:
                timed = _days_at_the_time_of(repeat, arguments.when, now, zone_name)
                if timed is not None:
                    return Schedule(type="cron", cron=timed)
                raise ValueError(
                    f"repeat {repeat!r} is neither a 5-field cron expression (minute hour day "
                    "month weekday, e.g. '0 8 * * 1'), an interval ('every 3 days') nor days "
                    "and one time ('every Monday at 08:00', 'weekdays at 9:30', 'every first "
                    "Monday of the month at 9')"
                ) from None
            anchor = (
                parse_when(arguments.when, now, zone_name)
                if arguments.when
                else now + interval.approximate_seconds
            )
            return Schedule(
                type="every", seconds=interval.seconds, days=interval.days, anchor=anchor
            )
        if arguments.when:
            return Schedule(type="once", at=parse_when(arguments.when, now, zone_name))
        raise ValueError("say when: give when (once) or repeat (a cron expression or interval)")


def _days_at_the_time_of(repeat: str, when: str, now: float, zone_name: str) -> str | None:
    """The cron of days said without a time ("on the 3rd of every month", "every Monday")
    at the time of day `when` names ("09:00"); None if that is not it. Found live: a model
    passed the time in `when` and the days in `repeat`, and was refused."""
    if not when:
        return None
    try:
        at = parse_when(when, now, zone_name)
    except WhenError:
        return None
    return cron_from_words(f"{repeat} at {wall_time(at, zone_of(zone_name)):%H:%M}")
