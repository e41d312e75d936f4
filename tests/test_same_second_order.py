"""Messages of one second keep their order: Telegram dates messages in whole seconds, and a
burst in a group, or a long text the app sent as several messages, shares one."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, said_order

SCOPE = "telegram:-100500"
CONFIG = MemoryConfig()
SAID_AT = datetime(2026, 11, 23, 10, 0, 7, tzinfo=UTC).timestamp()
STEPS = [
    "first unplug the router",
    "then wait thirty seconds",
    "then plug in the modem",
    "then wait for the green light",
    "then plug the router back in",
    "then restart the laptop",
    "then forget the old network",
    "then join the new network",
    "then open the admin page",
    "then change the password",
]


def test_a_burst_of_one_second_is_remembered_in_the_order_it_was_said(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    for number, step in enumerate(STEPS, start=1):
        memory.record.record_turn(
            scope=SCOPE,
            user_text=f"Router step {number}: {step}.",
            assistant_text="",
            at=SAID_AT,
            config=CONFIG,
            tz=UTC,
            message_refs=[f"tg:{number}"],
        )
    memory.close()
    # Read back from the files, whose times are whole seconds: the messages' numbers order
    # them, not the items' random ids.
    reopened = WorkspaceMemory.open(tmp_path)
    try:
        pack = reopened.recall.build_pack(
            SCOPE, "What were the router steps?", now=SAID_AT + 600, config=CONFIG, tz=UTC
        )
    finally:
        reopened.close()
    shown = [pack.rendered.find(f"Router step {n}:") for n in range(1, len(STEPS) + 1)]
    assert all(at >= 0 for at in shown), pack.rendered
    assert shown == sorted(shown), pack.rendered


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 10**9), min_size=2, max_size=30, unique=True), st.randoms())
def test_items_of_one_second_sort_by_their_message_numbers(
    numbers: list[int], shuffle: random.Random
) -> None:
    items = [
        MemoryItem(
            id=uuid.UUID(int=shuffle.getrandbits(128)).hex,
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title=f"message {n}",
            content=f"User: message {n}",
            scope=SCOPE,
            created_at=SAID_AT,
            updated_at=SAID_AT,
            # The bot's own, a migrated group's, an earlier bot's of the chat (a move).
            references=[(f"tg:{n}", f"tg:-100500:{n}", f"tg-bot654321:{n}")[n % 3]],
        )
        for n in numbers
    ]
    shuffle.shuffle(items)
    assert [item.title for item in sorted(items, key=said_order)] == [
        f"message {n}" for n in sorted(numbers)
    ]
