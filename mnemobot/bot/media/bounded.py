"""Untrusted files are read in processes of their own, each job within a time and memory
budget (`ReaderPool`); the child's side is `reader_process`.

A job that runs past its time is ended by killing its process (a thread could only be
left running); one that needs more memory fails inside the child (RLIMIT_AS) or the child
dies; either way the bot's process, its event loop and its threads are untouched, and
the next job gets a fresh process. A cancelled job (/stop, shutdown) kills its process
too, so SIGTERM never waits on a reader.

Processes are started ahead of need (`prewarm`, when a file is on its way): starting one
imports pypdf and PyAV, most of a second, which a document should not wait for. Once warm,
a job costs what its pipe costs (measured below).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

import mnemobot
from mnemobot.bot.media.reader_process import HEADER, ReaderRefusal, frame

log = logging.getLogger(__name__)

# What a reader costs, measured with `python -m mnemobot_tooling.bench.reader_overhead
# --rounds 100` (2-core Xeon, Python 3.11.7, load average 13 from other sessions): a
# reader starts in 0.8-0.9 s (pypdf and PyAV imported); through a warm one a 2 KB text
# file takes 0.21 ms median against 0.01 ms in this process (the pipe and JSON both
# ways), a 4-page PDF 12.2-12.6 ms against 11.9-14.9 ms (the difference is in the noise).
# So readers are kept warm and reused, and a new one is started after each kill.
# A reader that does not say it is ready within this long is not coming.
START_SECONDS = 60.0
# Only what Python needs to start, and where faster-whisper's downloads are cached (a
# model named by size, `media.transcription.localModelPath`): a reader of hostile files
# holds none of the bot's secrets (tokens, keys) in its environment.
KEPT_ENVIRONMENT = (
    *("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "HOME", "SYSTEMROOT"),
    *("XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_ENDPOINT"),
)


@dataclass(frozen=True, slots=True)
class Budget:
    seconds: float
    # The child's address space (RLIMIT_AS); None leaves it unlimited.
    memory_bytes: int | None


class OverBudget(Exception):
    """The reader used up its budget: `what` is "time", "memory" or "crashed" (it died
    without an answer: the kernel, a decoder's crash)."""

    def __init__(self, what: str, budget: Budget) -> None:
        super().__init__(what)
        self.what = what
        self.budget = budget


class ReaderRefused(ReaderRefusal):
    """The job's own one line for the user (a password-protected PDF...), as it raised it."""

    @classmethod
    def of(cls, answer: dict[str, Any]) -> ReaderRefused:
        values = answer.get("values")
        return cls(
            str(answer["refused"]),
            permanent=bool(answer.get("permanent")),
            **(values if isinstance(values, dict) else {}),
        )


class ReaderFailed(Exception):
    """The job raised (`kind`: RecursionError, LimitReachedError...): the file is bad."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


class ReadersBusy(OSError):
    """Every reader stayed busy for as long as the caller would wait."""


class ReadersClosed(OSError):
    """The pool was closed (the bot is stopping): no job starts, none waits on."""

    def __init__(self) -> None:
        super().__init__("the bot is stopping: its readers are closed")


class _Reader:
    """One child process, one job at a time."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, preload: tuple[str, ...]) -> _Reader:
        env = {name: os.environ[name] for name in KEPT_ENVIRONMENT if name in os.environ}
        # The folder that holds the `mnemobot` package, so a source checkout works too.
        env["PYTHONPATH"] = str(Path(mnemobot.__file__).resolve().parent.parent)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mnemobot.bot.media.reader_process",
            str(os.getpid()),
            *preload,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        reader = cls(process)
        try:
            async with asyncio.timeout(START_SECONDS):
                ready = await reader._answer()
        except BaseException:
            await reader.kill()
            raise
        if ready is None or not ready.get("ready"):
            await reader.kill()
            raise OSError("a reader process did not start")
        return reader

    async def call(
        self, job: str, params: dict[str, Any], data: bytes, memory_bytes: int | None
    ) -> dict[str, Any] | None:
        """The child's answer, or None when it died without one."""
        stdin = self.process.stdin
        assert stdin is not None
        header = orjson.dumps({"job": job, "params": params, "memoryBytes": memory_bytes})
        try:
            stdin.write(frame(header) + frame(data))
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            return None
        return await self._answer()

    async def _answer(self) -> dict[str, Any] | None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            (size,) = HEADER.unpack(await stdout.readexactly(HEADER.size))
            answer = orjson.loads(await stdout.readexactly(size))
        except (asyncio.IncompleteReadError, orjson.JSONDecodeError):
            return None
        return answer if isinstance(answer, dict) else None

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        # Reaped at once: a killed reader leaves no zombie, and its memory is free.
        await asyncio.shield(self.process.wait())


class ReaderPool:
    """At most `size()` jobs at once, each in a reader process of its own; a process is
    kept for the next job unless its job ran out of time or memory."""

    def __init__(self, name: str, size: Callable[[], int], preload: tuple[str, ...]) -> None:
        self.name = name
        self.size = size
        self.preload = preload
        self._idle: list[_Reader] = []
        self._busy = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._warming: asyncio.Task[None] | None = None
        self._closed = False
        # Every process started and not yet killed, busy or idle: all killed at close.
        self._live: set[_Reader] = set()
        self.started = 0  # processes started, for tests and /status
        self.jobs = 0  # jobs handed to a reader, for tests and /status

    @property
    def busy(self) -> int:
        """Jobs running now."""
        return self._busy

    @property
    def waiting(self) -> int:
        """Jobs waiting for a slot."""
        return sum(not waiter.done() for waiter in self._waiters)

    def prewarm(self) -> None:
        """Start a reader in the background if none is idle (call inside the loop)."""
        if self._closed or self._idle or (self._warming and not self._warming.done()):
            return
        self._warming = asyncio.get_running_loop().create_task(
            self._warm(), name=f"{self.name}-reader-start"
        )

    async def _warm(self) -> None:
        try:
            reader = await self._start()
        except ReadersClosed:
            return
        except (OSError, TimeoutError) as exc:
            log.warning("could not start a %s reader process: %s", self.name, exc)
            return
        self._idle.append(reader)

    async def _start(self) -> _Reader:
        self.started += 1
        reader = await _Reader.start(self.preload)
        if self._closed:
            # Closed while it started: `close` could not see it to kill it.
            await reader.kill()
            raise ReadersClosed
        self._live.add(reader)
        return reader

    async def _discard(self, reader: _Reader) -> None:
        self._live.discard(reader)
        await reader.kill()

    async def _take(self) -> _Reader:
        if self._warming is not None and not self._warming.done() and not self._idle:
            # Waited for, not shielded: `close` cancels the warming, and the job waiting on
            # it then fails as closed, not as if it had been cancelled itself.
            await asyncio.wait({self._warming})
            if self._closed:
                raise ReadersClosed
        while self._idle:
            reader = self._idle.pop()
            if reader.alive:
                return reader
            await self._discard(reader)
        return await self._start()

    async def run(
        self,
        job: str,
        params: dict[str, Any],
        data: bytes,
        budget: Budget,
        *,
        wait_seconds: float | None = None,
    ) -> Any:
        """The job's result; raises OverBudget, ReaderRefused, ReaderFailed, or OSError
        when no reader can be started (ReadersBusy: none was free within `wait_seconds`)."""
        if self._closed:
            raise ReadersClosed
        try:
            async with asyncio.timeout(wait_seconds):
                await self._slot()
        except TimeoutError:
            raise ReadersBusy(f"no {self.name} reader free within {wait_seconds:g} s") from None
        try:
            # A slot handed over just before `close` is resumed after it: no reader for it.
            if self._closed:
                raise ReadersClosed
            reader = await self._take()
            self.jobs += 1
            keep = False
            try:
                async with asyncio.timeout(budget.seconds):
                    answer = await reader.call(job, params, data, budget.memory_bytes)
                keep = answer is not None and answer.get("error") != "memory"
            except TimeoutError:
                raise OverBudget("time", budget) from None
            finally:
                if keep and not self._closed:
                    self._idle.append(reader)
                else:
                    await self._discard(reader)
                    if not self._closed:
                        self.prewarm()
        finally:
            self._release()
        if answer is None:
            # Killed by `close`, not by the file: nothing to hold against it.
            raise ReadersClosed if self._closed else OverBudget("crashed", budget)
        if "ok" in answer:
            return answer["ok"]
        if "refused" in answer:
            raise ReaderRefused.of(answer)
        if answer.get("error") == "memory":
            raise OverBudget("memory", budget)
        raise ReaderFailed(str(answer.get("kind") or "Error"), str(answer.get("detail") or ""))

    async def _slot(self) -> None:
        """A turn, in the order asked for: a slot freed is handed to the first waiter
        (counted as busy for it), so a caller that asks again the moment its job ends (a
        long note's next piece) goes behind those already waiting."""
        if self._busy < max(1, self.size()) and not any(not w.done() for w in self._waiters):
            self._busy += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            self._hand_over()  # the pool may have grown since its slots filled
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release()  # handed a slot and cancelled at once: it goes to the next
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _release(self) -> None:
        self._busy -= 1
        self._hand_over()

    def _hand_over(self) -> None:
        for waiter in self._waiters:
            if self._busy >= max(1, self.size()):
                return
            if not waiter.done():
                self._busy += 1
                waiter.set_result(None)

    async def close(self) -> None:
        """Kill every reader (jobs still running end as cancelled by their callers); jobs
        waiting for a slot fail with ReadersClosed, so none starts a reader after this."""
        self._closed = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(ReadersClosed())
        if self._warming is not None and not self._warming.done():
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError, TimeoutError):
                await self._warming
        self._idle = []
        for reader in list(self._live):
            await self._discard(reader)
