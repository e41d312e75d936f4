"""Running a firing in its chat's lane: a reminder's text, or a turn through the pipeline.

A firing reaches its chat's lane like a message (after the chat's earlier messages, before
its later ones; `/stop` drops or cancels it) and is run here:

- a plain reminder is sent as it is, with no model call, and kept in the conversation (so
  "done, thanks" or "remind me again in an hour" has something to refer to);
- a task runs a turn of the chat (memory, tools) with the task as the message, and its
  answer is sent; a task or heartbeat whose turn fails counts a failure, and a recurring
  one that fails `ScheduleLimits.pause_after_failures` times in a row is paused, the chat told;
- a heartbeat runs the same turn, told to answer NO_REPLY when there is nothing worth
  saying: then nothing is sent, and the check-in leaves the conversation as it was;
- a missed occurrence (older than the grace period) is reported, not run.

Every answer goes through the channel (`FiringChat.reply`), whose outbox ids come from the
firing's stable id: a firing run again after a crash finds its answer in the session and
the outbox recognises it, so it is delivered once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from mnemobot.base.clock import SYSTEM_CLOCK, Clock, to_iso
from mnemobot.bot.i18n import N_, Words, words_for
from mnemobot.bot.schedule.limits import DEFAULT_SCHEDULE_LIMITS, ScheduleLimits
from mnemobot.bot.schedule.store import TaskStore
from mnemobot.bot.schedule.tasks import Firing
from mnemobot.bot.schedule.timing import (
    describe_schedule,
    format_clock,
    format_when,
    soon_in_english,
)
from mnemobot.bot.schedule.wording import (
    REPEAT_SYMBOL,
    local_clock,
    local_soon,
    local_when,
    locale_for,
)
from mnemobot.bot.turn.assistant import Assistant, TurnOutcome, llm_failure_text
from mnemobot.bot.turn.received import find_received
from mnemobot.config.zones import zone_of
from mnemobot.systems.core.context import NO_REPLY, ChatRef

log = logging.getLogger(__name__)


class FiringChat(Protocol):
    """How a firing's answers reach its chat: the channel, for the lane job being run."""

    async def reply(self, markdown: str) -> None:
        """An answer, through the channel's outbox (ids from the firing's stable id)."""
        ...

    async def note(self, text: str) -> None:
        """A short notice of our own (a task was paused)."""
        ...

    def working(self) -> AbstractAsyncContextManager[object]:
        """Entered while a task's turn runs (Telegram's typing indicator)."""
        ...


# In the session, where the model reads what was due (never translated).
KIND_NAMES = {"reminder": "reminder", "task": "task", "heartbeat": "heartbeat check-in"}
# What the chat is told, a sentence for each kind: the kind's word takes the sentence's
# grammar in other languages.
_MISSED = {
    "reminder": N_("I was offline at {at} and missed reminder #{number}{times}: {text}"),
    "task": N_("I was offline at {at} and missed task #{number}{times}: {text}"),
    "heartbeat": N_("I was offline at {at} and missed heartbeat check-in #{number}{times}: {text}"),
}
_FAILED = {
    "reminder": N_("Scheduled reminder #{number}{what} did not run: {why}."),
    "task": N_("Scheduled task #{number}{what} did not run: {why}."),
    "heartbeat": N_("Scheduled heartbeat check-in #{number}{what} did not run: {why}."),
}


def clock_text(ts: float, zone_name: str, now: float, language: str | None) -> str:
    """ "09:00" on the day of `now`, else with the date: in `language` when not English."""
    locale = locale_for(language)
    if locale is None:
        return format_clock(ts, zone_name, now)
    zone = zone_of(zone_name)
    local = datetime.fromtimestamp(ts, zone)
    if local.date() == datetime.fromtimestamp(now, zone).date():
        return local_clock(local, locale)
    return local_when(ts, zone_name, now, locale)


