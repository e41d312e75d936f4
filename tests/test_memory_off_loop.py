"""Memory work runs off the event loop, one lock per scope: a slow scope stalls only its chat."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from mnemobot.bot.app import App
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import Layer
from mnemobot.systems.core.context import ChatRef

SLOW_CHAT = ChatRef("telegram", "1001", user_id="1001", user_name="Ada")
WARM_CHAT = ChatRef("telegram", "2002", user_id="2002", user_name="Bob")
# Long enough never to run out before chat B's turn ends in a sound build; short enough
# that a build which did the memory work on the loop fails the test instead of hanging.
HOLD_SECONDS = 20.0


class ScopeHolder:
    """Another thread holding a scope's lock, as a cold load of a huge scope would."""

    def __init__(self, memory: WorkspaceMemory, scope: str) -> None:
        self._lock = memory.scopes.lock(scope)
        self._release = threading.Event()
        self._held = threading.Event()
        self.holding = False
        self._thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        with self._lock:
            self.holding = True
            self._held.set()
            self._release.wait(HOLD_SECONDS)
            self.holding = False

    def __enter__(self) -> ScopeHolder:
        self._thread.start()
        self._held.wait()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._release.set()
        self._thread.join()

    def waited_on(self) -> bool:
        """Whether another thread is blocked on a scope, inside `ScopeRuntime.loaded`."""
        entered = ScopeRuntime.loaded.__wrapped__.__code__  # type: ignore[attr-defined]
        for thread_id, frame in sys._current_frames().items():
            if thread_id != self._thread.ident and frame.f_code is entered:
                return True
        return False


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_a_chat_answers_while_another_chats_scope_is_busy(app: App) -> None:
    slow_scope = app.assistant.scope_for(SLOW_CHAT, app.assistant.config())
    with ScopeHolder(app.memory, slow_scope) as holder:
        slow_turn = asyncio.create_task(app.assistant.handle_text(SLOW_CHAT, "I like tea"))
        await until(holder.waited_on)  # chat A's turn waits for its scope in a worker
        warm = await app.assistant.handle_text(WARM_CHAT, "I like coffee")
        # Chat B got its answer while chat A's scope was still held by the other thread.
        assert warm is not None and warm.reply == "echo: I like coffee"
        assert holder.holding
        assert not slow_turn.done()
    slow = await asyncio.wait_for(slow_turn, 10)
    assert slow is not None and slow.reply == "echo: I like tea"
    # Both turns reached their own chat's memory.
    assert app.memory.recall.stats(slow_scope).items > 0
    assert app.memory.recall.search(slow_scope, "tea", config=MemoryConfig(), tz=None)  # type: ignore[arg-type]


def test_writes_and_packs_of_one_scope_from_many_threads_lose_nothing(workspace: Path) -> None:
    memory = WorkspaceMemory.open(workspace, max_cached_scopes=1)
    config = MemoryConfig()
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(40):
                memory.record.record_turn(
                    scope="global",
                    user_text=f"{name} note number {i}: I visited museum {name}{i}",
                    assistant_text="Noted.",
                    at=1_700_000_000.0 + i,
                    config=config,
                    tz=None,  # type: ignore[arg-type]
                )
                # Another scope in between: with one cached scope, "global" is evicted
                # and reloaded while the other threads still use it.
                memory.recall.stats(f"other:{name}")
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(40):
                memory.recall.build_pack(
                    "global", "museum", now=1_700_000_100.0, config=config, tz=None
                )  # type: ignore[arg-type]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
    threads.append(threading.Thread(target=reader))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    memory.close()
    reloaded = WorkspaceMemory.open(workspace).recall.stats("global")
    # Every turn of both writers is on disk, once.
    assert reloaded.per_layer[Layer.EPISODIC.value] >= 80
    assert reloaded.skipped_lines == 0
