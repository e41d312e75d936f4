"""Replicas on one Redis: update claims, per-chat pending lists, leases with fencing.

What several replicas of one bot share, each operation one atomic step on the server:

- **Claim and queue** (`accept`): the first replica to see an update id claims it
  (`SET NX` with an expiry, so the dedupe window is bounded) and, in the same script,
  appends it to its chat's pending list and marks the chat as having work. A retry of the
  same update, on this replica or another, finds the claim and is dropped.
- **Leases** (`acquire`/`renew`/`release`): one holder per name (a chat, or the poller).
  A lease expires after its TTL unless renewed, so a replica that dies loses it and
  another takes over. Every lease carries a fencing number that grows with each
  acquisition: writes made under a lease (`done`, session saves) check that the lease is
  still the current one, so a replica that lost its lease (paused, partitioned) cannot
  overwrite what the new holder did.
- **Pending lists** (`pending`/`done`): a chat's messages wait in arrival order until the
  lease holder has answered them; `done` removes one only under the current lease, and in
  the same step writes who answered it into its claim (`claims` reads it back): a
  replica's reply to it goes out only once that is written, so a replica that takes a dead
  one's chat over never answers again what the dead one delivered.

Redis must keep what it acknowledged for the inbox to be durable across a Redis restart:
run it with `appendonly yes` (the compose file does).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, cast

import orjson
from redis.asyncio import Redis

from mnemobot.bot.delivery.journal import QueuedEntry

# A claim outlives any retry Telegram makes of one update (it stops after about a day).
CLAIM_TTL_SECONDS = 48 * 3600

_ACCEPT = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('RPUSH', KEYS[2], ARGV[3])
  redis.call('SADD', KEYS[3], ARGV[4])
  return 1
end
return 0
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

RELEASE_LEASE_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# Remove the first pending entry with this id, only while the caller holds the lease, and
# write who answered it into its claim; 2: it was removed before by this same answer.
_DONE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local items = redis.call('LRANGE', KEYS[2], 0, 50)
for _, item in ipairs(items) do
  if cjson.decode(item)['id'] == ARGV[2] then
    redis.call('LREM', KEYS[2], 1, item)
    if redis.call('LLEN', KEYS[2]) == 0 then
      redis.call('SREM', KEYS[3], ARGV[3])
    end
    redis.call('SET', KEYS[4], ARGV[4], 'EX', ARGV[5])
    return 1
  end
end
if redis.call('GET', KEYS[4]) == ARGV[4] then
  return 2
end
return 0
"""

# What a claim holds once its entry is answered: this, then the answer's name.
ANSWERED = "answered "

FENCED_SET_SCRIPT = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2])
return 1
"""


@dataclass(frozen=True, slots=True)
class Claim:
    """An accepted entry's claim: who answered it (the name its `done` wrote), None while
    it waits for its answer."""

    answer: str | None


class LeaseLost(RuntimeError):
    """A write under a lease that is no longer ours; the new holder's state wins."""


@dataclass(frozen=True, slots=True)
class Lease:
    name: str
    token: str
    fence: int
    ttl_ms: int


class RedisCoordination:
    """Claims, pending lists and leases of one bot's replicas, under one key namespace."""

    def __init__(self, client: Redis, *, namespace: str = "mnemobot") -> None:
        self.client = client
        self.namespace = namespace
        self._accept = client.register_script(_ACCEPT)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(RELEASE_LEASE_SCRIPT)
        self._done = client.register_script(_DONE)
        self._fenced_set = client.register_script(FENCED_SET_SCRIPT)

    def _key(self, *parts: str) -> str:
        return ":".join((self.namespace, *parts))

    # -- inbox ---------------------------------------------------------------------------------

    async def accept(
        self, entry: QueuedEntry, *, claim_ttl_seconds: int = CLAIM_TTL_SECONDS
    ) -> bool:
        """Claim `entry` and queue it for its chat; False when it was claimed before."""
        payload = orjson.dumps(entry.record()).decode()
        claimed = await self._accept(
            keys=[
                self._key("claim", entry.id),
                self._key("pending", entry.key),
                self._key("chats"),
            ],
            args=[entry.key, claim_ttl_seconds, payload, entry.key],
        )
        return bool(claimed)

    async def pending(self, key: str) -> list[QueuedEntry]:
        raw = await self.client.lrange(self._key("pending", key), 0, -1)
        entries = []
        for item in raw:
            record = orjson.loads(item)
            entries.append(
                QueuedEntry(
                    id=record["id"], key=record["key"], data=record["data"], at=record["at"]
                )
            )
        return entries

    async def keys_with_pending(self) -> list[str]:
        members = await self.client.smembers(self._key("chats"))
        return sorted(_text(m) for m in members)

    async def done(
        self,
        lease: Lease,
        entry: QueuedEntry,
        answer: str = "",
        *,
        claim_ttl_seconds: int = CLAIM_TTL_SECONDS,
    ) -> bool:
        """Drop an answered entry and write `answer` (the name of what answered it) into its
        claim; True when that is now written, by this call or an earlier one. Raises
        LeaseLost when the lease is no longer ours."""
        result = await self._done(
            keys=[
                self._key("lease", lease.name),
                self._key("pending", entry.key),
                self._key("chats"),
                self._key("claim", entry.id),
            ],
            args=[lease.token, entry.id, entry.key, ANSWERED + answer, claim_ttl_seconds],
        )
        if result == -1:
            raise LeaseLost(f"lease on {lease.name} lost before {entry.id} was marked done")
        return result in (1, 2)

    async def claims(self, entry_ids: list[str]) -> list[Claim | None]:
        """The claims of these entries (None for one that is gone: it expired)."""
        if not entry_ids:
            return []
        values = await self.client.mget([self._key("claim", i) for i in entry_ids])
        found: list[Claim | None] = []
        for value in values:
            text = None if value is None else _text(value)
            if text is None:
                found.append(None)
            elif text.startswith(ANSWERED):
                found.append(Claim(answer=text.removeprefix(ANSWERED)))
            else:
                found.append(Claim(answer=None))
        return found

    # -- leases --------------------------------------------------------------------------------

    async def acquire(self, name: str, ttl_ms: int) -> Lease | None:
        fence = int(await self.client.incr(self._key("fence", name)))
        token = f"{fence}:{secrets.token_hex(8)}"
        taken = await self.client.set(self._key("lease", name), token, nx=True, px=ttl_ms)
        return Lease(name, token, fence, ttl_ms) if taken else None

    async def renew(self, lease: Lease) -> bool:
        return bool(
            await self._renew(
                keys=[self._key("lease", lease.name)], args=[lease.token, lease.ttl_ms]
            )
        )

    async def release(self, lease: Lease) -> None:
        await self._release(keys=[self._key("lease", lease.name)], args=[lease.token])

    async def holder(self, name: str) -> str | None:
        value = await self.client.get(self._key("lease", name))
        return _text(value) if value is not None else None

    # -- fenced values (sessions) --------------------------------------------------------------

    async def fenced_set(self, lease: Lease, key: str, value: bytes) -> None:
        """Write `value` under `key` only while `lease` is current (else LeaseLost)."""
        ok = await self._fenced_set(
            keys=[self._key("lease", lease.name), self._key(key)], args=[lease.token, value]
        )
        if not ok:
            raise LeaseLost(f"lease on {lease.name} lost; not writing {key}")

    async def get(self, key: str) -> bytes | None:
        return cast("bytes | None", await self.client.get(self._key(key)))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
