"""Telegram's side of a webhook for the bench, with a load balancer in front of the
replicas: each update is POSTed to a replica picked at random, and again, to the next one,
until one answers 200, as Telegram retries an update it did not see acknowledged.

At random (seeded), not strictly in turn: a load balancer knows nothing of chats, and
strict turns over messages that themselves go round the chats would pin every chat to one
replica whenever the replica count divides the chat count, hiding the hand-overs between
replicas that a real deployment has.

One chat's updates go out one at a time, each once the previous one was taken: Telegram
keeps a chat's updates in order, and the replicas' per-chat order rests on it. Different
chats' updates go out concurrently, as over Telegram's several webhook connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Callable
from typing import Any

import aiohttp

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# A replica that refused (500 while Redis is away) or is not listening yet gets a moment
# before the next try; Telegram waits far longer, but the bench wants the figure, not a nap.
RETRY_PAUSE_SECONDS = 0.05
POST_TIMEOUT_SECONDS = 30.0
SEED = 7


class WebhookSender:
    """POSTs updates to `urls`, any of them; calls `on_handed` at an update's first attempt and
    `on_taken` with the seconds from there to its 200."""

    def __init__(
        self,
        urls: tuple[str, ...],
        secret: str,
        on_handed: Callable[[int], None],
        on_taken: Callable[[int, float], None],
    ) -> None:
        self.urls = urls
        self._random = random.Random(SEED)
        self._headers = {SECRET_HEADER: secret, "Content-Type": "application/json"}
        self._on_handed = on_handed
        self._on_taken = on_taken
        self._queues: dict[int, asyncio.Queue[dict[str, Any]]] = {}
        self._senders: list[asyncio.Task[None]] = []
        self._session: aiohttp.ClientSession | None = None
        self.retries = 0

    def send(self, chat: int, update: dict[str, Any]) -> None:
        queue = self._queues.get(chat)
        if queue is None:
            queue = self._queues[chat] = asyncio.Queue()
            self._senders.append(asyncio.create_task(self._send_chat(queue)))
        queue.put_nowait(update)

    async def _send_chat(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        while True:
            await self._post_until_taken(await queue.get())

    async def _post_until_taken(self, update: dict[str, Any]) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=POST_TIMEOUT_SECONDS),
            )
        body = json.dumps(update).encode()
        update_id = int(update["update_id"])
        self._on_handed(update_id)
        started = time.perf_counter()
        replica = self._random.randrange(len(self.urls))
        while True:
            try:
                async with self._session.post(
                    self.urls[replica], data=body, headers=self._headers
                ) as response:
                    await response.read()
                    if response.status == 200:
                        self._on_taken(update_id, time.perf_counter() - started)
                        return
            except (aiohttp.ClientError, OSError, TimeoutError):
                pass
            self.retries += 1
            replica = (replica + 1) % len(self.urls)
            await asyncio.sleep(RETRY_PAUSE_SECONDS)

    async def close(self) -> None:
        for task in self._senders:
            task.cancel()
        for task in self._senders:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._session is not None:
            await self._session.close()
