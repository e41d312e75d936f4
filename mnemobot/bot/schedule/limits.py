"""The limits of scheduled tasks: constants, not settings (`schedule.enabled` is the one
setting). A test passes others (`build_app(tuning=...)`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScheduleLimits:
    # Most scheduled tasks one chat may have at once. Not measured; more than anyone keeps
    # track of, few enough that a runaway model cannot flood a chat.
    max_tasks_per_chat: int = 25
    # Shortest time between two firings of a recurring task: each firing is a model turn.
    # Not measured.
    min_interval_minutes: float = 5
    # A task handed to its chat more than this after its time (the bot was offline)
    # carries a note: "(late: I was offline at 09:00)".
    late_after_seconds: float = 60
    # A task whose time passed while the bot was offline still fires after a restart
    # within this many minutes of it; an older one is reported to the chat once instead.
    # Not measured; a night's outage still wakes the morning's reminder.
    late_grace_minutes: float = 360
    # A recurring task whose turn failed this many times in a row is paused and the chat
    # told (/reminders resume N starts it again).
    pause_after_failures: int = 3
    # When /reminders heartbeat on checks in (a cron expression in the chat's zone).
    heartbeat_cron: str = "0 9 * * *"
    # Longest sleep of the firing loop: with replicas, a task another replica added is
    # seen within this long (its own replica fires it on time). Not measured; one store
    # read per channel every few seconds costs nothing.
    poll_seconds: float = 5


DEFAULT_SCHEDULE_LIMITS = ScheduleLimits()
