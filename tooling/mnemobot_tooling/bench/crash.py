"""`mnemobot bench crash`: kill `mnemobot run` with SIGKILL again and again; count what is lost.

Twenty chats write to the bot (the test kit's fake Bot API and fake LLM, in this process)
while `mnemobot run` is killed at random moments and started again, `--kills` times. The
model takes `--model-seconds` a turn, so messages pile up. Then the bot runs until every
message is answered, and the report says how many messages were sent, answered, missing,
refused, answered out of order, answered twice, and whether every file of the workspace
still reads. Messages that waited together are answered by one reply ("echo: m3\n\nm7"),
which counts as answering each of them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mnemobot.memory.atomic_file import read_jsonl
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, delay, echo_responder
from mnemobot_tooling.fakes.telegram_server import TelegramServer

CHATS = 20
ANSWER_TIMEOUT_SECONDS = 120.0
_SENT = re.compile(r"\bm\d+\b")


def answered_in_order(replies: list[str]) -> list[str]:
    """The messages the echo replies answer, each once, in the order first answered."""
    seen: list[str] = []
    for text in replies:
        if text.startswith("echo: "):
            seen += [m for m in _SENT.findall(text) if m not in seen]
    return seen


def _replies(telegram: Any, chat: int) -> list[str]:
    return [m["plain_text"] for m in telegram.sent_messages(chat)]


def repeated_answers(replies: list[str]) -> int:
    """Replies answering a message an earlier reply answered already."""
    seen: set[str] = set()
    repeats = 0
    for text in replies:
        said = set(_SENT.findall(text)) if text.startswith("echo: ") else set()
        repeats += bool(said & seen)
        seen |= said
    return repeats


@dataclass(frozen=True, slots=True)
class CrashFigures:
    kills: int
    messages: int
    answered: int
    missing: int
    refused: int
    chats_out_of_order: int
    duplicate_replies: int
    unreadable_files: int
    torn_jsonl_lines: int
    seconds: float


def _start(workspace: Path, telegram: Any, llm: Any) -> subprocess.Popen[bytes]:
    ours = ("TELEGRAM_", "OPENAI_", "BOT_", "MNEMOBOT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env.update(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="bench",
        OPENAI_BASE_URL=llm.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS="*",
        BOT_LOG_LEVEL="ERROR",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=workspace.parent,
    )


def run_bench(kills: int, seed: int, model_seconds: float = 0.0) -> CrashFigures:
    rng = random.Random(seed)
    chats = [7000 + n for n in range(CHATS)]
    sent: dict[int, list[str]] = {chat: [] for chat in chats}
    began = time.monotonic()
    with (
        TelegramServer() as telegram,
        FakeOpenAIServer() as llm,
        tempfile.TemporaryDirectory(prefix="mnemobot-bench-crash-") as tmp,
    ):
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        if model_seconds > 0:
            llm.responder = lambda body: delay(model_seconds, echo_responder(body))
        counter = 0
        for _ in range(kills):
            polls = len(telegram.calls("getUpdates"))
            bot = _start(workspace, telegram, llm)
            telegram.wait_for_call("getUpdates", timeout=60, count=polls + 1)
            deadline = time.monotonic() + rng.uniform(0.2, 1.5)
            while time.monotonic() < deadline:
                for _ in range(rng.randint(1, 4)):
                    chat = rng.choice(chats)
                    counter += 1
                    sent[chat].append(f"m{counter}")
                    telegram.send_text(f"m{counter}", chat_id=chat)
                time.sleep(0.05)
            bot.send_signal(signal.SIGKILL)
            bot.wait()
        bot = _start(workspace, telegram, llm)
        deadline = time.monotonic() + ANSWER_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            answered = {
                chat: set(
                    answered_in_order([m["plain_text"] for m in telegram.sent_messages(chat)])
                )
                for chat in chats
            }
            if all(set(sent[c]) <= answered[c] for c in chats):
                break
            time.sleep(0.2)
        bot.send_signal(signal.SIGTERM)
        bot.wait(30)
        missing = out_of_order = duplicates = answered_count = refused = 0
        for chat in chats:
            replies = _replies(telegram, chat)
            first_seen = answered_in_order(replies)
            missing += len(set(sent[chat]) - set(first_seen))
            answered_count += len(set(sent[chat]) & set(first_seen))
            refused += sum(not text.startswith("echo: ") for text in replies)
            out_of_order += [m for m in first_seen if m in sent[chat]] != sent[chat]
            duplicates += repeated_answers(replies)
        unreadable = torn = 0
        for path in workspace.rglob("*.json"):
            try:
                json.loads(path.read_text())
            except (ValueError, OSError):
                unreadable += 1
        for path in workspace.rglob("*.jsonl"):
            torn += read_jsonl(path).skipped
    return CrashFigures(
        kills=kills,
        messages=counter,
        answered=answered_count,
        missing=missing,
        refused=refused,
        chats_out_of_order=out_of_order,
        duplicate_replies=duplicates,
        unreadable_files=unreadable,
        torn_jsonl_lines=torn,
        seconds=round(time.monotonic() - began, 1),
    )


def bench_command(args: argparse.Namespace) -> int:
    figures = run_bench(args.kills, args.seed, args.model_seconds)
    if args.json:
        print(json.dumps(asdict(figures)))
        return 0
    print(
        f"bench crash: {figures.kills} SIGKILLs of `mnemobot run` while {CHATS} chats wrote "
        f"({figures.seconds:g} s), model {args.model_seconds:g} s a turn"
    )
    print(f"  messages accepted by Telegram   {figures.messages}")
    print(f"  answered                        {figures.answered}")
    print(f"  missing                         {figures.missing}")
    print(f"  refused or apologised           {figures.refused}")
    print(f"  chats answered out of order     {figures.chats_out_of_order}")
    print(f"  duplicate replies               {figures.duplicate_replies}")
    print(f"  unreadable JSON files           {figures.unreadable_files}")
    print(f"  torn JSONL lines (skipped)      {figures.torn_jsonl_lines}")
    ok = figures.missing == 0 and figures.refused == 0 and figures.chats_out_of_order == 0
    return 0 if ok else 1
