"""The maintenance timer: memory upkeep in the background, never inside a turn.

Every `INTERVAL_HOURS` it maintains every scope (memory.maintenance runs the steps); a
compaction (and its memory flush) also starts maintenance of its scope, at most once per
`AFTER_COMPACTION_MIN_MINUTES`. Runs happen one at a time
in a worker thread, so chats are never blocked; the model is called on the event loop
through `ChatModel`, like every other call, and a run waiting on it when the bot stops is
cancelled (its scope keeps the old MEMORY.md and watermark). `mnemobot memory maintain`
runs the same code once, now.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.clock import SYSTEM_CLOCK, Clock, shown_time
from mnemobot.bot.i18n import Words, words_for
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.consolidation import (
    MEMORY_MAX_TOKENS,
    SUPERSEDED_ANSWER_TOKENS,
    TEMPERATURE,
    CompleteText,
    PromptTooLarge,
    PutAside,
    SupersededHook,
    ignore_superseded,
)
from mnemobot.memory.upkeep.maintenance import (
    MAINTENANCE_STEPS,
    MaintenanceReport,
    MaintenanceRun,
    MaintenanceStep,
    ScopeUpkeep,
    erase_forgotten,
    known_scopes,
    last_report,
    maintain_scope,
)
from mnemobot.systems.core.llm import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    GaveWayToReply,
    LLMError,
    LLMFailureKind,
)

log = logging.getLogger(__name__)

# Hours between two maintenance rounds over every scope (a consolidation is a model call
# per chat with news). Not measured; four rounds a day keep MEMORY.md a few hours behind.
INTERVAL_HOURS = 6.0
# A compaction starts maintenance of its scope at most once per this many minutes: a
# long chat compacting often must not rewrite MEMORY.md at each. Not measured.
AFTER_COMPACTION_MIN_MINUTES = 30.0

# In a scope's folder: when a compaction last started its maintenance (epoch seconds), so
# AFTER_COMPACTION_MIN_MINUTES holds across restarts and replicas.
TRIGGERED_FILE_NAME = ".maintenance_triggered"


class ConsolidationCallFailed(Exception):
    """The consolidation's model call failed; the message says why, without secrets."""


class LoopModelCaller:
    """`CompleteText` for worker threads: each call runs `ChatModel.complete` on the loop."""

    def __init__(
        self,
        llm: ChatModel,
        loop: asyncio.AbstractEventLoop,
        request_for: partial[ChatRequest],
    ) -> None:
        self.llm = llm
        self.loop = loop
        self.request_for = request_for
        self.in_flight: set[concurrent.futures.Future[ChatResponse]] = set()
        self.stopped = False

    def __call__(self, instructions: str, material: str) -> str:
        request: ChatRequest = self.request_for(instructions, material)
        timeout = request.timeout_seconds
        # The limit counts from when the call is sent: it may first wait, without limit,
        # while users' replies are made (`bot.llm.model_gate`); stopping the bot ends that.
        request.deadline_seconds = timeout
        future = asyncio.run_coroutine_threadsafe(self.llm.complete(request), self.loop)
        self.in_flight.add(future)
        if self.stopped:  # cancel_all ran while this call was being sent
            future.cancel()
        try:
            response = future.result()
        except concurrent.futures.CancelledError:
            raise ConsolidationCallFailed("the bot stopped during the model call") from None
        except GaveWayToReply:
            raise PutAside from None
        except LLMError as error:
            if error.kind is LLMFailureKind.CONTEXT_OVERFLOW:
                raise PromptTooLarge(f"the model call failed ({error})") from None
            if error.kind is LLMFailureKind.TIMEOUT:
                raise ConsolidationCallFailed(
                    f"the model did not answer within {timeout:g} s"
                ) from None
            raise ConsolidationCallFailed(f"the model call failed ({error})") from None
        finally:
            self.in_flight.discard(future)
        if response.finish_reason == "length":
            raise ConsolidationCallFailed("the model's answer was cut off at its output limit")
        return response.content or ""

    def cancel_all(self) -> None:
        self.stopped = True
        for future in list(self.in_flight):
            future.cancel()


