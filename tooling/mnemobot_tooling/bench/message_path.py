"""`mnemobot bench message-path`: how many of our files one plain text message runs through.

The bot runs as `mnemobot run` does (`harness.run_bot`: PTB long polling, lanes, the whole
pipeline, the outbox) against the fake Bot API and model server, on the default runtime
config. After `--warm-up` messages in the same private chat (imports done, the chat's
session and memory scope loaded), a profile function (`sys.setprofile` and
`threading.setprofile`, installed before the bot starts so every thread has it) records
each call into a file of `mnemobot/` while one more plain text message goes its whole way:
from the Bot API handing it out until its reply is delivered, nothing waits in the inbox or
the outbox and no call of ours has run for `QUIET_SECONDS`. Each call is charged to the
thread it ran in (the event loop, the memory workers, the session threads, the journal
threads, asyncio's default pool) and to the paths it is on:

- the memory write: `MemoryPersist.process` and what it runs (the store, the notes);
- context building: `ContextBuilding.process` and what it runs (the pack among it);
- the pack build: `MemoryRecall.build_pack`.

A call is on a path when a frame of the path's function is under it on its stack, or the
work it belongs to was handed over from inside the path: a callable given to
`loop.run_in_executor` (what `asyncio.to_thread` and `ScopeRuntime.run` use) or a coroutine
given to `loop.create_task`. The recorder then listens for as long again with the bot idle,
to show what runs with no message at all.

The fake servers run in this process's threads; their calls into our code (the fake model
reads the request's newest context with `split_context`) are told apart by their stack and
not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures.thread
import json
import logging
import sys
import tempfile
import threading
import time
from asyncio.base_events import BaseEventLoop
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import mnemobot
import mnemobot_tooling.fakes
from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.memory.services.recall import MemoryRecall
from mnemobot.systems.memory_steps.context_building import ContextBuilding
from mnemobot.systems.memory_steps.memory_persist import MemoryPersist
from mnemobot_tooling.bench.harness import BotSetup, run_bot
from mnemobot_tooling.bench.load_servers import BENCH_TOKEN
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer

CHAT_ID = 4242
WARM_UP_TEXTS = (
    "Hi! My sister Anna lives in Berlin and works as a nurse.",
    "I have been learning Spanish since March, twice a week.",
    "We are planning a trip to Lisbon in June with Anna.",
)
MEASURED_TEXT = "Where does Anna live again? Also, I started running on Sundays."
# The message's way has ended once no call of ours ran for this long (the poller waits on
# its long poll meanwhile): trailing work (the outbox's done mark, a typing action ended)
# is counted, the idle loop is not.
QUIET_SECONDS = 0.5
TIMEOUT_SECONDS = 60.0

MEMORY_WRITE = "memory write"
CONTEXT_BUILDING = "context building"
PACK_BUILD = "pack build"
PATHS = {
    MemoryPersist.process.__code__: MEMORY_WRITE,
    ContextBuilding.process.__code__: CONTEXT_BUILDING,
    MemoryRecall.build_pack.__code__: PACK_BUILD,
}
WHOLE = "whole message"
IDLE = "idle"
WARM_UP = "warm-up"

# Where work changes hands; their frames' locals name what is handed over.
_RUN_IN_EXECUTOR: CodeType = BaseEventLoop.run_in_executor.__code__
_CREATE_TASK: CodeType = BaseEventLoop.create_task.__code__
_WORK_ITEM_RUN: CodeType = concurrent.futures.thread._WorkItem.run.__code__

# Thread name prefixes: ours (pools name their threads) and the bench's own.
EVENT_LOOP = "event loop"
THREAD_KINDS = (
    ("MainThread", EVENT_LOOP),
    ("memory", "memory workers"),
    ("sessions", "session threads"),
    ("inbox", "journal threads"),
    ("outbox", "journal threads"),
    ("asyncio_", "default pool (to_thread)"),
)
_WATCH_PREFIX = "bench-watch"


@dataclass
class PathFigures:
    """What ran on one path: files per thread kind, functions and calls (a coroutine's
    resumption after an await counts as a call)."""

    files_by_thread: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    functions: set[tuple[str, str]] = field(default_factory=set)
    calls: int = 0

    @property
    def files(self) -> set[str]:
        return set().union(*self.files_by_thread.values()) if self.files_by_thread else set()

    @property
    def rooms(self) -> set[str]:
        return {file.rsplit("/", 1)[0] if "/" in file else "." for file in self.files}

    def to_json(self) -> dict[str, Any]:
        return {
            "files": len(self.files),
            "rooms": len(self.rooms),
            "functions": len(self.functions),
            "calls": self.calls,
            "files_by_thread": {
                kind: sorted(files) for kind, files in sorted(self.files_by_thread.items())
            },
        }


class PathRecorder:
    """A profile function charging each call into `mnemobot/` to its thread and paths."""

    def __init__(self) -> None:
        self.package = str(Path(mnemobot.__file__).parent) + "/"
        self.fakes = str(Path(mnemobot_tooling.fakes.__file__).parent) + "/"
        self.window: str | None = None
        self.figures: dict[str, PathFigures] = defaultdict(PathFigures)
        self.last_call = time.monotonic()
        # id of a handed-over callable or coroutine frame -> (the object, kept alive so the
        # id stays its own; the paths it was handed over on).
        self._handed: dict[int, tuple[object, frozenset[str]]] = {}
        self._thread = threading.local()

    def install(self) -> None:
        threading.setprofile(self)
        sys.setprofile(self)

    def uninstall(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or self.window is None:
            return
        code = frame.f_code
        if code is _RUN_IN_EXECUTOR:
            self._hand_over(frame.f_back, frame.f_locals.get("func"), None)
            return
        if code is _CREATE_TASK:
            coro = frame.f_locals.get("coro")
            self._hand_over(frame.f_back, coro, getattr(coro, "cr_frame", None))
            return
        filename = code.co_filename
        if not filename.startswith(self.package):
            return
        kind = self._thread_kind(frame)
        if kind is None:
            return
        self.last_call = time.monotonic()
        file = filename[len(self.package) :]
        function = (file, code.co_qualname)
        paths = self._paths(frame) if self.window == WHOLE else ()
        for label in (self.window, *paths):
            figures = self.figures[label]
            figures.files_by_thread[kind].add(file)
            figures.functions.add(function)
            figures.calls += 1

    def _hand_over(self, caller: FrameType | None, handed: object, key: object) -> None:
        paths = self._paths(caller)
        if paths and handed is not None:
            self._handed[id(key if key is not None else handed)] = (handed, paths)

    def _paths(self, frame: FrameType | None) -> frozenset[str]:
        paths: set[str] = set()
        while frame is not None:
            code = frame.f_code
            path = PATHS.get(code)
            if path is not None:
                paths.add(path)
            elif code is _WORK_ITEM_RUN:
                work = getattr(frame.f_locals.get("self"), "fn", None)
                handed = self._handed.get(id(work))
                if handed is not None and handed[0] is work:
                    paths |= handed[1]
            handed = self._handed.get(id(frame))
            if handed is not None:
                paths |= handed[1]
            frame = frame.f_back
        return frozenset(paths)

    def _thread_kind(self, frame: FrameType) -> str | None:
        """What the running thread is, worked out at its first call of ours; None for the
        fake servers' threads and the bench's own."""
        try:
            return self._thread.kind
        except AttributeError:
            pass
        name = threading.current_thread().name
        kind: str | None = next(
            (kind for prefix, kind in THREAD_KINDS if name.startswith(prefix)), None
        )
        if kind is None and not name.startswith(_WATCH_PREFIX):
            kind = f"thread {name}"
            while frame is not None:
                if frame.f_code.co_filename.startswith(self.fakes):
                    kind = None
                    break
                frame = frame.f_back  # type: ignore[assignment]
        self._thread.kind = kind
        return kind


def nothing_pending(workspace: Path) -> bool:
    """No entry waits in the bot's Telegram journals (inbox, outbox)."""
    journals = sorted((workspace / "delivery").glob("telegram-*.jsonl"))
    return bool(journals) and all(not DurableQueue(path).pending() for path in journals)


