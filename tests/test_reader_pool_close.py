"""Closing a reader pool (the bot stopping) while jobs wait for its one slot: each waiting
job fails at once with the pool's one line, and no reader process starts after close."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from mnemobot.bot.media.bounded import Budget, OverBudget, ReaderPool, ReadersClosed
from mnemobot_tooling.hostile_pdf import shared_stream

# Pages sharing 1 MB of text operators: about 2 s of pypdf each (measured on 2 busy cores),
# so the first job holds its reader well past the moment the pool is closed.
SLOW_PDF_PAGES = 4
BUDGET = Budget(seconds=120, memory_bytes=None)
PDF = {"name": "slow.pdf", "max_pages": SLOW_PDF_PAGES, "max_chars": 100_000}
TEXT = {**PDF, "name": "note.txt"}


async def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.02)


async def test_close_fails_a_queued_job_at_once_and_starts_no_reader_for_it() -> None:
    pool = ReaderPool("document", lambda: 1, ())
    slow = shared_stream(pages=SLOW_PDF_PAGES, content_bytes=1_000_000)
    running = asyncio.create_task(pool.run("document", PDF, slow, BUDGET))
    queued: asyncio.Task[object] | None = None
    try:
        await wait_until(lambda: pool.jobs == 1, 60, "the first job in its reader")
        queued = asyncio.create_task(pool.run("document", PDF, slow, BUDGET))
        await wait_until(lambda: pool.waiting == 1, 10, "the second job waiting")

        await pool.close()
        async with asyncio.timeout(10):
            with pytest.raises(
                ReadersClosed, match=r"^the bot is stopping: its readers are closed$"
            ):
                await queued
            # Its reader killed by close, not by its file: the same line, not "crashed".
            with pytest.raises(ReadersClosed):
                await running
        assert pool.started == 1
        assert pool.jobs == 1
        assert pool.busy == 0
        with pytest.raises(ReadersClosed):
            await pool.run("document", PDF, slow, BUDGET)
        assert pool.started == 1
    finally:
        for task in (running, queued):
            if task is not None and not task.done():
                task.cancel()
        await asyncio.gather(running, *([queued] if queued else []), return_exceptions=True)
        await pool.close()


async def test_close_while_a_job_starts_its_reader_fails_it_and_kills_that_reader() -> None:
    pool = ReaderPool("document", lambda: 1, ())
    job = asyncio.create_task(pool.run("document", TEXT, b"a short text", BUDGET))
    try:
        await wait_until(lambda: pool.started == 1, 10, "the job starting its reader")
        await pool.close()
        async with asyncio.timeout(30):
            with pytest.raises(ReadersClosed):
                await job
        assert pool.jobs == 0
    finally:
        job.cancel()
        await asyncio.gather(job, return_exceptions=True)
        await pool.close()


async def test_close_while_a_job_waits_for_a_warming_reader_fails_it_with_the_closed_line() -> None:
    pool = ReaderPool("document", lambda: 1, ())
    slow = shared_stream(pages=SLOW_PDF_PAGES, content_bytes=1_000_000)
    # Over its time, the first job's reader is killed and another is warmed for the next.
    over_time = asyncio.create_task(pool.run("document", PDF, slow, Budget(0.5, None)))
    queued: asyncio.Task[object] | None = None
    try:
        await wait_until(lambda: pool.jobs == 1, 60, "the first job in its reader")
        queued = asyncio.create_task(pool.run("document", TEXT, b"a short text", BUDGET))
        await wait_until(lambda: pool.waiting == 1, 10, "the second job waiting")
        with pytest.raises(OverBudget):
            await over_time
        # The second job now waits for the warming reader: the pool closes under it.
        await pool.close()
        async with asyncio.timeout(30):
            with pytest.raises(ReadersClosed):
                await queued
        assert pool.jobs == 1
    finally:
        for task in (over_time, queued):
            if task is not None and not task.done():
                task.cancel()
        await asyncio.gather(over_time, *([queued] if queued else []), return_exceptions=True)
        await pool.close()
