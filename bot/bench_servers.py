"""Minimal Bot API + OpenAI-compatible servers for `mnemobot bench telegram`.

The test fakes (tests/fakes) are thorough but not shipped with the package and run one
thread per request; the bench needs something small, fast and installable. Both servers run
on one asyncio loop in a child process, so the bot under test has the main process to
itself and the numbers are the bot's, not the fakes'. The child also drives the load: each
simulated chat sends its next message when the reply to the previous one arrives (a closed
loop, like people waiting for answers), and it timestamps both ends itself.

Protocol with the parent over a multiprocessing Pipe: child sends `(bot_api_base_url,
llm_base_url)`; parent sends `"go"` once the bot polls; child sends a `BenchResult`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import parse_qsl, urlsplit

BENCH_TOKEN = "123456:BENCH-TOKEN"
BENCH_BOT = {
    "id": 123456,
    "is_bot": True,
    "first_name": "Bench Bot",
    "username": "mnemo_bench_bot",
    "can_join_groups": True,
    "can_read_all_group_messages": False,
    "supports_inline_queries": False,
}
# Markdown with a little of everything the reply path renders.
BENCH_REPLY = (
    "Here is what I remember about **that**:\n\n"
    "- the first point, with `code`\n- the second point\n\nAnything else?"
)
_MARKER = re.compile(rb"bench c(\d+) m(\d+)")

Route = Callable[[str, str, bytes], Awaitable[tuple[int, Any]]]


@dataclass
class BenchResult:
    replies: int
    seconds: float
    # Per reply: from the update being available to the bot until its sendMessage arrived,
    # minus the time the LLM server spent on that turn's completion.
    added_latency_ms: list[float] = field(default_factory=list)
    llm_requests: int = 0
    unmatched_replies: int = 0


class _LoadState:
    def __init__(self, chats: int, messages: int) -> None:
        self.chats = chats
        self.messages = messages
        self.updates: list[dict[str, Any]] = []
        self.next_update_id = 1
        self.next_message_id = 1
        self.new_update = asyncio.Event()
        self.pushed_at: dict[int, float] = {}
        self.sent_count: dict[int, int] = {}
        self.llm_seconds: dict[int, float] = {}
        self.latencies: list[float] = []
        self.llm_requests = 0
        self.unmatched = 0
        self.started_at = 0.0
        self.finished_at = 0.0
        self.done = asyncio.Event()

    def chat_id(self, index: int) -> int:
        return 10_000 + index

    def push(self, chat: int) -> None:
        number = self.sent_count.get(chat, 0) + 1
        self.sent_count[chat] = number
        user = {"id": chat, "is_bot": False, "first_name": "Bench"}
        message = {
            "message_id": self.next_message_id,
            "from": user,
            "chat": {"id": chat, "type": "private", "first_name": "Bench"},
            "date": int(time.time()),
            "text": f"bench c{chat} m{number}: what do you remember about the plan?",
        }
        self.next_message_id += 1
        self.updates.append({"update_id": self.next_update_id, "message": message})
        self.next_update_id += 1
        self.pushed_at[chat] = time.perf_counter()
        self.new_update.set()

    def start(self) -> None:
        self.started_at = time.perf_counter()
        for index in range(self.chats):
            self.push(self.chat_id(index))

    def replied(self, chat: int) -> None:
        pushed = self.pushed_at.pop(chat, None)
        if pushed is None:
            self.unmatched += 1
            return
        now = time.perf_counter()
        llm = self.llm_seconds.pop(chat, 0.0)
        self.latencies.append((now - pushed - llm) * 1000)
        if self.sent_count[chat] < self.messages:
            self.push(chat)
        elif len(self.latencies) >= self.chats * self.messages:
            self.finished_at = now
            self.done.set()


async def _serve_http(
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
    finally:
        with contextlib.suppress(Exception):
            writer.close()


def _bot_api(state: _LoadState) -> Route:
    async def route(method: str, target: str, body: bytes) -> tuple[int, Any]:
        name = urlsplit(target).path.rsplit("/", 1)[-1].lower()
        params = dict(parse_qsl(body.decode("utf-8"))) if body else {}
        if name == "getme":
            return 200, {"ok": True, "result": BENCH_BOT}
        if name == "getupdates":
            offset = int(params.get("offset") or 0)
            if offset:
                state.updates = [u for u in state.updates if u["update_id"] >= offset]
            if not state.updates:
                state.new_update.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        state.new_update.wait(), float(params.get("timeout") or 0)
                    )
            return 200, {"ok": True, "result": state.updates[:100]}
        if name == "sendmessage":
            chat = int(params["chat_id"])
            state.replied(chat)
            message = {
                "message_id": 1,
                "from": {k: BENCH_BOT[k] for k in ("id", "is_bot", "first_name", "username")},
                "chat": {"id": chat, "type": "private", "first_name": "Bench"},
                "date": int(time.time()),
                "text": params.get("text", ""),
            }
            return 200, {"ok": True, "result": message}
        # setMyCommands, deleteWebhook, sendChatAction...: accepted, nothing to model.
        return 200, {"ok": True, "result": True}

    return route


def _llm_api(state: _LoadState) -> Route:
    async def route(method: str, target: str, body: bytes) -> tuple[int, Any]:
        started = time.perf_counter()
        if method == "GET":
            return 200, {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}
        state.llm_requests += 1
        request = json.loads(body)
        markers = _MARKER.findall(body)
        completion = {
            "id": f"chatcmpl-bench-{state.llm_requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": BENCH_REPLY, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(body) // 4,
                "completion_tokens": 30,
                "total_tokens": len(body) // 4 + 30,
            },
        }
        if markers:
            chat = int(markers[-1][0])
            elapsed = time.perf_counter() - started
            state.llm_seconds[chat] = state.llm_seconds.get(chat, 0.0) + elapsed
        return 200, completion

    return route


async def _serve(conn: Connection, chats: int, messages: int) -> None:
    state = _LoadState(chats, messages)
    bot_server = await asyncio.start_server(
        lambda r, w: _serve_http(r, w, _bot_api(state)), "127.0.0.1", 0
    )
    llm_server = await asyncio.start_server(
        lambda r, w: _serve_http(r, w, _llm_api(state)), "127.0.0.1", 0
    )
    bot_port = bot_server.sockets[0].getsockname()[1]
    llm_port = llm_server.sockets[0].getsockname()[1]
    conn.send((f"http://127.0.0.1:{bot_port}/bot", f"http://127.0.0.1:{llm_port}/v1"))
    command = await asyncio.to_thread(conn.recv)
    if command != "go":
        return
    state.start()
    await state.done.wait()
    conn.send(
        BenchResult(
            replies=len(state.latencies),
            seconds=state.finished_at - state.started_at,
            added_latency_ms=state.latencies,
            llm_requests=state.llm_requests,
            unmatched_replies=state.unmatched,
        )
    )
    # Keep answering (the bot's final getUpdates, shutdown calls) until told to stop.
    await asyncio.to_thread(conn.recv)
    bot_server.close()
    llm_server.close()


def serve_bench_servers(conn: Connection, chats: int, messages: int) -> None:
    """Entry point of the child process."""
    with contextlib.suppress(KeyboardInterrupt, EOFError):
        asyncio.run(_serve(conn, chats, messages))
