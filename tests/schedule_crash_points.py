"""`python -c "<this file's text>" POINT [mnemobot args]`: mnemobot with a crash point.

The process SIGKILLs itself at the named moment, so a test crashes exactly there instead of
hoping a kill from outside lands in a window of microseconds:

- `after-handover`: a due task's firing is in the inbox (and queued in its chat's lane),
  and the task has not been moved past it yet;
- `after-delivery`: Telegram took the firing's reply and the outbox marked it delivered;
  the inbox has not marked the firing done;
- `before-delivery-mark`: Telegram took the firing's reply; the outbox has not marked it.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable
from typing import Any

from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.bot.schedule.store import FileTaskStore


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(point: str) -> None:
    if point == "after-handover":

        async def advance(self: FileTaskStore, *args: Any, **kwargs: Any) -> bool:
            _die()
            return False

        FileTaskStore.advance = advance  # type: ignore[method-assign]
        return
    if point not in ("after-delivery", "before-delivery-mark"):
        raise SystemExit(f"unknown crash point {point!r}")
    original = DurableQueue.done

    def done(self: DurableQueue, entry_ids: Iterable[str], **kwargs: Any) -> None:
        ids = list(entry_ids)
        firing_reply = self.path.name.startswith("telegram-outbox") and any(
            i.startswith("s:") for i in ids
        )
        if firing_reply and point == "before-delivery-mark":
            _die()
        original(self, ids, **kwargs)
        if firing_reply:
            _die()

    DurableQueue.done = done  # type: ignore[method-assign]


if __name__ == "__main__":
    install(sys.argv[1])
    from mnemobot.bot.cli.main import main

    raise SystemExit(main(sys.argv[2:]))
