"""A channel's delivery journals, redacted when a chat's texts are forgotten.

The inbox and outbox journals keep the messages and replies of a chat until their next
rewrite (`journal.REWRITE_AFTER_DONE` finished entries), long after they were answered
and delivered. The erasure of forgotten texts (`memory.upkeep.text_holders.TextKeeper`)
calls this from its worker thread; each journal redacts its own entries under its commit
lock, beside the delivery loop that appends to it (`DurableQueue.redact`).

Only the journals this process writes: another replica's outbox file is that replica's
(two processes never share a journal), and keeps a forgotten reply until its own rewrite.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.memory.upkeep.text_holders import Redact


class JournalKeeper:
    """`TextKeeper` of the journals `journals()` names (read at each erasure)."""

    def __init__(self, journals: Callable[[], list[DurableQueue]], root: Path) -> None:
        self.journals = journals
        self.root = root

    def redact_texts(self, holds_key: Callable[[str], bool], redact: Redact) -> list[str]:
        lines = []
        for queue in self.journals():
            count = queue.redact(holds_key, redact)
            if count:
                lines.append(str(queue.path.relative_to(self.root)))
        return lines