async def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not await condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {TIMEOUT_SECONDS:g} s")
        await asyncio.sleep(0.02)


async def _one_message(
    text: str, telegram: TelegramServer, workspace: Path, watch: ThreadPoolExecutor
) -> None:
    """Send `text` and wait for its whole way: replied, journals empty."""
    loop = asyncio.get_running_loop()
    before = len(telegram.sent_messages(CHAT_ID))
    telegram.send_text(text, chat_id=CHAT_ID)

    async def answered() -> bool:
        if len(telegram.sent_messages(CHAT_ID)) <= before:
            return False
        return await loop.run_in_executor(watch, nothing_pending, workspace)

    await _until(answered, "the reply")


async def measure(warm_up: int) -> tuple[PathRecorder, float]:
    """Run the bot, warm it up, record one message and an idle window as long."""
    recorder = PathRecorder()
    recorder.install()
    watch = ThreadPoolExecutor(1, thread_name_prefix=_WATCH_PREFIX)
    try:
        with (
            TelegramServer(token=BENCH_TOKEN) as telegram,
            FakeOpenAIServer() as llm,
            tempfile.TemporaryDirectory(prefix="mnemobot-message-path-") as tmp,
        ):
            workspace = Path(tmp)
            setup = BotSetup(workspace, telegram.base_url, llm.base_url)
            go, stop = asyncio.Event(), asyncio.Event()
            bot = asyncio.create_task(run_bot(setup, go, stop))
            await asyncio.wait({bot, asyncio.create_task(go.wait())}, return_when="FIRST_COMPLETED")
            if bot.done():
                await bot

            async def quiet() -> bool:
                return time.monotonic() - recorder.last_call >= QUIET_SECONDS

            try:
                # Recorded too, and thrown away: the warm-up's trailing work must end
                # before the measured message starts.
                recorder.window = WARM_UP
                for n in range(warm_up):
                    text = WARM_UP_TEXTS[n % len(WARM_UP_TEXTS)]
                    await _one_message(text, telegram, workspace, watch)
                await _until(quiet, "a quiet moment after the warm-up")
                started = time.monotonic()
                recorder.window = WHOLE
                await _one_message(MEASURED_TEXT, telegram, workspace, watch)
                await _until(quiet, "a quiet moment after the reply")
                seconds = time.monotonic() - started
                recorder.window = IDLE
                idle_until = time.monotonic() + seconds
                while time.monotonic() < idle_until:
                    await asyncio.sleep(0.05)
                recorder.window = None
            finally:
                recorder.window = None
                stop.set()
                await bot
    finally:
        recorder.uninstall()
        watch.shutdown()
    return recorder, seconds


