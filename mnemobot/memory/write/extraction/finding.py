"""A finding: one thing read from a turn, before it becomes a memory item."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mnemobot.memory.store.items import ItemType

# Who wrote the text a finding was read from.
Origin = Literal["user", "assistant", "tool"]

# How much an item of each kind matters beside the others (the pack's salience term).
# These are relative weights, set together with the saliences of the statement rules
# (`personal_rules`); how much salience counts in a score is `Ranking.salience_weight`.
# Not measured one by one: chosen by hand, an order above a fix above a failure.
CONSTRAINT_SALIENCE = 0.8
FIX_SALIENCE = 0.75
FAILURE_SALIENCE = 0.6
ERROR_LINE_SALIENCE = 0.65
COMMAND_SALIENCE = 0.5


@dataclass(slots=True)
class Finding:
    type: ItemType
    # The sentence (or error line, or command) it was read from.
    sentence: str
    confidence: float
    salience: float
    tags: list[str]
    origin: Origin
    paths: list[str] = field(default_factory=list)
    # What the item says when it is more than the sentence (a fix with its steps).
    content: str = ""
