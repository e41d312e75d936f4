"""Just enough HTTP/1.1 for the bench's fake servers: keep-alive, Content-Length bodies,
JSON answers, on one asyncio loop with no framework in the way of the figures."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

# (method, target, body) -> (status, JSON payload)
Route = Callable[[str, str, bytes], Awaitable[tuple[int, Any]]]


async def serve_http(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, route: Route
) -> None:
    try:
        while True:
            request_line = await reader.readline()
            if not request_line:
                return
            method, target, _ = request_line.decode("latin-1").split(" ", 2)
            length = 0
            while True:
                header = await reader.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            status, payload = await route(method, target, body)
            data = json.dumps(payload).encode()
            writer.write(
                f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        return
    except asyncio.CancelledError:
        # The child is shutting down with a long poll still open; nobody awaits this task.
        return
    finally:
        with contextlib.suppress(Exception):
            writer.close()