def _counts(figures: PathFigures) -> str:
    by_thread = ", ".join(
        f"{len(files)} {kind}"
        for kind, files in sorted(
            figures.files_by_thread.items(), key=lambda item: (item[0] != EVENT_LOOP, item[0])
        )
    )
    return (
        f"{len(figures.files)} files in {len(figures.rooms)} folders ({by_thread or 'none'}); "
        f"{len(figures.functions)} functions, {figures.calls} calls"
    )


def bench_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    recorder, seconds = asyncio.run(measure(args.warm_up))
    labels = (WHOLE, MEMORY_WRITE, CONTEXT_BUILDING, PACK_BUILD, IDLE)
    if args.json:
        figures = {label: recorder.figures[label].to_json() for label in labels}
        print(json.dumps({"seconds": round(seconds, 3), **figures}, indent=2))
        return 0
    print(
        f"one plain text message in a private chat after {args.warm_up} warm-up messages, "
        f"default config; files of mnemobot/ it runs through (a file counted once per "
        f"thread kind it runs in, once in the total):"
    )
    names = {
        WHOLE: f"whole way ({seconds:.2f} s)",
        MEMORY_WRITE: "memory write (MemoryPersist)",
        CONTEXT_BUILDING: "context building (ContextBuilding)",
        PACK_BUILD: "pack build (MemoryRecall.build_pack)",
        IDLE: f"idle bot, {seconds:.2f} s",
    }
    for label in labels:
        print(f"  {names[label]}: {_counts(recorder.figures[label])}")
    if args.list:
        for label in labels:
            print(f"\n{names[label]}:")
            for kind, files in sorted(recorder.figures[label].files_by_thread.items()):
                print(f"  {kind}:")
                for file in sorted(files):
                    print(f"    {file}")
    return 0
