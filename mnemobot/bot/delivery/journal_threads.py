"""Threads of their own for the durable journals: the inbox, and the outbox with its
previews. Their writes (a few ms with the fsync) never queue behind other work on
asyncio's default thread pool, which one chat's work can fill (an erasure's rmtree, a
slow disk under the files tool), so `/status` and every other chat's messages are kept
and answered meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")

# Two each: one write running, one more ready while a disk is slow. A journal serializes
# its writes under its own lock, so more would only wait there.
INBOX_THREADS = ThreadPoolExecutor(2, thread_name_prefix="inbox")
OUTBOX_THREADS = ThreadPoolExecutor(2, thread_name_prefix="outbox")


async def in_thread(
    threads: ThreadPoolExecutor, function: Callable[..., T], /, *args: Any, **kwargs: Any
) -> T:
    """`function(*args, **kwargs)` in one of `threads`, awaited from the event loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(threads, partial(function, *args, **kwargs))