def late_note(firing: Firing, now: float) -> str:
    """ "(late: I was offline at 09:00)", with how many earlier times passed unseen."""
    language = firing.task.chat.language
    words = words_for(language)
    at = clock_text(firing.due, firing.task.zone, now, language)
    if firing.skipped:
        return words.ngettext(
            "(late: I was offline at {at}; it was also due {count} earlier time meanwhile)",
            "(late: I was offline at {at}; it was also due {count} earlier times meanwhile)",
            firing.skipped,
            at=at,
        )
    return words.gettext("(late: I was offline at {at})", at=at)


def reminder_text(firing: Firing, now: float) -> str:
    task = firing.task
    name = task.chat.user_name if task.chat.is_group else None
    if locale_for(task.chat.language) is None:
        text = f"⏰ Reminder{f' for {name}' if name else ''}: {task.text}"
    else:
        # No English word in a reminder set in another language: the symbol says it.
        text = f"⏰ {f'{name}: ' if name else ''}{task.text}"
    if firing.late:
        text += f"\n{late_note(firing, now)}"
    if task.schedule.recurring and firing.next_due is not None:
        text += f"\n{next_line(firing.next_due, task.zone, now, task.chat.language)}"
    return text


def next_line(ts: float, zone_name: str, now: float, language: str | None) -> str:
    """ "🔁 next: Mon 08:30" under a repeating reminder, in `language` and the task's zone."""
    words = words_for(language)
    locale = locale_for(language)
    if locale is None:
        when = soon_in_english(ts, zone_name, now)
    else:
        when = local_soon(ts, zone_name, now, locale)
    if words.translated or locale is None:
        return words.gettext("🔁 next: {when}", when=when)
    # A language with dates but no catalog: the symbol says it, no English word.
    return f"{REPEAT_SYMBOL} {when}"


def missed_text(firing: Firing, now: float) -> str:
    task = firing.task
    language = task.chat.language
    words = words_for(language)
    at = clock_text(firing.due, task.zone, now, language)
    times = ""
    if firing.skipped:
        times = " " + words.ngettext("({count} time)", "({count} times)", firing.skipped + 1)
    text = words.gettext(_MISSED[task.kind], at=at, number=task.number, times=times, text=task.text)
    if firing.next_due is not None:
        locale = locale_for(language)
        when = (
            format_when(firing.next_due, task.zone, now)
            if locale is None
            else local_when(firing.next_due, task.zone, now, locale)
        )
        text += "\n" + words.gettext("It goes on: next {when}.", when=when)
    return text


def task_prompt(firing: Firing, now: float) -> str:
    """The message a task's turn answers (the chat sees only the answer)."""
    task = firing.task
    by = f", set by {task.chat.user_name}" if task.chat.user_name else ""
    when = format_when(firing.due, task.zone, now)
    if task.kind == "heartbeat":
        return (
            f"[Scheduled heartbeat check-in #{task.number}{by}, due {when}. Nobody wrote "
            "this message.] Look at what you remember of this chat: plans, deadlines, open "
            "questions, things promised. If something is worth telling the chat now, write "
            f"it briefly. If there is nothing worth saying, answer exactly {NO_REPLY}."
            + (f"\nFocus: {task.text}" if task.text else "")
        )
    return (
        f"[Scheduled task #{task.number}{by}, due {when} "
        f"({describe_schedule(task.schedule, task.zone)}). Carry it out now; your answer is "
        f"sent to the chat.]\n{task.text}"
    )


def failed_text(firing: Firing, outcome: TurnOutcome) -> str:
    """Why a task's turn gave no answer, in one line (not the apology for a message)."""
    task = firing.task
    words = words_for(task.chat.language)
    if outcome.storage_failed:
        why = words.gettext("the bot's storage is failing")
    elif outcome.ctx is not None and outcome.ctx.llm_error is not None:
        why = llm_failure_text(words, outcome.ctx.llm_error.kind)
    else:
        why = words.gettext("something went wrong (the bot's log says what)")
    what = f" ({task.text})" if task.text else ""
    return words.gettext(_FAILED[task.kind], number=task.number, what=what, why=why)


def paused_text(number: int, failures: int, words: Words | None = None) -> str:
    return (words or words_for(None)).ngettext(
        "I paused scheduled task #{number}: it failed {count} time in a row. "
        "/reminders resume {number} starts it again.",
        "I paused scheduled task #{number}: it failed {count} times in a row. "
        "/reminders resume {number} starts it again.",
        failures,
        number=number,
    )


