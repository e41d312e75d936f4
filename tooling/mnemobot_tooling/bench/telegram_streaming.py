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

The fakes run as threads of the bench process (beside the bot): figures are for comparing
the modes with each other on one machine, not absolute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _answer(tokens: int) -> str:
    words = [f"word{i}" for i in range(tokens)]
    # Paragraphs and a little Markdown, as a model writes.
    lines = [" ".join(words[i : i + 40]) for i in range(0, tokens, 40)]
    return "**Answer.** " + "\n\n".join(lines)


def _write_config(workspace: Path, mode: str, edit_seconds: float) -> None:
    path = workspace / "preferences" / "runtime-config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {"telegram": {"streaming": mode, "streamEditSeconds": edit_seconds}}
    path.write_text(json.dumps(config))


def _whole_replies(telegram: TelegramServer) -> dict[int, list[dict[str, Any]]]:
    """Per chat, the messages that carry a finished (HTML) reply."""
    done: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for message in telegram.sent_messages():
        if message["parse_mode"] == "HTML":
            done[message["chat_id"]].append(message)
    return done


def _calls_by_chat(telegram: TelegramServer) -> dict[int, list[dict[str, Any]]]:
    calls: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for call in telegram.calls():
        if call["method"] in _COUNTED and call["status"] == 200:
            calls[int(call["params"].get("chat_id", 0))].append(call)
    return calls


async def _with_bot(
    mode: str,
    args: argparse.Namespace,
    production_limits: bool,
    body: Any,
) -> Any:
    with (
        TelegramServer(token=BENCH_TOKEN) as telegram,
        FakeOpenAIServer() as llm,
        tempfile.TemporaryDirectory(prefix="mnemobot-stream-bench-") as tmp,
    ):
        llm.tokens_per_second = args.tokens_per_second
        answer = _answer(args.reply_tokens)
        llm.responder = lambda request: reply(answer)
        workspace = Path(tmp)
        _write_config(workspace, mode, args.edit_seconds)
        setup = BotSetup(
            workspace, telegram.base_url, llm.base_url, production_limits=production_limits
        )
        go, stop = asyncio.Event(), asyncio.Event()
        bot = asyncio.create_task(run_bot(setup, go, stop))
        await asyncio.wait({bot, asyncio.create_task(go.wait())}, return_when="FIRST_COMPLETED")
        if bot.done():
            await bot
        try:
            return await body(telegram, llm)
        finally:
            stop.set()
            await bot


async def _until(condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the bot did not finish its replies in time")
        await asyncio.sleep(0.05)


async def latency(mode: str, args: argparse.Namespace) -> LatencyFigures:
    chats = [30_000 + n for n in range(args.stream_chats)]

    async def body(telegram: TelegramServer, llm: FakeOpenAIServer) -> LatencyFigures:
        asked = {}
        for chat in chats:
            asked[chat] = time.time()
            telegram.send_text(f"question q{chat}", chat_id=chat)
        timeout = 60 + args.reply_tokens / args.tokens_per_second * 2
        await _until(lambda: len(_whole_replies(telegram)) == len(chats), timeout)
        await asyncio.sleep(0.5)  # late calls (a typing action) are counted too
        whole = _whole_replies(telegram)
        calls = _calls_by_chat(telegram)
        first_text, whole_reply, after_token, counts, previews = [], [], [], [], []
        for chat in chats:
            first_token = llm.first_token_time_for(f"q{chat}")
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

    return await _with_bot(mode, args, args.production_limits, body)


async def load(mode: str, args: argparse.Namespace) -> LoadFigures:
    chats = [40_000 + n for n in range(args.load_chats)]

    async def body(telegram: TelegramServer, llm: FakeOpenAIServer) -> LoadFigures:
        asked = dict.fromkeys(chats, 1)
        for chat in chats:
            telegram.send_text(f"question q{chat}-1", chat_id=chat)
        started = time.monotonic()
        calls_before = len(telegram.calls())
        while time.monotonic() - started < args.load_seconds:
            whole = _whole_replies(telegram)
            for chat in chats:
                if len(whole.get(chat, ())) >= asked[chat]:
                    asked[chat] += 1
                    telegram.send_text(f"question q{chat}-{asked[chat]}", chat_id=chat)
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - started
        replies = sum(len(v) for v in _whole_replies(telegram).values())
        calls = len(telegram.calls()) - calls_before
        return LoadFigures(mode, len(chats), elapsed, replies, replies / elapsed, calls / elapsed)

    return await _with_bot(mode, args, True, body)


def bench_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print(machine_line())
    print(load_line("before"))
    print(
        f"model: {args.tokens_per_second:g} tokens/s, {args.reply_tokens}-token replies; "
        f"telegram.streamEditSeconds {args.edit_seconds:g}"
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
                f"{result.calls_per_second:.1f} Bot API calls/s"
            )
    print(load_line("after"))
    return 0
