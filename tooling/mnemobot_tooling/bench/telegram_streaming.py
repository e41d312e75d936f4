"""`mnemobot bench telegram --stream`: what streaming replies cost and what they buy.

The bot runs as `mnemobot run` does (PTB, lanes, the whole pipeline, the outbox) against
the fake Bot API and the fake model server, which streams its answers at `--tokens-per-second`
(a word is a token) with `--reply-tokens` words per reply. Each mode (`telegram.streaming`
off, then auto) runs on a fresh bot and workspace:

1. latency: `--stream-chats` private chats each send one message at once. Per reply: the time from
   the model's first token to the first text the user sees (a preview, or the whole reply
   when not streaming), and to the whole reply (the message that carries the final HTML);
   Bot API calls per reply (sendMessage, editMessageText, sendMessageDraft, typing).
2. load: with Telegram's limits in the bot's limiter (`--production-limits`), `--load-chats`
   chats each send their next message as soon as their reply is whole, for
   `--load-seconds`: whole replies per second, streaming on against off. Their previews
   want more calls than Telegram allows, so the limiter must drop previews, not replies.

The fakes run in a child process, so their cost (a model streaming to 60 chats is over a
thousand events a second) is not charged to the bot; the bot's own CPU per reply is shown.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot_tooling.bench.harness import BotSetup, run_bot
from mnemobot_tooling.bench.load_servers import BENCH_TOKEN
from mnemobot_tooling.bench.telegram_throughput import load_line, machine_line
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply
from mnemobot_tooling.fakes.telegram_server import TelegramServer

_SHOWING = ("sendMessage", "editMessageText", "sendMessageDraft")
_COUNTED = (*_SHOWING, "sendChatAction")


@dataclass(frozen=True, slots=True)
class LatencyFigures:
    mode: str
    replies: int
    # Medians, from the user's message.
    first_text_s: float
    whole_s: float
    # From the model's first streamed token (None: the model was not asked for a stream).
    first_text_after_first_token_s: float | None
    calls_per_reply: float
    previews_per_reply: float


@dataclass(frozen=True, slots=True)
class LoadFigures:
    mode: str
    chats: int
    seconds: float
    replies: int
    replies_per_second: float
    calls_per_second: float
    # Median, message sent -> its whole reply seen (polled every 0.1 s).
    reply_seconds: float
    cpu_ms_per_reply: float


def _answer(tokens: int) -> str:
    words = [f"word{i}" for i in range(tokens)]
    # Paragraphs and a little Markdown, as a model writes.
    lines = [" ".join(words[i : i + 40]) for i in range(0, tokens, 40)]
    return "**Answer.** " + "\n\n".join(lines)


class _Fakes:
    """The fake Bot API and model server in a child process, called through a pipe."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()

    def _call_now(self, target: str, method: str, args: tuple[Any, ...], kwargs: Any) -> Any:
        with self.lock:
            self.conn.send((target, method, args, kwargs))
            return self.conn.recv()

    async def call(self, target: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self._call_now, target, method, args, kwargs)


def _serve_fakes(conn: Connection, tokens_per_second: float, reply_tokens: int) -> None:
    answer = _answer(reply_tokens)
    with TelegramServer(token=BENCH_TOKEN) as telegram, FakeOpenAIServer() as llm:
        llm.tokens_per_second = tokens_per_second
        llm.responder = lambda request: reply(answer)
        conn.send((telegram.base_url, llm.base_url))
        targets = {"telegram": telegram, "llm": llm}
        while True:
            message = conn.recv()
            if message is None:
                return
            target, method, args, kwargs = message
            conn.send(getattr(targets[target], method)(*args, **kwargs))


@contextlib.asynccontextmanager
async def _fakes(args: argparse.Namespace) -> AsyncIterator[tuple[_Fakes, str, str]]:
    context = multiprocessing.get_context("spawn")
    parent, child_end = context.Pipe()
    child = context.Process(
        target=_serve_fakes,
        args=(child_end, args.tokens_per_second, args.reply_tokens),
        daemon=True,
        name="stream bench fakes",
    )
    child.start()
    try:
        bot_url, llm_url = await asyncio.to_thread(parent.recv)
        yield _Fakes(parent), bot_url, llm_url
        parent.send(None)
    finally:
        child.join(timeout=5)
        if child.is_alive():
            child.terminate()


def _write_config(workspace: Path, mode: str) -> None:
    path = workspace / "preferences" / "runtime-config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"telegram": {"streaming": mode}}))


async def _whole_replies(fakes: _Fakes) -> dict[int, list[dict[str, Any]]]:
    """Per chat, the messages that carry a finished (HTML) reply."""
    done: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for message in await fakes.call("telegram", "sent_messages"):
        if message["parse_mode"] == "HTML":
            done[message["chat_id"]].append(message)
    return done


async def _calls_by_chat(fakes: _Fakes) -> dict[int, list[dict[str, Any]]]:
    calls: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for call in await fakes.call("telegram", "calls"):
        if call["method"] in _COUNTED and call["status"] == 200:
            calls[int(call["params"].get("chat_id", 0))].append(call)
    return calls


