"""The webhook endpoint refuses what is not Telegram's before reading it, and keeps the rest."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from mnemobot_tooling.redis_server import free_port

SECRET = "s3cret-token"

_SERVER = """
import asyncio, sys
from mnemobot.bot.channels.telegram.webhook_server import start_webhook_server, webhook_application

async def accept(update):
    if update.get("fail"):
        raise OSError("disk full")
    print("kept", update["update_id"], flush=True)

async def main():
    app = webhook_application("telegram", sys.argv[2], accept)
    await start_webhook_server(app, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(port), SECRET],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    yield process, f"http://127.0.0.1:{port}/telegram"
    process.kill()
    process.wait()


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


async def big_body(megabytes: int) -> AsyncIterator[bytes]:
    chunk = b"x" * (1 << 20)
    for _ in range(megabytes):
        yield chunk


async def test_large_unauthenticated_bodies_do_not_grow_the_process(
    server: tuple[subprocess.Popen[str], str],
) -> None:
    process, url = server
    before = peak_rss_mb(process.pid)

    async def post(session: aiohttp.ClientSession) -> int:
        try:
            async with session.post(url, data=big_body(60)) as response:
                return response.status
        except (aiohttp.ClientError, ConnectionError):
            return 403  # the server may close on us mid-upload after answering

    async with aiohttp.ClientSession() as session:
        statuses = await asyncio.gather(*(post(session) for _ in range(6)))
        async with session.post(
            url, data=big_body(5), headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}
        ) as response:
            assert response.status == 413
    assert statuses == [403] * 6
    assert peak_rss_mb(process.pid) - before < 20


async def test_bad_bodies_get_400_and_a_kept_update_gets_200(
    server: tuple[subprocess.Popen[str], str],
) -> None:
    process, url = server
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    async with aiohttp.ClientSession() as session:
        for body in (b"", b"{not json", b"[1, 2]"):
            async with session.post(url, data=body, headers=headers) as response:
                assert response.status == 400, body
        async with session.post(url, json={"update_id": 5, "fail": True}, headers=headers) as r:
            assert r.status == 500  # not kept: Telegram retries it
        async with session.post(url, json={"update_id": 6}, headers=headers) as response:
            assert response.status == 200
        async with session.post(url, json={"update_id": 7}) as response:
            assert response.status == 403
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "kept 6"