def consolidation_request(
    config: RuntimeConfig, model: str, instructions: str, material: str
) -> ChatRequest:
    return ChatRequest(
        messages=[
            {"role": "system", "content": instructions},
            {"role": "user", "content": material},
        ],
        model=model,
        temperature=TEMPERATURE,
        max_output_tokens=MEMORY_MAX_TOKENS + SUPERSEDED_ANSWER_TOKENS,
        timeout_seconds=config.llm.request_timeout_seconds,
        # Maintenance runs again; a user's reply should not wait for it.
        yields_to_replies=True,
    )


class MaintenanceTimer:
    def __init__(
        self,
        *,
        paths: WorkspacePaths,
        runtime: RuntimeConfigStore,
        memory: ScopeUpkeep,
        llm: ChatModel | None,
        chat_model_name: str,
        steps: tuple[MaintenanceStep, ...] = MAINTENANCE_STEPS,
        on_superseded: SupersededHook = ignore_superseded,
        clock: Clock = SYSTEM_CLOCK,
        interval_hours: float = INTERVAL_HOURS,
    ) -> None:
        """`interval_hours`: between two rounds over every scope (a test passes less)."""
        self.paths = paths
        self.interval_hours = interval_hours
        self.runtime = runtime
        self.memory = memory
        self.llm = llm
        self.chat_model_name = chat_model_name
        self.steps = steps
        self.on_superseded = on_superseded
        # The time of each run (what it archives, prunes and marks as earlier).
        self.clock = clock
        self._task: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[object]] = set()
        self._cancel_on_stop: set[asyncio.Task[object]] = set()
        self._callers: set[LoopModelCaller] = set()
        # One run at a time in this process; other processes are kept out by the scope's
        # lock file (a second run of a scope skips).
        self._run_lock = asyncio.Lock()
        # Scopes whose compaction trigger is being checked against its file.
        self._claiming: set[str] = set()
        self._stopping = False

    # ----------------------------------------------------------------- running

    def _model(self, config: RuntimeConfig) -> str:
        return config.llm.summary_model_name(self.chat_model_name)

    async def _window_of(self, model: str) -> Callable[[], int | None]:
        """The context window of `model` as the client knows it, read anew at each call (an
        overflow error during the run teaches it); the server is asked once per process."""
        ask = getattr(self.llm, "context_window", None)
        known = getattr(self.llm, "known_window", None)
        if ask is None or known is None:
            return lambda: None
        try:
            await ask(model)
        except Exception:  # a server that cannot say; its overflow errors will
            log.debug("could not ask for the window of %s", model, exc_info=True)

        def window() -> int | None:
            found = known(model)
            return found.tokens if found is not None else None

        return window

    def _caller(self, config: RuntimeConfig) -> CompleteText | None:
        if self.llm is None:
            return None
        model = self._model(config)
        caller = LoopModelCaller(
            self.llm,
            asyncio.get_running_loop(),
            partial(consolidation_request, config, model),
        )
        self._callers.add(caller)
        return caller

    async def maintain(
        self, scope: str, steps: tuple[MaintenanceStep, ...] | None = None
    ) -> MaintenanceReport:
        """Maintain one scope now (in a worker thread); waits for a run in progress.

        `steps`: only these (default: every step)."""
        async with self._run_lock:
            if self._stopping:
                return MaintenanceReport(scope, self.clock(), skipped="the bot is stopping")
            config = self.runtime.current()
            caller = self._caller(config)
            window = await self._window_of(self._model(config)) if caller else (lambda: None)
            run = MaintenanceRun(
                paths=ScopePaths(self.paths.root, scope),
                config=config.memory,
                now=self.clock(),
                sessions_dir=self.paths.sessions,
                memory=self.memory,
                complete=caller,
                on_superseded=self.on_superseded,
                window=window,
                tz=config.assistant.tzinfo(),
            )
            try:
                return await asyncio.to_thread(maintain_scope, run, steps or self.steps)
            finally:
                if isinstance(caller, LoopModelCaller):
                    self._callers.discard(caller)

    async def maintain_all(self) -> list[MaintenanceReport]:
        config = self.runtime.current()
        scopes = await asyncio.to_thread(
            known_scopes, self.paths.root, self.paths.sessions, config.memory
        )
        reports = []
        for scope in scopes:
            if self._stopping:
                break
            reports.append(await self.maintain(scope))
        return reports

    # -------------------------------------------------------------- background

    def start(self) -> None:
        """Start the periodic runs (from inside the running event loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._tick_forever())

    async def _tick_forever(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.interval_hours * 3600)
            try:
                await self.maintain_all()
            except Exception:  # the next tick tries again
                log.exception("maintenance round failed")

    def notify_compacted(self, scope: str) -> None:
        """A compaction of `scope` finished: maintain it soon, unless this trigger started
        a run of it less than AFTER_COMPACTION_MIN_MINUTES ago, by this process or an earlier
        one (a restart must not let a local model server be asked again at once).
        Called on the loop."""
        if self._task is None or self._stopping or scope in self._claiming:
            return
        self._claiming.add(scope)
        self.start_background(self._maintain_after_compaction(scope))

    async def _maintain_after_compaction(self, scope: str) -> None:
        try:
            seconds = AFTER_COMPACTION_MIN_MINUTES * 60
            due = await asyncio.to_thread(self._claim_trigger, scope, seconds)
        except (OSError, ValueError) as exc:
            log.warning("could not read or keep when %s was last maintained: %s", scope, exc)
            due = False
        finally:
            self._claiming.discard(scope)
        if due:
            await self._maintain_logged(scope)

    def _claim_trigger(self, scope: str, min_seconds: float) -> bool:
        """Whether a run is due after a compaction; if so, noted as started now."""
        path = ScopePaths(self.paths.root, scope).directory / TRIGGERED_FILE_NAME
        now = self.clock()
        try:
            last = float(path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            last = None
        if last is not None and 0 <= now - last < min_seconds:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, f"{now:.3f}\n".encode("ascii"))
        return True

    def start_background(
        self, work: Coroutine[Any, Any, object], *, cancel_on_stop: bool = False
    ) -> None:
        """Run `work` in the background, outside the turn that asked for it: its model
        calls are background calls (`bot.llm.model_gate`), which wait for replies.
        `cancel_on_stop`: work that keeps its own record of what is left (a compaction's
        memory flush) is cancelled when the bot stops, not waited for."""
        task: asyncio.Task[object] = asyncio.get_running_loop().create_task(
            work, context=contextvars.Context()
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        if cancel_on_stop:
            self._cancel_on_stop.add(task)
            task.add_done_callback(self._cancel_on_stop.discard)

    def notify_forgotten(self, scope: str) -> None:
        """Something of `scope` was forgotten in a turn: erase it from every file now.

        The erasure waits for the turn to let go of its session (and to have recorded
        itself in memory) before it redacts the conversation. Called on the loop.
        """
        if self._task is None or self._stopping:
            return
        erase = tuple(step for step in self.steps if step.run is erase_forgotten)
        if not erase:
            return
        self.start_background(self._maintain_logged(scope, erase))

    async def _maintain_logged(
        self, scope: str, steps: tuple[MaintenanceStep, ...] | None = None
    ) -> MaintenanceReport | None:
        try:
            return await self.maintain(scope, steps)
        except Exception:
            log.exception("maintenance of %s failed", scope)
            return None

    async def settled(self) -> None:
        """Return once the runs started so far (after a compaction, for an erasure) have
        ended, those started meanwhile included."""
        while self._pending:
            await asyncio.wait(set(self._pending))

    async def stop(self) -> None:
        """Stop ticking; a run waiting on the model is cancelled, nothing half-written."""
        self._stopping = True
        for caller in list(self._callers):
            caller.cancel_all()
        for task in list(self._cancel_on_stop):
            task.cancel()
        tasks = [t for t in (self._task, *self._pending) if t is not None]
        if self._task is not None:
            self._task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._task = None

    # ------------------------------------------------------------------ status

    def status_lines(self, scope: str, words: Words | None = None) -> list[str]:
        """`/status`: when the chat's memory was last maintained and what that did (each
        step's line as memory upkeep words it, in English)."""
        words = words or words_for(None)
        try:
            report = last_report(ScopePaths(self.paths.root, scope))
        except ValueError:  # not a valid scope key: nothing was ever maintained there
            report = None
        if report is None:
            return [words.gettext("Maintenance: not run yet")]
        at = shown_time(report.at)
        done = "; ".join(f"{step.name}: {step.line}" for step in report.steps)
        return [words.gettext("Maintenance: last run {at}: {done}", at=at, done=done)]
