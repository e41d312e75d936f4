"""Turns in flight in every replica, in Redis: what a background model call waits on where
the model server takes one request at a time (`llm.serverSlots`, see `bot.llm.model_gate`).

One sorted set, `<namespace>:turns`: a member per turn in flight, scored by when its mark
runs out, so a replica that died mid-turn holds back the others' background work for
`TURN_MARK_SECONDS` at most.
"""

from __future__ import annotations

import itertools
import time

from redis.asyncio import Redis

# Longest a turn is taken to be in flight without ending (a model call's default limit,
# 120 s, a few times over: tool loops and compactions run long).
TURN_MARK_SECONDS = 600.0


class RedisTurnBoard:
    """`TurnBoard` on the replicas' Redis."""

    def __init__(self, client: Redis, *, namespace: str, replica_id: str) -> None:
        self.client = client
        self.key = f"{namespace}:turns"
        self.replica_id = replica_id
        self._numbers = itertools.count(1)

    async def begin(self, key: str) -> str:
        mark = f"{self.replica_id}:{next(self._numbers)}:{key}"
        await self.client.zadd(self.key, {mark: time.time() + TURN_MARK_SECONDS})
        return mark

    async def end(self, mark: str) -> None:
        await self.client.zrem(self.key, mark)

    async def any_in_flight(self) -> bool:
        await self.client.zremrangebyscore(self.key, "-inf", time.time())
        return bool(await self.client.zcard(self.key))
