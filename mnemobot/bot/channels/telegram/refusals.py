"""Strangers are told once a day that the bot is private, and a restart does not re-tell them.

Telling a stranger their user id on every message would make the bot a spam echo in a
group and a chatty one in private; once a day is enough for them to pass the id on to the
owner. Who was told when is kept in a small JSON file in the workspace (`{"<user id>":
<unix time>}`), rewritten atomically; entries older than a day are dropped on every write,
so the file holds at most the strangers of one day.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.clock import SECONDS_PER_DAY, SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

# "Once a day" is what the refusal promises; not a tuning knob.
REFUSAL_INTERVAL_SECONDS = SECONDS_PER_DAY


def refusals_path(workspace: Path) -> Path:
    return workspace / "telegram" / "refused-users.json"


class RefusalMemory:
    """When each refused user was last told; `claim` says whether to tell them now."""

    def __init__(self, path: Path, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = path
        self.clock = clock
        self._told_at = _load(path)

    async def claim(self, user_id: int) -> bool:
        """True if `user_id` was not told in the last day; then they count as told from now.

        The decision is made before the first await, so two messages of one stranger never
        both get the refusal; the file is written in a worker thread, off the event loop.
        """
        now = self.clock()
        key = str(user_id)
        told_at = self._told_at.get(key)
        if told_at is not None and now - told_at < REFUSAL_INTERVAL_SECONDS:
            return False
        self._told_at[key] = now
        self._told_at = {
            k: t for k, t in self._told_at.items() if now - t < REFUSAL_INTERVAL_SECONDS
        }
        data = orjson.dumps(self._told_at)
        try:
            await asyncio.to_thread(write_atomic, self.path, data)
        except OSError as exc:
            # Still remembered in this process; only a restart would tell them again.
            log.warning("could not remember refused users in %s: %s", self.path, exc)
        return True


def _load(path: Path) -> dict[str, float]:
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("ignoring %s (%s): strangers may be told again today", path, exc)
        return {}
    if not isinstance(data, dict):
        log.warning("ignoring %s: not a JSON object", path)
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}
