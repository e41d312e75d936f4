"""The memory flush of a compaction: durable facts drawn out of the messages it removes,
kept in memory before they leave the session.

The flush goes to `llm.summaryModel` (else the chat model), sized to its context window
when known; what does not fit one call is split over several, each shown the facts the
earlier ones found. Texts the user had forgotten, waiting to be erased, are never sent.

On a server that answers one request at a time the flush does not hold up the reply: the
compaction notes the offloaded lines (`conversation.pending_flushes`) and the flush runs in
the background, as a call that gives way to replies and is made again once the server is
quiet; the bot's next start, or the chat's next turn, goes on with one its process was
stopped or killed for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import tzinfo
from functools import partial
from typing import Any

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.base.tokens import estimate_tokens
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.conversation.pending_flushes import CLAIM_SECONDS, LogLines, PendingFlushes
from mnemobot.conversation.session import Message
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.model.call_budget import prompt_room
from mnemobot.systems.compaction.flush_grounding import changed_copies
from mnemobot.systems.compaction.summary_model import SummaryModel, smaller_after
from mnemobot.systems.compaction.transcript import (
    parse_bullets,
    said,
    transcript_lines,
)
from mnemobot.systems.core.context import NO_REPLY
from mnemobot.systems.core.llm import (
    ChatModel,
    ChatRequest,
    GaveWayToReply,
    LLMError,
)

log = logging.getLogger(__name__)

FLUSH_INSTRUCTIONS = f"""You keep an assistant's long-term memory. From the conversation \
excerpt below, list durable facts worth remembering for weeks: facts about the user and \
their world, preferences, decisions, constraints, and how problems were solved. One short \
self-contained bullet per fact, starting with "- "; start a bullet with "[procedure]" when \
it is a how-to, a command or a fix. Leave out small talk, and leave out anything already in \
KNOWN MEMORY. If nothing new is worth keeping, answer exactly {NO_REPLY}."""


class _ReadAgain(Exception):
    """The lines a flush read changed before one of its calls could go (a text was
    forgotten, the log rewritten): they are read again."""


