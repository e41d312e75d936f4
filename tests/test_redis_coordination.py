"""Claims, pending lists and fenced leases against a real Redis server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from mnemobot.bot.delivery.journal import QueuedEntry
from mnemobot.bot.delivery.redis_coordination import LeaseLost, RedisCoordination
from mnemobot_tooling.redis_server import running_redis


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_redis(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
async def coordination(
    redis_url: str, request: pytest.FixtureRequest
) -> AsyncIterator[RedisCoordination]:
    client = Redis.from_url(redis_url)
    yield RedisCoordination(client, namespace=f"t{abs(hash(request.node.name))}")
    await client.aclose()


def entry(n: int, key: str = "telegram:1") -> QueuedEntry:
    return QueuedEntry(id=f"u:{n}", key=key, data={"text": f"m{n}"}, at=float(n))


async def test_an_update_is_claimed_once_across_replicas(redis_url: str) -> None:
    clients = [Redis.from_url(redis_url) for _ in range(3)]
    replicas = [RedisCoordination(c, namespace="claims") for c in clients]
    results = await asyncio.gather(*(r.accept(entry(1)) for r in replicas))
    assert sorted(results) == [False, False, True]
    assert [e.id for e in await replicas[0].pending("telegram:1")] == ["u:1"]
    for client in clients:
        await client.aclose()


async def test_pending_keeps_arrival_order_and_done_needs_the_lease(
    coordination: RedisCoordination,
) -> None:
    for n in range(3):
        assert await coordination.accept(entry(n))
    assert await coordination.keys_with_pending() == ["telegram:1"]
    lease = await coordination.acquire("telegram:1", ttl_ms=5_000)
    assert lease is not None
    assert await coordination.acquire("telegram:1", ttl_ms=5_000) is None
    first = (await coordination.pending("telegram:1"))[0]
    assert first.id == "u:0" and first.data == {"text": "m0"}
    assert await coordination.done(lease, first)
    await coordination.release(lease)
    with pytest.raises(LeaseLost):
        await coordination.done(lease, entry(1))
    assert [e.id for e in await coordination.pending("telegram:1")] == ["u:1", "u:2"]


async def test_an_expired_lease_passes_on_and_fences_the_old_holder(
    coordination: RedisCoordination,
) -> None:
    await coordination.accept(entry(1))
    old = await coordination.acquire("telegram:1", ttl_ms=100)
    assert old is not None
    await asyncio.sleep(0.25)
    new = await coordination.acquire("telegram:1", ttl_ms=5_000)
    assert new is not None and new.fence > old.fence
    assert not await coordination.renew(old)
    with pytest.raises(LeaseLost):
        await coordination.fenced_set(old, "session:telegram:1", b"stale")
    await coordination.fenced_set(new, "session:telegram:1", b"fresh")
    assert await coordination.get("session:telegram:1") == b"fresh"
    assert await coordination.done(new, entry(1))
    assert await coordination.keys_with_pending() == []


async def test_claims_and_pending_survive_a_redis_restart(tmp_path: Path) -> None:
    from mnemobot_tooling.redis_server import free_port

    port = free_port()
    with running_redis(tmp_path / "r", port=port) as url:
        client = Redis.from_url(url)
        await RedisCoordination(client).accept(entry(9))
        await client.aclose()
    with running_redis(tmp_path / "r", port=port) as url:
        client = Redis.from_url(url)
        coordination = RedisCoordination(client)
        assert not await coordination.accept(entry(9))
        assert [e.id for e in await coordination.pending("telegram:1")] == ["u:9"]
        await client.aclose()