class FiringRunner:
    def __init__(
        self,
        assistant: Assistant,
        store: TaskStore,
        *,
        clock: Clock = SYSTEM_CLOCK,
        limits: ScheduleLimits = DEFAULT_SCHEDULE_LIMITS,
    ) -> None:
        self.assistant = assistant
        self.store = store
        self.clock = clock
        self.limits = limits

    async def run(
        self,
        firing: Firing,
        chat: ChatRef,
        out: FiringChat,
        progress: Callable[[str], Awaitable[None]],
    ) -> None:
        now = self.clock()
        # Babel loads a language's dates on first use: not on the event loop.
        if firing.missed:
            await self._say(firing, chat, out, await asyncio.to_thread(missed_text, firing, now))
        elif firing.task.kind == "reminder":
            await self._say(firing, chat, out, await asyncio.to_thread(reminder_text, firing, now))
        else:
            async with out.working():
                await self._turn(firing, chat, out, progress, now)

    async def _say(self, firing: Firing, chat: ChatRef, out: FiringChat, text: str) -> None:
        """Keep a reminder in the conversation (once), then send it."""
        sessions = self.assistant.sessions
        try:
            async with self.assistant.lock_for(chat.key), sessions.exclusive(chat.key):
                session = sessions.get(chat.key)
                if find_received(session.messages, [firing.entry_id]) is None:
                    at = to_iso(self.clock())
                    session.messages.append(
                        {
                            "role": "user",
                            "content": f"[Scheduled {KIND_NAMES[firing.task.kind]} "
                            f"#{firing.task.number} is due]",
                            "at": at,
                            "refs": [firing.entry_id],
                            "scheduled": True,
                        }
                    )
                    session.messages.append({"role": "assistant", "content": text, "at": at})
                    await sessions.save_async(session)
        except OSError as exc:
            # The reminder matters more than its record: send it anyway.
            log.warning("could not keep reminder %s in %s (%s)", firing.entry_id, chat.key, exc)
        await out.reply(text)

    async def _turn(
        self,
        firing: Firing,
        chat: ChatRef,
        out: FiringChat,
        progress: Callable[[str], Awaitable[None]],
        now: float,
    ) -> None:
        task = firing.task
        # Nobody wrote the task's message: in a group it must not reach the model (or
        # memory) under the name of whoever set it. Their id stays: the turn's tools act
        # with their permissions.
        unsigned = replace(chat, user_name=None)
        outcome = await self.assistant.handle_text(
            unsigned,
            task_prompt(firing, now),
            message_refs=[firing.entry_id],
            notify=progress,
            scheduled=True,
        )
        if outcome is None:
            return
        ok = outcome.answered and not outcome.storage_failed
        reply = outcome.reply if ok else failed_text(firing, outcome)
        if task.kind == "heartbeat" and ok and reply.strip().upper().startswith(NO_REPLY):
            await self._forget_check_in(firing, chat)
        else:
            if firing.late:
                reply = f"{await asyncio.to_thread(late_note, firing, now)}\n\n{reply}"
            await out.reply(reply)
        await self._count(task.id, ok, chat, out)

    async def _count(self, task_id: str, ok: bool, chat: ChatRef, out: FiringChat) -> None:
        before = await self.store.get(task_id)
        pause_after = self.limits.pause_after_failures
        after = await self.store.record_run(task_id, ok, pause_after=pause_after)
        if after is not None and after.paused and (before is None or not before.paused):
            log.warning("task %s of %s paused after %d failures", task_id, chat.key, after.failures)
            words = words_for(chat.language)
            await out.note(paused_text(after.number, after.failures, words))

    async def _forget_check_in(self, firing: Firing, chat: ChatRef) -> None:
        """A check-in with nothing to say leaves no trace in the conversation."""
        sessions = self.assistant.sessions
        async with self.assistant.lock_for(chat.key), sessions.exclusive(chat.key):
            session = sessions.get(chat.key)
            found = find_received(session.messages, [firing.entry_id])
            if found is not None:
                del session.messages[found.index :]
                await sessions.save_async(session)
