"""Outbox: a reply that cannot be delivered now is kept, retried in order, and survives restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mnemobot.bot.delivery.outbox import Delivery, DeliveryResult, Outbox


class FlakyChannel:
    """Takes messages only while `up`; records what it took, in order."""

    def __init__(self) -> None:
        self.up = False
        self.taken: list[str] = []
        self.refuse: set[str] = set()
        # Every try, taken or not, per first word of the text ("a1" -> "a").
        self.tries: dict[str, int] = {}

    async def deliver(self, message: dict[str, Any]) -> DeliveryResult:
        chat = message["text"][0]
        self.tries[chat] = self.tries.get(chat, 0) + 1
        if message["text"] in self.refuse:
            return DeliveryResult(Delivery.REFUSED, "Forbidden: bot was blocked by the user")
        if not self.up:
            return DeliveryResult(Delivery.RETRY, "502 Bad Gateway")
        self.taken.append(message["text"])
        return DeliveryResult(Delivery.SENT)


async def test_an_outage_delays_replies_but_loses_none_and_keeps_order(tmp_path: Path) -> None:
    channel = FlakyChannel()
    outbox = Outbox(tmp_path / "outbox.jsonl", channel.deliver, first_retry_seconds=0.01)
    await outbox.put("telegram:1", [{"text": "a1"}, {"text": "a2"}])
    await outbox.put("telegram:2", [{"text": "b1"}])
    await outbox.put("telegram:1", [{"text": "a3"}])

    # Both chats were tried again and again during the outage: nothing was taken or lost.
    async def retried() -> None:
        while min(channel.tries.get("a", 0), channel.tries.get("b", 0)) < 3:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(retried(), 5)
    assert channel.taken == [] and outbox.waiting() == 4
    channel.up = True
    await asyncio.wait_for(outbox.drained("telegram:1"), 5)
    await asyncio.wait_for(outbox.drained("telegram:2"), 5)
    assert [t for t in channel.taken if t.startswith("a")] == ["a1", "a2", "a3"]
    assert "b1" in channel.taken
    await outbox.close(1)


async def test_undelivered_replies_go_out_after_a_restart(tmp_path: Path) -> None:
    down = FlakyChannel()
    outbox = Outbox(tmp_path / "outbox.jsonl", down.deliver, first_retry_seconds=0.01)
    await outbox.put("telegram:1", [{"text": "kept"}])
    await outbox.close(0.05)
    up = FlakyChannel()
    up.up = True
    again = Outbox(tmp_path / "outbox.jsonl", up.deliver)
    assert await again.start() == 1
    await asyncio.wait_for(again.drained("telegram:1"), 5)
    assert up.taken == ["kept"]
    await again.close(1)
    assert Outbox(tmp_path / "outbox.jsonl", up.deliver).waiting() == 0


async def test_a_chat_that_refuses_is_dropped_once_and_others_go_on(tmp_path: Path) -> None:
    channel = FlakyChannel()
    channel.up = True
    channel.refuse = {"to-blocker"}
    outbox = Outbox(tmp_path / "outbox.jsonl", channel.deliver)
    await outbox.put("telegram:9", [{"text": "to-blocker"}, {"text": "after"}])
    await asyncio.wait_for(outbox.drained("telegram:9"), 5)
    assert channel.taken == ["after"] and outbox.refused == 1
    await outbox.close(1)
