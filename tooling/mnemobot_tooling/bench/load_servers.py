"""Minimal Bot API + OpenAI-compatible servers for `mnemobot bench telegram`.

The test kit's fakes (`mnemobot_tooling.fakes`) are thorough but run one thread per
request, which a throughput bench would measure too; this one needs something small and
fast. Both servers run
on one asyncio loop in a child process, so the bot under test has the main process to
itself and the numbers are the bot's, not the fakes'. The child also drives the load and
timestamps every message itself:

- open loop (`LoadPlan(mode="open")`): messages arrive at a fixed rate, round-robin over the
  chats, whatever the bot does; this is how real users behave and the only way to see the
  latency the bot adds rather than the queue the load generator builds;
- closed loop (`mode="closed"`): each chat sends its next message when the reply to the
  previous one arrives; the replies per second it reaches is the bot's max sustainable rate.

Updates reach the bot through getUpdates, or, when the plan names webhook URLs, as webhook
POSTs spread over them (`webhook_sender`): the replicas bench.

Every message carries a marker `u<update_id>`; the fake LLM repeats the markers of the last
user message in its answer, so each sendMessage is matched to the updates it answers (also
when the lane merged several waiting messages into one turn).

Protocol with the parent over a multiprocessing Pipe: child sends `(bot_api_base_url,
llm_base_url)`; parent sends a `LoadPlan` per phase and gets a `BenchResult` back for each;
parent sends `None` to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from mnemobot_tooling.bench.http_server import Route, serve_http
from mnemobot_tooling.bench.webhook_sender import WebhookSender

BENCH_TOKEN = "123456:BENCH-TOKEN"
BENCH_WEBHOOK_SECRET = "bench-webhook-secret"
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
_MARKER = re.compile(r"\bu(\d+)\b")
# Replies still missing this long after the last message went out are counted as lost.
DRAIN_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class LoadPlan:
    mode: Literal["open", "closed"]
    chats: int
    seconds: float
    # Messages per second over all chats (open loop only).
    rate: float = 0.0
    # Chat ids start here, so the phases of one run use chats of their own.
    first_chat_id: int = 10_000
    # Time the fake LLM waits before answering; subtracted from the bot's latency.
    llm_delay_seconds: float = 0.0
    # Empty: the bot polls getUpdates. Else updates are POSTed to these (any one of them).
    webhook_urls: tuple[str, ...] = ()


@dataclass
class BenchResult:
    plan: LoadPlan
    messages_sent: int
    replies: int
    # Replies (answered messages) whose sendMessage arrived inside the load window.
    replies_in_window: int
    window_seconds: float
    # From the first message to the last reply.
    seconds_to_last_reply: float
    # Per answered message: update handed to the bot (getUpdates answered, or its first
    # webhook POST) -> its sendMessage arrived, minus the fake LLM's own time for that turn.
    # This is the latency the bot adds.
    added_latency_ms: list[float] = field(default_factory=list)
    # Per answered message: message created -> handed to the bot (the bot polls late when
    # its loop is busy, so this is the bot's too, but it is not in added_latency_ms).
    poll_wait_ms: list[float] = field(default_factory=list)
    llm_requests: int = 0
    unanswered: int = 0
    unmatched_replies: int = 0
    # Messages answered again after their first reply.
    duplicates: int = 0
    # Replies answering a message older than one its chat already had answered.
    out_of_order: int = 0
    # Webhook mode: first POST of an update -> its 200, and POSTs that were not a 200.
    webhook_taken_ms: list[float] = field(default_factory=list)
    webhook_retries: int = 0
    # Scheduled reminders ("⏰ ..." messages, which answer no update): (chat, epoch seconds
    # the sendMessage arrived), for `bench schedule`.
    reminders: list[tuple[int, float]] = field(default_factory=list)


@dataclass(slots=True)
class _Pending:
    chat: int
    pushed_at: float
    handed_at: float | None = None
    llm_seconds: float = 0.0


class _LoadState:
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.next_update_id = 1
        self.next_message_id = 1
        self.new_update = asyncio.Event()
        self.sent_count: dict[int, int] = {}
        self.llm_requests = 0
        self.answered: set[int] = set()
        self.newest_answered: dict[int, int] = {}
        self.sender: WebhookSender | None = None
        self.reset(None)

    def reset(self, plan: LoadPlan | None) -> None:
        self.plan = plan
        self.pending: dict[int, _Pending] = {}
        self.latencies: list[float] = []
        self.poll_waits: list[float] = []
        self.unmatched = 0
        self.duplicates = 0
        self.out_of_order = 0
        self.taken_ms: list[float] = []
        self.reminders: list[tuple[int, float]] = []
        self.retries_at_start = self.sender.retries if self.sender is not None else 0
        self.sent = 0
        self.in_window = 0
        self.started_at = 0.0
        self.window_ends_at = float("inf")
        self.last_reply_at = 0.0
        self.accepting = True
        self.all_answered = asyncio.Event()
        self.llm_requests_at_start = self.llm_requests

    def push(self, chat: int) -> None:
        number = self.sent_count.get(chat, 0) + 1
        self.sent_count[chat] = number
        update_id = self.next_update_id
        self.next_update_id += 1
        user = {"id": chat, "is_bot": False, "first_name": "Bench"}
        message = {
            "message_id": self.next_message_id,
            "from": user,
            "chat": {"id": chat, "type": "private", "first_name": "Bench"},
            "date": int(time.time()),
            "text": f"bench c{chat} m{number} u{update_id}: what do you remember about the plan?",
        }
        self.next_message_id += 1
        self.pending[update_id] = _Pending(chat=chat, pushed_at=time.perf_counter())
        self.sent += 1
        if self.sender is not None:
            self.sender.send(chat, {"update_id": update_id, "message": message})
            return
        self.updates.append({"update_id": update_id, "message": message})
        self.new_update.set()

    def posted(self, update_id: int) -> None:
        pending = self.pending.get(update_id)
        if pending is not None and pending.handed_at is None:
            pending.handed_at = time.perf_counter()

    def taken(self, update_id: int, seconds: float) -> None:
        self.taken_ms.append(seconds * 1000)

    def handed(self, updates: list[dict[str, Any]]) -> None:
        now = time.perf_counter()
        for update in updates:
            pending = self.pending.get(update["update_id"])
            if pending is not None and pending.handed_at is None:
                pending.handed_at = now

    def llm_time(self, update_ids: list[int], seconds: float) -> None:
        for update_id in update_ids:
            pending = self.pending.get(update_id)
            if pending is not None:
                pending.llm_seconds += seconds

    def replied(self, chat: int, text: str) -> None:
        now = time.perf_counter()
        answered = [int(m) for m in _MARKER.findall(text)]
        matched = False
        for update_id in answered:
            if update_id in self.answered:
                self.duplicates += 1
                matched = True
                continue
            pending = self.pending.pop(update_id, None)
            if pending is None or pending.chat != chat:
                continue
            matched = True
            self.answered.add(update_id)
            if update_id < self.newest_answered.get(chat, 0):
                self.out_of_order += 1
            self.newest_answered[chat] = max(update_id, self.newest_answered.get(chat, 0))
            handed = pending.handed_at if pending.handed_at is not None else pending.pushed_at
            self.latencies.append((now - handed - pending.llm_seconds) * 1000)
            self.poll_waits.append((handed - pending.pushed_at) * 1000)
            if now <= self.window_ends_at:
                self.in_window += 1
            self.last_reply_at = now
        if not matched:
            if text.startswith("⏰"):
                self.reminders.append((chat, time.time()))
                return
            self.unmatched += 1
            return
        plan = self.plan
        if plan is not None and plan.mode == "closed" and self.accepting:
            self.push(chat)
        if not self.accepting and not self.pending:
            self.all_answered.set()

    def stop_accepting(self) -> None:
        self.accepting = False
        if not self.pending:
            self.all_answered.set()


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
            batch = state.updates[:100]
            state.handed(batch)
            return 200, {"ok": True, "result": batch}
        if name == "sendmessage":
            chat = int(params["chat_id"])
            text = params.get("text", "")
            state.replied(chat, text)
            message = {
                "message_id": 1,
                "from": {k: BENCH_BOT[k] for k in ("id", "is_bot", "first_name", "username")},
                "chat": {"id": chat, "type": "private", "first_name": "Bench"},
                "date": int(time.time()),
                "text": text,
            }
            return 200, {"ok": True, "result": message}
        # setMyCommands, deleteWebhook, sendChatAction...: accepted, nothing to model.
        return 200, {"ok": True, "result": True}

    return route


def _last_user_markers(request: dict[str, Any]) -> list[int]:
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            return [int(m) for m in _MARKER.findall(str(message.get("content") or ""))]
    return []


def _llm_api(state: _LoadState) -> Route:
    async def route(method: str, target: str, body: bytes) -> tuple[int, Any]:
        started = time.perf_counter()
        if method == "GET":
            return 200, {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}
        state.llm_requests += 1
        request = json.loads(body)
        markers = _last_user_markers(request)
        delay = state.plan.llm_delay_seconds if state.plan is not None else 0.0
        if delay > 0:
            await asyncio.sleep(delay)
        answered = " ".join(f"u{m}" for m in markers)
        completion = {
            "id": f"chatcmpl-bench-{state.llm_requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": f"{BENCH_REPLY} (re {answered})",
                        "refusal": None,
                    },
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
        state.llm_time(markers, time.perf_counter() - started)
        return 200, completion

    return route


async def _open_loop(state: _LoadState, plan: LoadPlan) -> None:
    """Messages at fixed times start + k/rate, whatever the bot does (no coordinated omission)."""
    loop = asyncio.get_running_loop()
    interval = 1.0 / plan.rate
    total = max(1, round(plan.rate * plan.seconds))
    start = loop.time()
    for k in range(total):
        due = start + k * interval
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        # When the child falls behind it catches up at once: arrivals stay on schedule.
        state.push(plan.first_chat_id + k % plan.chats)


async def run_phase(state: _LoadState, plan: LoadPlan) -> BenchResult:
    state.reset(plan)
    state.started_at = time.perf_counter()
    state.window_ends_at = state.started_at + plan.seconds
    if plan.mode == "open":
        await _open_loop(state, plan)
        # The last arrival is one interval before the window's end.
        await asyncio.sleep(max(0.0, state.window_ends_at - time.perf_counter()))
    else:
        for index in range(plan.chats):
            state.push(plan.first_chat_id + index)
        await asyncio.sleep(plan.seconds)
    state.stop_accepting()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(state.all_answered.wait(), DRAIN_SECONDS)
    return BenchResult(
        plan=plan,
        messages_sent=state.sent,
        replies=len(state.latencies),
        replies_in_window=state.in_window,
        window_seconds=plan.seconds,
        seconds_to_last_reply=max(0.0, state.last_reply_at - state.started_at),
        added_latency_ms=state.latencies,
        poll_wait_ms=state.poll_waits,
        llm_requests=state.llm_requests - state.llm_requests_at_start,
        unanswered=len(state.pending),
        unmatched_replies=state.unmatched,
        duplicates=state.duplicates,
        out_of_order=state.out_of_order,
        webhook_taken_ms=state.taken_ms,
        webhook_retries=state.sender.retries - state.retries_at_start if state.sender else 0,
        reminders=state.reminders,
    )


async def _serve(conn: Connection) -> None:
    state = _LoadState()
    bot_server = await asyncio.start_server(
        lambda r, w: serve_http(r, w, _bot_api(state)), "127.0.0.1", 0
    )
    llm_server = await asyncio.start_server(
        lambda r, w: serve_http(r, w, _llm_api(state)), "127.0.0.1", 0
    )
    bot_port = bot_server.sockets[0].getsockname()[1]
    llm_port = llm_server.sockets[0].getsockname()[1]
    conn.send((f"http://127.0.0.1:{bot_port}/bot", f"http://127.0.0.1:{llm_port}/v1"))
    # Between phases the servers keep answering (polls, shutdown calls) while we wait.
    while (plan := await asyncio.to_thread(conn.recv)) is not None:
        if plan.webhook_urls and state.sender is None:
            state.sender = WebhookSender(
                plan.webhook_urls, BENCH_WEBHOOK_SECRET, state.posted, state.taken
            )
        conn.send(await run_phase(state, plan))
        state.reset(None)
    if state.sender is not None:
        await state.sender.close()
    bot_server.close()
    llm_server.close()


def serve_bench_servers(conn: Connection) -> None:
    """Entry point of the child process."""
    with contextlib.suppress(KeyboardInterrupt, EOFError):
        asyncio.run(_serve(conn))
