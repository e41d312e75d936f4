"""Standing preferences past the block's room in a chat of many subjects: the one said
while the question's subject was talked about goes first."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import STANDING_TAG
from tests.test_standing_preferences import (
    CONFIG,
    DAY,
    START,
    TOPICS,
    WANTED,
    record,
)

# Said on other days, amid talk of other things: each shares more of the question's words
# ("scheduling", "time") than the one said planning walks.
ELSEWHERE = [
    ("I prefer scheduling time for team meetings on Monday mornings.", "the quarterly report"),
    ("I prefer scheduling time for dentist visits before work.", "my tooth ache"),
    ("I prefer scheduling time for phone calls after lunch.", "the insurance claim"),
    ("I prefer scheduling time for haircuts on Saturdays.", "a new hair style"),
]


def test_a_preference_said_while_its_subject_was_talked_about_goes_before_others_of_its_words(
    workspace: Path,
) -> None:
    memory = WorkspaceMemory.open(workspace)
    scope = "telegram:1"
    try:
        ref = 1
        for day, (preference, subject) in enumerate(ELSEWHERE):
            at = START + day * DAY
            for n in range(3):
                record(memory, scope, f"Tell me more about {subject}, part {n}.", at, f"tg:{ref}")
                at, ref = at + 300, ref + 1
            record(memory, scope, preference, at, f"tg:{ref}")
            ref += 1
        at = START + len(ELSEWHERE) * DAY
        for path in ("river path", "park loop", "old town", "hill trail"):
            record(memory, scope, f"Is the {path} a good walk for the evening?", at, f"tg:{ref}")
            at, ref = at + 300, ref + 1
        record(memory, scope, "I prefer scheduling around 6:15 PM.", at, f"tg:{ref}")
        for n in range(2):
            at, ref = at + 300, ref + 1
            record(memory, scope, f"How long should walk number {n} take?", at, f"tg:{ref}")
        # Newer standing requests than all of these fill the block.
        for n, (what, topic) in enumerate(zip(WANTED, TOPICS, strict=True)):
            said = f"Always include {what} when I ask about {topic}."
            record(memory, scope, said, START + 10 * DAY + n * 600, f"tg:{ref + 1 + n}")
        block = memory.recall.standing_block(scope, UTC, 300)
        assert "6:15" not in block.text and "haircuts" not in block.text
        pack = memory.recall.build_pack(
            scope,
            "What time should I schedule my walk today?",
            now=START + 20 * DAY,
            config=CONFIG,
            tz=UTC,
            standing=block,
        )
        first = [p.item.content for p in pack.items if STANDING_TAG in p.item.tags]
        assert first[0] == "Ada: I prefer scheduling around 6:15 PM", first
    finally:
        memory.close()
