"""A channel's delivery journals, redacted when a chat's texts are forgotten.

The inbox and outbox journals keep the messages and replies of a chat until their next
rewrite (`journal.REWRITE_AFTER_DONE` finished entries), long after they were answered
and delivered. The erasure of forgotten texts (`memory.upkeep.text_holders.TextKeeper`)
calls `JournalKeeper` from its worker thread; each journal redacts its finished entries
under its commit lock, beside the delivery loop that appends to it (`DurableQueue.redact`).
It first waits for the chat's entries to be done: the turn that forgot puts its answer in
the outbox after it let go of the session, and the user reads that answer as written.

Two processes never share a journal, so with replicas the one that erases cannot redact
another replica's outbox: it hands the texts on (`ReplicaHandoff`), in a file of the
shared `delivery/` folder for each other replica with an outbox there, and each replica
looks for its file every `HANDOFF_CHECK_SECONDS` (and when it starts), redacts its own
journals, then removes the file. A crash in between leaves the file, and the redaction
is done again. A replica that never starts again keeps both its outbox and its file.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.atomic_file import append_jsonl, read_jsonl, write_atomic
from mnemobot.base.file_lock import private_file_lock
from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.memory.upkeep.forgetting import redact_value
from mnemobot.memory.upkeep.text_holders import KeptRedaction, scope_holds_key

log = logging.getLogger(__name__)

# How often a replica looks for forgotten texts another replica handed it: a stat a second.
HANDOFF_CHECK_SECONDS = 1.0
HANDOFF_PREFIX = ".forgotten-for-"
# How often the chat's entries are looked at while the erasure waits for them to be done.
QUIET_POLL_SECONDS = 0.05


class JournalKeeper:
    """`TextKeeper` of the journals `journals()` names (read at each erasure); with
    `handoff`, the other replicas' outboxes are handed the texts. `waits`: whether a
    delivery loop is running, whose chats' entries are waited for until they are done."""

    def __init__(
        self,
        journals: Callable[[], list[DurableQueue]],
        root: Path,
        *,
        handoff: ReplicaHandoff | None = None,
        waits: bool = True,
    ) -> None:
        self.journals = journals
        self.root = root
        self.handoff = handoff
        self.waits = waits

    def redact_texts(self, scope: str, needles: list[str], wait_seconds: float) -> KeptRedaction:
        if self.waits:
            self._wait_until_quiet(scope, wait_seconds)
        done = self.redact_own(scope, needles)
        if self.handoff is not None:
            done.files.extend(self.handoff.pass_on(scope, needles))
        return done

    def _wait_until_quiet(self, scope: str, wait_seconds: float) -> None:
        """Until no entry of the scope's chats is live: the turn that forgot has had its
        reply put in the outbox (its message is done then), and the reply is delivered.
        A reply written after the erasure would otherwise keep the text."""
        deadline = time.monotonic() + wait_seconds
        holds = partial(scope_holds_key, scope)
        while time.monotonic() < deadline:
            if not any(holds(e.key) for queue in self.journals() for e in queue.pending()):
                return
            time.sleep(QUIET_POLL_SECONDS)

    def redact_own(self, scope: str, needles: list[str]) -> KeptRedaction:
        def redact(value: Any) -> tuple[Any, int]:
            return redact_value(value, needles)

        done = KeptRedaction()
        for queue in self.journals():
            redacted = queue.redact(partial(scope_holds_key, scope), redact)
            shown = str(queue.path.relative_to(self.root))
            if redacted.entries:
                done.files.append(shown)
            if redacted.live:
                done.busy.append(f"{shown} (a reply not delivered yet)")
        return done


class ReplicaHandoff:
    """Forgotten texts passed between the replicas sharing `delivery`, whose outboxes are
    `<outbox_prefix><replica>.jsonl` there."""

    def __init__(self, delivery: Path, replica: str, outbox_prefix: str) -> None:
        self.delivery = delivery
        self.replica = replica
        self.outbox_prefix = outbox_prefix

    def _file(self, replica: str) -> Path:
        return self.delivery / f"{HANDOFF_PREFIX}{replica}.jsonl"

    def others(self) -> list[str]:
        names = (p.name for p in self.delivery.glob(f"{self.outbox_prefix}*.jsonl"))
        found = (n.removeprefix(self.outbox_prefix).removesuffix(".jsonl") for n in names)
        return sorted(r for r in found if r and r != self.replica)

    def pass_on(self, scope: str, needles: list[str]) -> list[str]:
        lines = []
        for replica in self.others():
            path = self._file(replica)
            with private_file_lock(path.with_suffix(".lock")):
                append_jsonl(path, [{"scope": scope, "needles": needles}], durable=True)
            lines.append(f"{path.relative_to(self.delivery.parent)} (for replica {replica})")
        return lines

    def receive(self, keeper: JournalKeeper) -> int:
        """Redact what other replicas handed this one; how many erasures were done."""
        path = self._file(self.replica)
        if not path.exists():
            return 0
        with private_file_lock(path.with_suffix(".lock")):
            records = read_jsonl(path).records
            # A reply still owed its delivery keeps its record here, for the next look.
            left = [record for record in records if self._redact_handed(keeper, record)]
            if left:
                write_atomic(path, b"".join(orjson.dumps(record) + b"\n" for record in left))
            else:
                path.unlink(missing_ok=True)
        return len(records) - len(left)

    @staticmethod
    def _redact_handed(keeper: JournalKeeper, record: dict[str, Any]) -> bool:
        """Redact what `record` hands on; True when some of it waits for a delivery."""
        scope, needles = record.get("scope"), record.get("needles")
        if not isinstance(scope, str) or not isinstance(needles, list):
            return False
        return bool(keeper.redact_own(scope, [n for n in needles if isinstance(n, str)]).busy)

    async def receive_forever(self, keeper: JournalKeeper) -> None:
        """Look for handed texts now and every `HANDOFF_CHECK_SECONDS` (cancel to stop)."""
        while True:
            try:
                await asyncio.to_thread(self.receive, keeper)
            except (OSError, orjson.JSONDecodeError) as exc:
                log.warning("could not redact texts another replica forgot: %s", exc)
            await asyncio.sleep(HANDOFF_CHECK_SECONDS)
