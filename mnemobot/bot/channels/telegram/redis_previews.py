"""The preview journal of replicas: which messages show an unfinished answer, in Redis.

A replica that dies while a reply is shown as it is written leaves that preview in the
chat; the replica that takes the chat over answers the same messages again, and finds the
preview here under any of their receipts, so its answer arrives as an edit of it (as after
a restart of one process, see `preview`), not as a second copy beside it.

One hash per receipt (`preview:<receipt>`, chunk index -> message id), dropped once the
answer is in the outbox, and expiring with the update claims otherwise. A preview noted
while Redis is unreachable is not noted (one log line, through the replica's outage
notes): after a crash it would stay as it was, and the answer come as a new message.
"""

from __future__ import annotations

from collections.abc import Sequence

from redis.exceptions import RedisError

from mnemobot.bot.delivery.redis_coordination import CLAIM_TTL_SECONDS
from mnemobot.bot.delivery.replicas import Replicas


class RedisShownPreviews:
    """`ShownPreviews` on the replicas' Redis."""

    def __init__(self, replicas: Replicas) -> None:
        self.client = replicas.client
        self.namespace = replicas.coordination.namespace
        self.outage = replicas.outage

    def _key(self, receipt: str) -> str:
        return f"{self.namespace}:preview:{receipt}"

    async def shown(self, receipts: Sequence[str]) -> tuple[str | None, list[int]]:
        if not receipts:
            return None, []
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for receipt in receipts:
                    pipe.hgetall(self._key(receipt))
                found = await pipe.execute()
            self.outage.ok()
        except RedisError as exc:
            self.outage.failed("reading which preview an answer has", exc)
            return None, []
        for receipt, chunks in zip(receipts, found, strict=True):
            if chunks:
                ids = {int(index): int(message_id) for index, message_id in chunks.items()}
                return receipt, [ids[i] for i in sorted(ids)]
        return None, []

    async def add(self, key: str, receipt: str, index: int, message_id: int) -> None:
        try:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.hset(self._key(receipt), str(index), str(message_id))
                pipe.expire(self._key(receipt), CLAIM_TTL_SECONDS)
                await pipe.execute()
            self.outage.ok()
        except RedisError as exc:
            self.outage.failed("noting a preview message", exc)

    async def settle(self, receipts: Sequence[str]) -> None:
        if not receipts:
            return
        try:
            await self.client.delete(*(self._key(receipt) for receipt in receipts))
            self.outage.ok()
        except RedisError as exc:
            self.outage.failed("forgetting a preview", exc)
