"""Replicas on one Redis for tests: in-process `serve_telegram` replicas and `mnemobot run`
processes, a Telegram-like sender, and the real redis-server of tests/redis_server.py."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mnemobot.bot.app import App, build_replica_app
from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot.bot.channels.telegram.serve import serve_telegram
from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.bot.delivery.replicas import Replicas, open_replicas
from mnemobot.bot.schedule.limits import ScheduleLimits
from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.redis_server import free_port, running_redis
from tests.conftest import make_settings, subprocess_env, write_runtime_config

SECRET = "replica-secret_1"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Short leases (and, in-process, sweeps), so a test sees a takeover in a second or two.
FAST_LEASES = {"telegram": {"leaseSeconds": 3, "streaming": "off"}}
FAST_SWEEPS = TelegramTiming(sweep_seconds=0.2)
# Each in-process replica looks for scheduled tasks another one added every 0.2 s.
FAST_POLLS = Tuning(schedule=ScheduleLimits(poll_seconds=0.2))
LEADING = "this replica polls Telegram now"


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with running_redis(tmp_path / "redis") as url:
        yield url


@dataclass
class Replica:
    app: App
    replicas: Replicas
    stop: asyncio.Event
    task: asyncio.Task[None]
    url: str

    async def shutdown(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 15)
        await self.app.close()
        await self.replicas.close()


async def start_replica(
    name: str,
    workspace: Path,
    redis_url: str,
    telegram: TelegramServer,
    llm: FakeOpenAIServer,
    *,
    webhook: bool = True,
) -> Replica:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    settings = make_settings(
        workspace,
        llm,
        telegram_bot_token=telegram.token,
        telegram_api_base_url=telegram.base_url,
        telegram_allowed_users="*",
        bot_webhook_url=url,
        bot_webhook_secret=SECRET,
        bot_webhook_listen=f"127.0.0.1:{port}",
        bot_redis_url=redis_url,
        bot_replica_id=name,
    )
    replicas = open_replicas(redis_url)
    app = build_replica_app(settings, replicas, tuning=FAST_POLLS)
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        serve_telegram(
            app,
            settings,
            stop=stop,
            webhook=webhook,
            poll_timeout_seconds=1,
            grace_seconds=2,
            on_ready=ready.set,
            replicas=replicas,
            timing=FAST_SWEEPS,
        )
    )
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        await task
    assert ready.is_set(), f"replica {name} did not start within 10 s"
    return Replica(app, replicas, stop, task, url)


@pytest.fixture
async def two_replicas(
    workspace: Path, redis_url: str, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> AsyncIterator[list[Replica]]:
    write_runtime_config(workspace, FAST_LEASES)
    started = [
        await start_replica(name, workspace, redis_url, telegram, openai_server)
        for name in ("a", "b")
    ]
    yield started
    for replica in started:
        if not replica.task.done():
            await replica.shutdown()


async def post_until_taken(
    client: httpx.AsyncClient, urls: Iterator[str], update: dict[str, object]
) -> None:
    """POST like Telegram: the same update again (to the next replica) until a 200."""
    for _ in range(50):
        try:
            response = await client.post(next(urls), json=update, headers={SECRET_HEADER: SECRET})
            if response.status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"update {update['update_id']} was never taken")


@dataclass
class ReplicaProcess:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    url: str | None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


# What a replica process runs after its prelude: the `mnemobot` command.
_RUN_MNEMOBOT = """
from mnemobot.bot.cli.main import main
raise SystemExit(main())
"""


def spawn_replica(
    name: str,
    workspace: Path,
    redis_url: str,
    telegram: TelegramServer,
    llm: FakeOpenAIServer,
    *,
    webhook: bool,
    prelude: str = "",
    env_extra: dict[str, str] | None = None,
) -> ReplicaProcess:
    """`mnemobot run` (with `--webhook`) as a process; `prelude`: Python run in it first
    (a crash point's wrappers of library calls), with `env_extra` in its environment."""
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=llm.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS="*",
        BOT_REDIS_URL=redis_url,
        BOT_REPLICA_ID=name,
        BOT_LOG_LEVEL="INFO",
        **(env_extra or {}),
    )
    url = None
    if webhook:
        port = free_port()
        url = f"http://127.0.0.1:{port}/hook"
        env.update(
            BOT_WEBHOOK_URL=url, BOT_WEBHOOK_SECRET=SECRET, BOT_WEBHOOK_LISTEN=f"127.0.0.1:{port}"
        )
    log = workspace.parent / f"replica-{name}.log"
    with log.open("ab") as sink:
        start = ["-c", prelude + _RUN_MNEMOBOT] if prelude else ["-m", "mnemobot"]
        process = subprocess.Popen(
            [sys.executable, *start, "run", *(["--webhook"] if webhook else [])],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
            cwd=workspace.parent,
        )
    return ReplicaProcess(name, process, log, url)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def stop_all(replicas: list[ReplicaProcess]) -> None:
    for replica in replicas:
        if replica.process.poll() is None:
            replica.process.send_signal(signal.SIGTERM)
    for replica in replicas:
        try:
            replica.process.wait(20)
        except subprocess.TimeoutExpired:
            replica.process.kill()
            replica.process.wait()


def texts_sent(telegram: TelegramServer, chat: int) -> list[str]:
    return [m["plain_text"] for m in telegram.sent_messages(chat)]


def messages_answered(telegram: TelegramServer, chat: int) -> list[str]:
    """The messages the chat's echo replies answer, each once, in the order answered.

    Messages of a chat that waited together are answered by one turn: "echo: m1\n\nm2".
    """
    answered: list[str] = []
    for text in texts_sent(telegram, chat):
        for said in text.removeprefix("echo: ").split("\n\n"):
            if said not in answered:
                answered.append(said)
    return answered


def repeated_answers(telegram: TelegramServer, chat: int) -> int:
    """Replies answering a message that an earlier reply answered already."""
    seen: set[str] = set()
    repeats = 0
    for text in texts_sent(telegram, chat):
        said = set(text.removeprefix("echo: ").split("\n\n"))
        repeats += bool(said & seen)
        seen |= said
    return repeats


async def settled(replicas: list[Replica], keys: list[str]) -> bool:
    """Nothing waits in Redis, none of the chats `keys` is leased, and no reply waits in a
    replica's outbox: no turn can run and no reply can go out any more."""
    coordination = replicas[0].replicas.coordination
    if await coordination.keys_with_pending():
        return False
    if any([await coordination.holder(key) for key in keys]):
        return False
    outboxes = replicas[0].app.paths.delivery.glob("telegram-outbox-*.jsonl")
    return all(not DurableQueue(path).pending() for path in outboxes)


async def wait_until_settled(replicas: list[Replica], keys: list[str], timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await settled(replicas, keys):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the replicas still had work after {timeout} s")
        await asyncio.sleep(0.05)


def polls_now(replica: ReplicaProcess) -> bool | None:
    """Whether the replica's log last said it polls (True) or stands by; None before either."""
    text = replica.log_text()
    leading = text.rfind(LEADING)
    standing = text.rfind("standing by")
    if leading < 0 and standing < 0:
        return None
    return leading > standing
