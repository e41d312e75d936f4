"""Lanes at shutdown: queued messages that never got their turn are kept, not lost."""

from __future__ import annotations

import asyncio

from mnemobot.bot.channels.lanes import Admission, ChatLanes, LaneRules, MessageJob
from mnemobot.systems.core.context import ChatRef


async def test_queued_messages_are_handed_over_when_shutdown_cuts_them_off() -> None:
    started = asyncio.Event()
    kept: list[MessageJob] = []

    async def slow_turn(job: MessageJob) -> None:
        started.set()
        await asyncio.sleep(30)

    lanes = ChatLanes(slow_turn, lambda: LaneRules(burst_seconds=0), keep_unanswered=kept.extend)
    chat = ChatRef("telegram", "42", user_id="42")
    admissions = [lanes.submit(MessageJob(chat, f"message {i}")) for i in range(3)]
    assert admissions == [Admission.STARTED, Admission.QUEUED, Admission.QUEUED]
    await started.wait()
    await lanes.shutdown(grace_seconds=0.05)
    assert [job.text for job in kept] == ["message 1", "message 2"]
    assert lanes.submit(MessageJob(chat, "too late")) is Admission.CLOSED