async def _with_bot(
    mode: str,
    args: argparse.Namespace,
    production_limits: bool,
    body: Any,
) -> Any:
    """Run `body(fakes)` against a fresh bot; returns its result and the bot's CPU seconds."""
    async with _fakes(args) as (fakes, bot_url, llm_url):
        with tempfile.TemporaryDirectory(prefix="mnemobot-stream-bench-") as tmp:
            workspace = Path(tmp)
            _write_config(workspace, mode)
            setup = BotSetup(
                workspace,
                bot_url,
                llm_url,
                production_limits=production_limits,
                timing=TelegramTiming(stream_edit_seconds=args.edit_seconds),
            )
            go, stop = asyncio.Event(), asyncio.Event()
            bot = asyncio.create_task(run_bot(setup, go, stop))
            await asyncio.wait({bot, asyncio.create_task(go.wait())}, return_when="FIRST_COMPLETED")
            if bot.done():
                await bot
            try:
                before = os.times()
                result = await body(fakes)
                after = os.times()
            finally:
                stop.set()
                await bot
            return result, (after.user + after.system) - (before.user + before.system)


async def _until(condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the bot did not finish its replies in time")
        await asyncio.sleep(0.05)


async def latency(mode: str, args: argparse.Namespace) -> LatencyFigures:
    chats = [30_000 + n for n in range(args.stream_chats)]

    async def body(fakes: _Fakes) -> LatencyFigures:
        asked = {}
        for chat in chats:
            asked[chat] = time.time()
            await fakes.call("telegram", "send_text", f"question q{chat}", chat_id=chat)

        async def all_whole() -> bool:
            return len(await _whole_replies(fakes)) == len(chats)

        await _until(all_whole, 60 + args.reply_tokens / args.tokens_per_second * 2)
        await asyncio.sleep(0.5)  # late calls (a typing action) are counted too
        whole = await _whole_replies(fakes)
        calls = await _calls_by_chat(fakes)
        first_text, whole_reply, after_token, counts, previews = [], [], [], [], []
        for chat in chats:
            first_token = await fakes.call("llm", "first_token_time_for", f"q{chat}")
            shown = [c for c in calls[chat] if c["method"] in _SHOWING]
            finished = max(c["time"] for c in shown if c["params"].get("parse_mode") == "HTML")
            first_shown = min(c["time"] for c in shown)
            first_text.append(first_shown - asked[chat])
            whole_reply.append(finished - asked[chat])
            if first_token is not None:
                after_token.append(first_shown - first_token)
            counts.append(len(calls[chat]))
            previews.append(sum(c["params"].get("parse_mode") != "HTML" for c in shown))
        assert all(len(whole[chat]) == 1 for chat in chats)
        return LatencyFigures(
            mode,
            len(chats),
            statistics.median(first_text),
            statistics.median(whole_reply),
            statistics.median(after_token) if after_token else None,
            statistics.mean(counts),
            statistics.mean(previews),
        )

    figures, _ = await _with_bot(mode, args, args.production_limits, body)
    return figures


async def load(mode: str, args: argparse.Namespace) -> LoadFigures:
    chats = [40_000 + n for n in range(args.load_chats)]

    async def body(fakes: _Fakes) -> LoadFigures:
        asked = dict.fromkeys(chats, 1)
        asked_at = dict.fromkeys(chats, time.monotonic())
        reply_times: list[float] = []
        for chat in chats:
            await fakes.call("telegram", "send_text", f"question q{chat}-1", chat_id=chat)
        started = time.monotonic()
        calls_before = len(await fakes.call("telegram", "calls"))
        while time.monotonic() - started < args.load_seconds:
            whole = await _whole_replies(fakes)
            for chat in chats:
                if len(whole.get(chat, ())) >= asked[chat]:
                    reply_times.append(time.monotonic() - asked_at[chat])
                    asked_at[chat] = time.monotonic()
                    asked[chat] += 1
                    text = f"question q{chat}-{asked[chat]}"
                    await fakes.call("telegram", "send_text", text, chat_id=chat)
            await asyncio.sleep(0.1)
        elapsed = time.monotonic() - started
        replies = sum(len(v) for v in (await _whole_replies(fakes)).values())
        calls = len(await fakes.call("telegram", "calls")) - calls_before
        return LoadFigures(
            mode,
            len(chats),
            elapsed,
            replies,
            replies / elapsed,
            calls / elapsed,
            statistics.median(reply_times) if reply_times else float("nan"),
            0.0,
        )

    figures, cpu_seconds = await _with_bot(mode, args, True, body)
    cpu_ms = cpu_seconds * 1000 / figures.replies if figures.replies else float("nan")
    return replace(figures, cpu_ms_per_reply=cpu_ms)


def bench_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print(machine_line())
    print(load_line("before"))
    print(
        f"model: {args.tokens_per_second:g} tokens/s, {args.reply_tokens}-token replies; "
        f"previews at most every {args.edit_seconds:g} s"
    )
    modes = ("off", "auto")
    for mode in modes:
        figures = asyncio.run(latency(mode, args))
        after = figures.first_text_after_first_token_s
        token = f" ({after:.2f} s after the model's first token)" if after is not None else ""
        print(
            f"streaming {mode:>4}: {figures.replies} private chats at once, medians from the "
            f"message: first text {figures.first_text_s:.2f} s{token}, whole reply "
            f"{figures.whole_s:.2f} s; Bot API calls per reply {figures.calls_per_reply:.1f} "
            f"(previews {figures.previews_per_reply:.1f})"
        )
    if args.load_seconds > 0:
        for mode in modes:
            result = asyncio.run(load(mode, args))
            print(
                f"streaming {mode:>4} under Telegram's limits: {result.chats} chats, closed "
                f"loop {result.seconds:.0f} s: {result.replies} whole replies, "
                f"{result.replies_per_second:.2f} replies/s, "
                f"median reply {result.reply_seconds:.2f} s, "
                f"{result.calls_per_second:.1f} Bot API calls/s (getUpdates too), bot CPU "
                f"{result.cpu_ms_per_reply:.0f} ms per reply"
            )
    print(load_line("after"))
    return 0
