"""A python-telegram-bot request backend on aiohttp, for the bot's outgoing calls.

PTB's default backend (httpx -> httpcore -> anyio -> h11) spends about 1-2 ms of CPU per
call in pure Python, and a reply costs two calls (typing action, sendMessage): with many
chats that was the largest share of the bot's CPU. aiohttp parses HTTP in C and keeps its
pool cheaply, so the same call costs a fraction. PTB supports other backends through
`BaseRequest`; this one keeps PTB's contract: `(status, body)` back, timeouts as
`TimedOut`, every transport failure as `NetworkError`, so retries and error handling above
it are unchanged.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

_DEFAULT = BaseRequest.DEFAULT_NONE


def _given(value: object, fallback: float | None) -> float | None:
    return fallback if value is _DEFAULT else value  # type: ignore[return-value]


class AiohttpRequest(BaseRequest):
    """`BaseRequest` on one `aiohttp.ClientSession` with a bounded connection pool."""

    __slots__ = (
        "_connect_timeout",
        "_media_write_timeout",
        "_pool_size",
        "_pool_timeout",
        "_read_timeout",
        "_session",
        "_write_timeout",
    )

    def __init__(
        self,
        *,
        connection_pool_size: int = 32,
        read_timeout: float | None = 5.0,
        write_timeout: float | None = 5.0,
        connect_timeout: float | None = 5.0,
        pool_timeout: float | None = 1.0,
        media_write_timeout: float | None = 20.0,
    ) -> None:
        self._pool_size = connection_pool_size
        self._read_timeout = read_timeout
        self._write_timeout = write_timeout
        self._connect_timeout = connect_timeout
        self._pool_timeout = pool_timeout
        self._media_write_timeout = media_write_timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def read_timeout(self) -> float | None:
        return self._read_timeout

    async def initialize(self) -> None:
        if self._session is None or self._session.closed:
            # The session must be made inside the running loop; PTB calls this from there.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._pool_size),
                headers={"User-Agent": self.USER_AGENT},
                # HTTP(S)_PROXY and NO_PROXY, as PTB's own httpx requests and the LLM client
                # honour them: behind a proxy, every Bot API call must take the same road.
                trust_env=True,
            )

    async def shutdown(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = _DEFAULT,
        write_timeout: Any = _DEFAULT,
        connect_timeout: Any = _DEFAULT,
        pool_timeout: Any = _DEFAULT,
    ) -> tuple[int, bytes]:
        session = self._session
        if session is None or session.closed:
            raise RuntimeError("This AiohttpRequest is not initialized!")
        has_files = request_data is not None and request_data.contains_files
        read = _given(read_timeout, self._read_timeout)
        default_write = self._media_write_timeout if has_files else self._write_timeout
        write = _given(write_timeout, default_write)
        connect = _given(connect_timeout, self._connect_timeout)
        pool = _given(pool_timeout, self._pool_timeout)
        # aiohttp has no separate write timeout: the send is bounded by read + write, the
        # time the whole exchange may take once connected.
        total = None if read is None or write is None else read + write
        timeout = aiohttp.ClientTimeout(
            total=None,
            # aiohttp's `connect` covers waiting for a pooled connection (PTB's pool timeout).
            connect=pool,
            sock_connect=connect,
            sock_read=total,
        )
        body: Any = None
        if request_data is not None:
            body = _form(request_data) if has_files else request_data.json_parameters
        try:
            async with session.request(method, url, data=body, timeout=timeout) as response:
                return response.status, await response.read()
        except TimeoutError as error:
            raise TimedOut from error
        except aiohttp.ClientError as error:
            raise NetworkError(f"aiohttp.{type(error).__name__}: {error}") from error


def _form(request_data: RequestData) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, value in request_data.json_parameters.items():
        form.add_field(name, value)
    for name, part in request_data.multipart_data.items():
        if isinstance(part, tuple):
            filename, content, mime_type = part[0], part[1], part[2] if len(part) > 2 else None
            form.add_field(name, content, filename=filename, content_type=mime_type)
        else:
            form.add_field(name, part)
    return form
