"""A forward HTTP proxy on 127.0.0.1 that records every request it relays.

Clients configured with HTTP_PROXY send absolute-form requests (`POST http://host:port/path`);
the proxy forwards each one on a fresh upstream connection and answers with the upstream's
response, then closes the client connection (clients simply reconnect). Plain HTTP only:
enough for the fake Bot API and LLM servers, which speak http on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from urllib.parse import urlsplit


class LoggingProxy:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (method, absolute URL)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.port = 0

    def paths(self) -> list[str]:
        with self._lock:
            return [urlsplit(url).path for _method, url in self.requests]

    def __enter__(self) -> LoggingProxy:
        self._thread = threading.Thread(target=self._run, daemon=True, name="logging-proxy")
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None:
            loop = self._loop

            def stop() -> None:
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                loop.call_soon(loop.stop)

            loop.call_soon_threadsafe(stop)
        if self._thread is not None:
            self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        server = loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        loop.run_forever()
        server.close()
        loop.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            headers = [line for line in lines[1:] if line]
            length = 0
            for header in headers:
                name, _, value = header.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            with self._lock:
                self.requests.append((method, target))
            parts = urlsplit(target)
            upstream_reader, upstream_writer = await asyncio.open_connection(
                parts.hostname, parts.port or 80
            )
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            kept = [
                h
                for h in headers
                if h.split(":", 1)[0].strip().lower()
                not in ("connection", "proxy-connection", "keep-alive")
            ]
            request = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"])
            upstream_writer.write(request.encode("latin-1") + b"\r\n\r\n" + body)
            await upstream_writer.drain()
            response = await upstream_reader.read()
            upstream_writer.close()
            head_end = response.find(b"\r\n\r\n")
            status_and_headers = response[:head_end].split(b"\r\n")
            relayed = [
                h
                for h in status_and_headers
                if not h.lower().startswith((b"connection:", b"keep-alive:"))
            ]
            writer.write(b"\r\n".join([*relayed, b"Connection: close"]) + response[head_end:])
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()