class MemoryFlush:
    def __init__(
        self,
        llm: ChatModel,
        memory: WorkspaceMemory,
        model: SummaryModel,
        *,
        clock: Clock = SYSTEM_CLOCK,
        pending: PendingFlushes | None = None,
        start_background: Callable[[Coroutine[Any, Any, object]], None] | None = None,
        until_quiet: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`memory`: what is known and was forgotten, and where new facts go; `clock`
        dates them. With `pending` (the chats' ledgers of flushes left for later) and
        `start_background` (runs a coroutine outside any turn, so its model calls give way
        to replies), a server that answers one request at a time gets the flush after the
        compaction instead of before the reply. `until_quiet` returns once the server would
        take background work: the lines are read (and what was forgotten meanwhile left
        out) only then, not while the flush waited behind the chat's turns."""
        self.llm = llm
        self.memory = memory
        self.model = model
        self.clock = clock
        self.pending = pending
        self.start_background = start_background
        self.until_quiet = until_quiet
        # Chats whose flush left for later runs in this process now.
        self._flushing: set[str] = set()

    def defers(self, config: RuntimeConfig) -> bool:
        """Whether the flush waits until after the reply: a server that answers one request
        at a time (`SummaryModel.one_slot`), and somewhere to note and run it."""
        return self.resumes(config) and self.model.one_slot(config)

    def resumes(self, config: RuntimeConfig) -> bool:
        """Whether flushes left for later are made: also once the server is no longer one
        that answers one request at a time (the operator moved the bot to a hosted API),
        or their lines would never reach memory."""
        return (
            self.pending is not None and self.start_background is not None and config.memory.enabled
        )

    async def note(self, session_key: str, scope: str, dropped: list[Message]) -> None:
        """Note `dropped`, just offloaded, as waiting for a flush (into `scope`) after the
        reply."""
        assert self.pending is not None
        first_at = dropped[0].get("at") if dropped else None
        await asyncio.to_thread(
            self.pending.note_last,
            session_key,
            len(dropped),
            first_at if isinstance(first_at, str) else None,
            scope,
        )

    async def resume_all(self, config: RuntimeConfig) -> None:
        """At the bot's start: go on with every chat's flush left waiting (its process
        stopped or was killed), though the chat may not write again."""
        if not self.resumes(config):
            return
        assert self.pending is not None
        pending = self.pending
        keys = await asyncio.to_thread(pending.waiting_keys)
        for key in keys:
            scope = await asyncio.to_thread(pending.scope_of, key)
            if scope is not None:
                self.resume_flushes(key, scope, config)

    def resume_flushes(
        self, session_key: str, scope: str, config: RuntimeConfig, tz: tzinfo | None = None
    ) -> None:
        """Start the chat's flush left for later, if one waits and none runs here (a chat's
        turn calls it: one whose process was stopped or killed goes on).
        On the loop; only a file's existence is checked here."""
        if not self.resumes(config) or session_key in self._flushing:
            return
        assert self.pending is not None and self.start_background is not None
        if not self.pending.waiting(session_key):
            return
        self._flushing.add(session_key)
        zone = tz or config.assistant.tzinfo()
        self.start_background(self._flush_later(session_key, scope, config, zone))

    async def _flush_later(
        self, session_key: str, scope: str, config: RuntimeConfig, tz: tzinfo
    ) -> None:
        """Flush the chat's noted lines, those a compaction notes meanwhile included; lines
        another flush holds are waited for until its claim runs out (a killed process's)."""
        assert self.pending is not None
        pending = self.pending
        try:
            while True:
                if await self._flush_claimed(session_key, scope, config, tz):
                    continue
                until = await asyncio.to_thread(pending.held_until, session_key)
                if until is None:
                    return
                await asyncio.sleep(min(CLAIM_SECONDS, max(1.0, until - pending.clock())))
        except OSError as exc:  # the claim runs out; the chat's next turn tries again
            log.warning("memory flush for %s left for later failed: %s", session_key, exc)
        finally:
            self._flushing.discard(session_key)

    async def _flush_claimed(
        self, session_key: str, scope: str, config: RuntimeConfig, tz: tzinfo
    ) -> bool:
        """Claim the chat's free lines and flush them; whether to go on (there were some:
        flushed, put aside for a reply, or to be read again)."""
        assert self.pending is not None
        pending = self.pending
        if self.until_quiet is not None:
            await self.until_quiet()
        claiming = asyncio.ensure_future(asyncio.to_thread(pending.claim, session_key))
        try:
            lines: list[LogLines] = await asyncio.shield(claiming)
        except asyncio.CancelledError:
            # The bot stops while the claim is made in its thread: the claim would keep
            # the lines from the next start for CLAIM_SECONDS.
            pending.release(session_key, await claiming)
            raise
        if not lines:
            return False
        try:
            read_from = await asyncio.to_thread(pending.log_state, session_key)
            messages = await asyncio.to_thread(pending.messages, session_key, lines)
            flushed = await self.flush(
                messages,
                config,
                scope,
                session_key,
                tz,
                at=min(line.at for line in lines),
                gives_way=True,
                unchanged=lambda: pending.log_state(session_key) == read_from,
            )
        except _ReadAgain:
            # Nothing was kept: the lines are claimed and read again, as they are now.
            await asyncio.to_thread(pending.release, session_key, lines)
            return True
        except GaveWayToReply:
            # Drawn again once the server is quiet: the reply may be another chat's, and
            # this chat's user may say nothing more.
            await asyncio.to_thread(pending.release, session_key, lines)
            log.info("memory flush for %s put aside for a reply", session_key)
            return True
        except asyncio.CancelledError:
            # The bot stops: let the lines go now (a small file write), so that the next
            # start does not wait for the claim to run out.
            pending.release(session_key, lines)
            raise
        except (LLMError, TimeoutError) as error:
            # The server is down or too slow: tried again later, a few times in all.
            calls = self.model.calls
            given_up = await asyncio.to_thread(
                pending.failed, session_key, lines, calls.flush_retry_seconds, calls.flush_tries
            )
            if given_up:
                log.warning(
                    "memory flush for %s gave up after %d tries (%s); the messages stay in "
                    "the chat's offload log",
                    session_key,
                    calls.flush_tries,
                    str(error) or "no answer in time",
                )
            return True
        await asyncio.to_thread(pending.finish, session_key, lines)
        log.info(
            "memory flush for %s after its compaction: %d fact(s) from %d message(s)",
            session_key,
            flushed,
            len(messages),
        )
        return True

    async def flush(
        self,
        dropped: list[Message],
        config: RuntimeConfig,
        scope: str,
        session_key: str,
        tz: tzinfo,
        *,
        at: float | None = None,
        gives_way: bool = False,
        unchanged: Callable[[], bool] | None = None,
    ) -> int:
        """Draw durable facts out of `dropped` into memory (compacted at `at`, by default
        now); `gives_way`: a call after the reply, which a reply puts aside
        (GaveWayToReply is raised, nothing is kept). `unchanged`: whether the file
        `dropped` was read from is still as it was (_ReadAgain is raised when it is not,
        or something was forgotten since, before a call goes)."""
        if not config.memory.enabled or not dropped:
            return 0
        settings = self.model.calls
        time_limit = self.model.time_limit(config)
        model = self.model.name(config)
        forgotten = self.memory.forget.forgotten_texts(scope)
        lines = transcript_lines(
            dropped, settings.flush_message_chars, tools=True, forgotten=forgotten
        )
        # The newest flush_input_chars of the excerpt, as whole lines where possible.
        kept_chars = 0
        for start in range(len(lines) - 1, -1, -1):
            kept_chars += len(lines[start]) + 1
            if kept_chars > settings.flush_input_chars:
                lines = lines[start + 1 :] or [lines[-1][-settings.flush_input_chars :]]
                break
        window = await self.model.window(model)
        known_budget = settings.flush_known_facts_budget_tokens
        if window is not None:
            # Known facts take at most a third of what the window leaves for the prompt.
            room = prompt_room(window, settings.summary_max_output_tokens)
            known_budget = max(0, min(known_budget, room // 3))
        # Both may read or load a whole scope: off the event loop.
        recall, scopes = self.memory.recall, self.memory.scopes
        known_facts = partial(recall.known_facts, scope, known_budget)
        known = await scopes.run(scope, known_facts) or "(nothing yet)"
        found: list[str] = []
        shrink = 1.0
        calls_made = 0
        try:
            while lines:
                known_now = "\n".join([known, *(f"- {bullet}" for bullet in found)])
                fixed = estimate_tokens(FLUSH_INSTRUCTIONS) + estimate_tokens(known_now) + 24
                part = await self.model.next_part(lines, model, fixed, shrink)
                request = ChatRequest(
                    messages=[
                        {"role": "system", "content": FLUSH_INSTRUCTIONS},
                        {
                            "role": "user",
                            "content": f"KNOWN MEMORY:\n{known_now}\n\n"
                            f"CONVERSATION EXCERPT:\n{chr(10).join(part)}",
                        },
                    ],
                    model=model,
                    temperature=settings.flush_temperature,
                    max_output_tokens=settings.summary_max_output_tokens,
                    timeout_seconds=time_limit,
                    resend=False,
                    deadline_seconds=time_limit + 1,
                    yields_to_replies=gives_way,
                )
                if unchanged is not None:
                    # A part after the first may have waited behind a turn that forgot a
                    # text it holds: checked once the server is free, with no await until
                    # the call is admitted (the first part was read once it was free).
                    if self.until_quiet is not None and calls_made:
                        await self.until_quiet()
                    _check_unchanged(self.memory, scope, forgotten, unchanged)
                calls_made += 1
                try:
                    response = await self.llm.complete(request)
                except LLMError as error:
                    if isinstance(error, GaveWayToReply):
                        raise
                    smaller = smaller_after(error, shrink)
                    if smaller is None:
                        raise
                    shrink = smaller
                    continue
                bullets = parse_bullets(response.content or "")
                lines_said = [said(line) for line in part]
                copies = changed_copies(
                    bullets,
                    known_now,
                    "\n".join(text for _, text in lines_said),
                    {name for name, _ in lines_said if name},
                )
                if copies:
                    log.info(
                        "memory flush for %s: left out %d fact(s) restating known memory "
                        "with nothing from the conversation",
                        session_key,
                        len(copies),
                    )
                found += [bullet for bullet in bullets if bullet not in copies]
                lines = lines[len(part) :]
        except GaveWayToReply:
            raise
        except (LLMError, TimeoutError) as error:
            if gives_way and not found:
                raise  # after the reply: tried again later (`_flush_claimed`)
            why = str(error) or f"no answer within {time_limit:g} s"
            log.warning("memory flush skipped for %s: %s", session_key, why)
            if not found:
                return 0
        if found and unchanged is not None:
            # The chat may have been erased (/forget_me) or a text forgotten while the
            # calls were under way: nothing of what they read is kept then.
            _check_unchanged(self.memory, scope, forgotten, unchanged)
        try:
            if not found:
                return 0
            flushed = partial(
                self.memory.record.add_flushed_facts,
                scope,
                found,
                at=self.clock() if at is None else at,
                session_key=session_key,
                tz=tz,
                config=config.memory,
            )
            return await scopes.run(scope, flushed, write=True)
        except Exception:  # a memory write problem must not stop compaction
            log.exception("memory flush failed for %s", session_key)
            return 0


def _check_unchanged(
    memory: WorkspaceMemory, scope: str, forgotten: ForgottenTexts, unchanged: Callable[[], bool]
) -> None:
    """Raise _ReadAgain when a text was forgotten since `forgotten` was read, or the file
    the flush's lines came from changed (rewritten by an erasure, gone with the chat)."""
    now = memory.forget.forgotten_texts(scope)
    if not set(now.needles) <= set(forgotten.needles) or not unchanged():
        raise _ReadAgain
