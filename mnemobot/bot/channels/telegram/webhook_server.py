"""The webhook endpoint: checks the secret first, reads bounded bodies, answers 200 when kept.

Telegram posts each update as a small JSON object and retries until it gets a 200. So:

1. The `X-Telegram-Bot-Api-Secret-Token` header is checked before a byte of the body is
   read: an unauthenticated request costs no memory, whatever it claims to carry (403).
2. A body over `max_body_bytes` is refused (413) without buffering it: Telegram's updates
   are a few kilobytes.
3. An empty body or one that is not a JSON object is a 400: the sender's mistake.
4. Only after `accept` returns (the update is kept durably) does Telegram get its 200;
   if keeping it fails, a 500 makes Telegram retry later, so nothing is lost.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from mnemobot.bot.delivery.redis_ingress import InboxUnavailable

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Telegram's updates are small; a megabyte leaves room for the longest text with entities.
MAX_BODY_BYTES = 1 << 20

AcceptUpdate = Callable[[dict[str, Any]], Awaitable[None]]


def webhook_application(
    path: str, secret: str, accept: AcceptUpdate, *, max_body_bytes: int = MAX_BODY_BYTES
) -> web.Application:
    """An aiohttp application serving Telegram's webhook posts on `/path`."""
    expected = secret.encode()

    async def receive(request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, expected):
            return web.Response(status=403, text="wrong or missing secret token\n")
        length = request.content_length
        if length is not None and length > max_body_bytes:
            return web.Response(status=413, text="update too large\n")
        body = await read_bounded(request, max_body_bytes)
        if body is None:
            return web.Response(status=413, text="update too large\n")
        if not body.strip():
            return web.Response(status=400, text="empty body: expected a JSON update\n")
        try:
            update = orjson.loads(body)
        except orjson.JSONDecodeError:
            return web.Response(status=400, text="body is not valid JSON\n")
        if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
            return web.Response(status=400, text="body is not a Telegram update\n")
        try:
            await accept(update)
        except InboxUnavailable:
            # Said once per outage where it is detected; Telegram retries this one.
            return web.Response(status=500, text="try again later\n")
        except Exception:
            log.exception("could not keep update %s; Telegram will retry", update.get("update_id"))
            return web.Response(status=500, text="try again later\n")
        return web.Response(status=200, text="ok\n")

    # client_max_size bounds any body aiohttp itself would read; ours reads at most the limit.
    application = web.Application(client_max_size=max_body_bytes)
    application.router.add_post("/" + path.strip("/"), receive)
    return application


async def read_bounded(request: web.Request, limit: int) -> bytes | None:
    """The body, or None as soon as it grows past `limit` (the rest is never buffered)."""
    parts: list[bytes] = []
    size = 0
    while chunk := await request.content.read(64 * 1024):
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


async def start_webhook_server(application: web.Application, host: str, port: int) -> web.AppRunner:
    """Listen on host:port; stop with `await runner.cleanup()`."""
    runner = web.AppRunner(application, access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
