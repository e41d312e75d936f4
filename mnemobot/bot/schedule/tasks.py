"""What a scheduled task is, and what one firing of it carries into its chat.

A `Task` belongs to one chat (a Telegram chat or forum topic, the console) and says what to
do (`kind`): send a plain reminder (no model call), carry out a task (a turn through the
pipeline with memory and tools), or a heartbeat check-in (a turn that says something only
when there is something to say). `Schedule` says when: once, by a cron expression, or every
N seconds (hours, minutes) or every N days at the same local time. Times are epoch seconds;
`zone` is the IANA zone the task's local times are read in.

A `Firing` is one occurrence handed to the chat. Its `entry_id` is stable (task id and due
time), so handing it over twice (a crash between handing over and marking the task) is
recognised by the inbox and the outbox and goes out once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from mnemobot.systems.core.context import ChatRef

TaskKind = Literal["reminder", "task", "heartbeat"]
# Inbox ids of firings start with this; update ids start with "u:".
FIRING_PREFIX = "s:"


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a task fires: `once` at `at`; by `cron` (5 fields, local time); or `every`
    `seconds` (elapsed time) or `days` (same local time), counted from `anchor`."""

    type: Literal["once", "cron", "every"]
    at: float | None = None
    cron: str | None = None
    seconds: float | None = None
    days: int | None = None
    anchor: float | None = None

    @property
    def recurring(self) -> bool:
        return self.type != "once"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        for name in ("at", "cron", "seconds", "days", "anchor"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Schedule:
        kind = data.get("type")
        if kind not in ("once", "cron", "every"):
            raise ValueError(f"unknown schedule type {kind!r}")
        return cls(
            type=kind,
            at=_number(data.get("at")),
            cron=str(data["cron"]) if data.get("cron") is not None else None,
            seconds=_number(data.get("seconds")),
            days=int(data["days"]) if data.get("days") is not None else None,
            anchor=_number(data.get("anchor")),
        )


@dataclass(frozen=True, slots=True)
class TaskChat:
    """Where a task fires and who set it (the reply goes to the chat or forum topic)."""

    channel: str
    chat_id: str
    thread_id: str | None = None
    user_id: str | None = None
    user_name: str | None = None
    is_group: bool = False
    # The language of whoever set the task (ChatRef.language): its reminder is worded in it.
    language: str | None = None

    @property
    def key(self) -> str:
        """The chat's lane and session key (`telegram:42`, `telegram:42:7`)."""
        return self.ref().key

    def ref(self) -> ChatRef:
        return ChatRef(
            channel=self.channel,
            chat_id=self.chat_id,
            user_id=self.user_id,
            thread_id=self.thread_id,
            user_name=self.user_name,
            is_group=self.is_group,
            language=self.language,
        )

    @classmethod
    def of(cls, chat: ChatRef) -> TaskChat:
        return cls(
            channel=chat.channel,
            chat_id=chat.chat_id,
            thread_id=chat.thread_id,
            user_id=chat.user_id,
            user_name=chat.user_name,
            is_group=chat.is_group,
            language=chat.language,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "chatId": self.chat_id,
            "threadId": self.thread_id,
            "userId": self.user_id,
            "userName": self.user_name,
            "isGroup": self.is_group,
            "language": self.language,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskChat:
        return cls(
            channel=str(data["channel"]),
            chat_id=str(data["chatId"]),
            thread_id=_text(data.get("threadId")),
            user_id=_text(data.get("userId")),
            user_name=_text(data.get("userName")),
            is_group=bool(data.get("isGroup", False)),
            language=_text(data.get("language")),
        )


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    # Shown to the chat and used by `/reminders cancel N`; unique within the chat.
    number: int
    chat: TaskChat
    kind: TaskKind
    text: str
    schedule: Schedule
    zone: str
    created_at: float
    # The next occurrence; None once a one-shot task has fired.
    next_due: float | None
    # Failed runs in a row (a task or heartbeat whose turn got no answer).
    failures: int = 0
    paused: bool = False

    @property
    def waiting(self) -> bool:
        """Whether the task will fire (it has a next time and is not paused)."""
        return self.next_due is not None and not self.paused

    def with_changes(self, **changes: Any) -> Task:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "number": self.number,
            "chat": self.chat.to_json(),
            "kind": self.kind,
            "text": self.text,
            "schedule": self.schedule.to_json(),
            "zone": self.zone,
            "createdAt": self.created_at,
            "nextDue": self.next_due,
            "failures": self.failures,
            "paused": self.paused,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        kind = data.get("kind")
        if kind not in ("reminder", "task", "heartbeat"):
            raise ValueError(f"unknown task kind {kind!r}")
        return cls(
            id=str(data["id"]),
            number=int(data["number"]),
            chat=TaskChat.from_json(data["chat"]),
            kind=kind,
            text=str(data["text"]),
            schedule=Schedule.from_json(data["schedule"]),
            zone=str(data["zone"]),
            created_at=float(data["createdAt"]),
            next_due=_number(data.get("nextDue")),
            failures=int(data.get("failures", 0)),
            paused=bool(data.get("paused", False)),
        )


@dataclass(frozen=True, slots=True)
class Firing:
    """One occurrence of a task, handed to its chat like a message."""

    task: Task
    due: float
    # Handed over later than `ScheduleLimits.late_after_seconds` after `due` (bot offline).
    late: bool = False
    # Older than the grace period: the chat is told it was missed; nothing is run.
    missed: bool = False
    # Earlier occurrences that passed while the bot was offline (neither run nor told).
    skipped: int = 0
    # The task's time after this one (None: it was the last), for the chat to be told.
    next_due: float | None = None

    @property
    def entry_id(self) -> str:
        """Stable across crashes: the same occurrence always has the same id."""
        return f"{FIRING_PREFIX}{self.task.id}:{round(self.due * 1000)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task.to_json(),
            "due": self.due,
            "late": self.late,
            "missed": self.missed,
            "skipped": self.skipped,
            "nextDue": self.next_due,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Firing:
        return cls(
            task=Task.from_json(data["task"]),
            due=float(data["due"]),
            late=bool(data.get("late", False)),
            missed=bool(data.get("missed", False)),
            skipped=int(data.get("skipped", 0)),
            next_due=_number(data.get("nextDue")),
        )


def is_firing_entry(entry_id: str) -> bool:
    return entry_id.startswith(FIRING_PREFIX)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
