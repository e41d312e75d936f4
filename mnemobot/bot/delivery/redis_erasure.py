"""Forgotten texts erased from what replicas keep in Redis: sessions, and the append-only file.

The erasure of forgotten texts runs in a worker thread (`memory.upkeep.text_holders`); it
reaches Redis through a blocking client of its own. A chat's session is redacted while the
erasure holds the chat's lease, the one a replica holds for as long as it answers the chat:
so no turn runs meanwhile, on this replica or another, and a turn that was running has
saved its session (its reply included) before the redaction reads it. The write is fenced
like any session save. A replica that cached the session before sees the value changed
and reads it again before its next turn (`conversation.redis_sessions`).

Redis keeps the old values in its append-only file until it rewrites it: once texts are
erased, the erasure asks for that rewrite (BGREWRITEAOF), when the append-only file is on.
Its RDB snapshots, its own replicas and the operator's backups are not reached from here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import orjson
from redis.exceptions import RedisError

from mnemobot.bot.delivery.redis_coordination import FENCED_SET_SCRIPT, RELEASE_LEASE_SCRIPT
from mnemobot.bot.delivery.replicas import Replicas, lease_name_of_session
from mnemobot.memory.store.scope_paths import GLOBAL_SCOPE
from mnemobot.memory.upkeep.text_holders import Redact

log = logging.getLogger(__name__)

# The erasure's hold on a chat outlives the redaction of one session (milliseconds) by far,
# and keeps a chat waiting no longer than this if the process dies holding it.
HOLD_MS = 30_000
# How often a chat whose lease a turn holds is looked at again.
HOLD_RETRY_SECONDS = 0.1
AOF_REWRITE_ASKED = "Redis asked to rewrite its append-only file"


class RedisSessionHolds:
    """`SessionHolds` of replicas: chats held by their lease, sessions redacted in Redis."""

    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas
        self.namespace = replicas.coordination.namespace
        self._held: dict[str, str] = {}

    def _key(self, *parts: str) -> str:
        return ":".join((self.namespace, *parts))

    def stored_keys(self, scope: str) -> list[str]:
        client = self.replicas.blocking_client()
        prefix = self._key("session", "")
        # Session keys hold no glob characters (`check_session_key`).
        patterns = (
            [prefix + "*"] if scope == GLOBAL_SCOPE else [prefix + scope, f"{prefix}{scope}:*"]
        )
        found: set[str] = set()
        for pattern in patterns:
            for name in client.scan_iter(match=pattern, count=500):
                text = name.decode() if isinstance(name, bytes) else str(name)
                found.add(text.removeprefix(prefix))
        return sorted(found)

    @contextlib.contextmanager
    def hold(self, sessions_dir: Path, key: str, wait_seconds: float) -> Iterator[bool]:
        client = self.replicas.blocking_client()
        name = lease_name_of_session(key)
        lease_key = self._key("lease", name)
        deadline = time.monotonic() + wait_seconds
        token = None
        while True:
            if not client.exists(lease_key):
                # A token like the leases replicas take (fence:random): writes fenced by
                # the lease held before this one are refused from now on.
                fence = int(client.incr(self._key("fence", name)))
                candidate = f"{fence}:{secrets.token_hex(8)}"
                if client.set(lease_key, candidate, nx=True, px=HOLD_MS):
                    token = candidate
                    break
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(HOLD_RETRY_SECONDS)
        self._held[key] = token
        try:
            yield True
        finally:
            del self._held[key]
            with contextlib.suppress(RedisError):
                client.eval(RELEASE_LEASE_SCRIPT, 1, lease_key, token)

    def redact_stored(self, key: str, redact: Redact) -> int:
        client = self.replicas.blocking_client()
        value_key = self._key("session", key)
        data = client.get(value_key)
        if data is None:
            return 0
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError:
            return 0  # unreadable: the next turn starts the chat afresh anyway
        redacted, changed = redact(document)
        if not changed:
            return 0
        lease_key = self._key("lease", lease_name_of_session(key))
        written = client.eval(
            FENCED_SET_SCRIPT,
            2,
            lease_key,
            value_key,
            self._held[key],
            orjson.dumps(redacted, option=orjson.OPT_INDENT_2),
        )
        if not written:
            raise RedisError(f"the hold on {key} ran out before its session was redacted")
        return int(changed)

    def after_erasure(self) -> str | None:
        return rewrite_append_only_file(self.replicas)


def rewrite_append_only_file(replicas: Replicas) -> str | None:
    """Ask Redis to rewrite its append-only file (what was erased or redacted goes from
    it); a line saying so, or why not; None when Redis keeps no such file."""
    client = replicas.blocking_client()
    try:
        info = client.info("persistence")
        if not info.get("aof_enabled"):
            return None
        client.bgrewriteaof()
    except RedisError as exc:
        # A managed Redis may refuse the command, or one rewrite may be running already.
        log.warning("could not ask Redis to rewrite its append-only file: %s", exc)
        return f"Redis did not rewrite its append-only file now ({exc})"
    return AOF_REWRITE_ASKED


def append_only_rewrite_step(
    replicas: Replicas, flush: Callable[[], Awaitable[None]]
) -> Callable[[object], Awaitable[list[str]]]:
    """An erase step of /forget_me: once the chat's session in Redis is emptied (`flush`
    waits for that write), Redis is asked to rewrite its append-only file."""

    async def rewrite(target: object) -> list[str]:
        await flush()
        done = await asyncio.to_thread(rewrite_append_only_file, replicas)
        return [done] if done else []

    return rewrite
