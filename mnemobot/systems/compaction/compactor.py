"""Compaction: offload, flush durable facts to memory, summarize, keep the recent tail.

Order matters for "no message is ever lost": the dropped messages are appended to the
chat's append-only log first; only then is the session rewritten. A crash in between
leaves them in both places, never in neither.

The summary and the flush (`compaction.memory_flush`) go to `llm.summaryModel` (else the
chat model), whose context window may be small (a local model): each call is sized to it
when it is known (`model.call_budget`), and what does not fit one call is split over
several (the summary carries on from the previous part's summary). Texts the user had
forgotten, waiting to be erased, are never sent: their messages read "[forgotten]". On a
server that answers one request at a time, the flush runs after the reply.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Any

from mnemobot.base.clock import SYSTEM_CLOCK, Clock, to_iso
from mnemobot.base.tokens import estimate_tokens
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.conversation.pending_flushes import PendingFlushes
from mnemobot.conversation.session import AgentSession, SessionStore
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.systems.compaction.memory_flush import MemoryFlush
from mnemobot.systems.compaction.plan import SUMMARY_PREFIX, CompactionPlan, plan_compaction
from mnemobot.systems.compaction.summary_model import (
    DEFAULT_COMPACTION_CALLS,
    CompactionCalls,
    SummaryModel,
    smaller_after,
)
from mnemobot.systems.compaction.transcript import transcript_lines
from mnemobot.systems.core.llm import ChatModel, ChatRequest, LLMError
from mnemobot.systems.model_call.context_window import ContextWindows

log = logging.getLogger(__name__)


def earlier_summary(previous: str | None) -> str | None:
    """What an earlier compaction summarized (the session's first message, `previous`),
    without its heading and any note on what it left unsummarized; None when it has none."""
    if previous is None or not previous.startswith(f"{SUMMARY_PREFIX}\n"):
        return None
    body = previous[len(SUMMARY_PREFIX) + 1 :].split("\n\nThe messages after this summary")[0]
    if body.startswith("No summary is available"):
        return None
    return body.strip() or None


SUMMARY_INSTRUCTIONS = f"""You compress a chat between a user and an assistant so the \
assistant can carry on without the full transcript. Write at most 350 words in exactly \
these four sections:
SESSION INTENT: what the user is trying to achieve overall.
SUMMARY: the key points, decisions and answers so far, in order.
ARTIFACTS: files, commands, links, names and numbers that matter (or "none").
NEXT STEPS: what is open or was promised (or "none").
If a previous summary is given, merge it in; do not lose its facts. Do not start with \
"{SUMMARY_PREFIX}"."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    removed: int
    kept: int
    summary_ok: bool
    no_summary_reason: str | None = None
    flushed_facts: int = 0


class Compactor:
    def __init__(
        self,
        llm: ChatModel,
        sessions: SessionStore,
        memory: WorkspaceMemory | None,
        *,
        chat_model_for: Callable[[RuntimeConfig], str],
        on_compacted: Callable[[str], None] | None = None,
        windows: ContextWindows | None = None,
        clock: Clock = SYSTEM_CLOCK,
        calls: CompactionCalls = DEFAULT_COMPACTION_CALLS,
        slow_server_seconds: Callable[[RuntimeConfig], float | None] | None = None,
        pending: PendingFlushes | None = None,
        start_background: Callable[[Coroutine[Any, Any, object]], None] | None = None,
        until_quiet: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`on_compacted(scope)` is called on the loop after each compaction (and its
        memory flush), so memory maintenance above this layer can follow it. `windows`
        tells the context window of the model the summary and flush go to, when known;
        `clock` dates the summary and the facts the flush keeps; `calls`: the summary's
        and the flush's limits. `memory`: what is known and what was forgotten (never sent
        to the summary or the flush), and where new facts go; None compacts without a flush.
        `slow_server_seconds`: for a config whose model server answers one request at a
        time, how long a call to it may take (the summary's and the flush's limit when
        longer than theirs); None: it is not such a server. On such a server, with
        `pending` (the chats' ledgers of flushes left for later) and `start_background`
        (runs a coroutine outside any turn, so its model calls give way to replies), the
        flush runs after the compaction instead of before the reply, reading what it
        sends once `until_quiet` returns (the server would take background work now)."""
        self.llm = llm
        self.sessions = sessions
        self.memory = memory
        self.on_compacted = on_compacted
        self.clock = clock
        self.model = SummaryModel(chat_model_for, calls, windows, slow_server_seconds)
        self.flush = (
            MemoryFlush(
                llm,
                memory,
                self.model,
                clock=clock,
                pending=pending,
                start_background=start_background,
                until_quiet=until_quiet,
            )
            if memory is not None
            else None
        )

    def resume_flushes(
        self, session_key: str, scope: str, config: RuntimeConfig, tz: tzinfo | None = None
    ) -> None:
        """Start the chat's memory flush left for later, if one waits (on the loop)."""
        if self.flush is not None:
            self.flush.resume_flushes(session_key, scope, config, tz)

    async def resume_all(self, config: RuntimeConfig) -> None:
        """At the bot's start: go on with the memory flushes left waiting."""
        if self.flush is not None:
            await self.flush.resume_all(config)

    def _forgotten(self, scope: str) -> ForgottenTexts:
        if self.memory is None:
            return ForgottenTexts()
        return self.memory.forget.forgotten_texts(scope)

    def offload_path_text(self, session: AgentSession) -> str:
        return f"sessions/{self.sessions.offload_path_for(session.id).name}"

    async def compact(
        self,
        session: AgentSession,
        *,
        keep_last: int,
        config: RuntimeConfig,
        scope: str,
        tz: tzinfo | None = None,
    ) -> CompactionResult:
        """`tz`: the chat's zone (its own, when it set one), which dates the flushed facts'
        daily note; None: the configured zone."""
        plan = plan_compaction(session.messages, keep_last)
        if plan.is_empty:
            return CompactionResult(removed=0, kept=len(plan.kept), summary_ok=False)
        previous = plan.previous_summary
        if previous is not None:  # the turn keeps forgotten texts out only after this
            plan = replace(plan, previous_summary=self._forgotten(scope).redact(previous))
        # File writes (an append, then a rewrite with fsync) go to a worker thread, so other
        # chats go on meanwhile; awaited in turn, so the order above still holds.
        await asyncio.to_thread(self.sessions.append_offload, session.id, plan.dropped)
        zone = tz or config.assistant.tzinfo()
        flush = self.flush
        later = flush is not None and flush.defers(config)
        if flush is not None and later:
            # Noted before the session is rewritten: a crash between the two offloads the
            # same messages again, and notes the same lines once.
            await flush.note(session.id, scope, plan.dropped)
            summary, flushed = await self._summarize(plan, config, scope), 0
        elif flush is not None:
            summary_task = self._summarize(plan, config, scope)
            flush_task = flush.flush(plan.dropped, config, scope, session.id, zone)
            summary, flushed = await asyncio.gather(summary_task, flush_task)
        else:
            summary, flushed = await self._summarize(plan, config, scope), 0
        reason = None
        if isinstance(summary, str):
            head = f"{SUMMARY_PREFIX}\n{summary}"
        else:
            reason = summary.reason
            where = (
                f"{len(plan.dropped)} earlier messages are kept word for word in "
                f"{self.offload_path_text(session)}; the session_history and session_search "
                "tools can read them."
            )
            earlier = earlier_summary(plan.previous_summary)
            if earlier is not None:
                # A failed summary must not cost the one before it: a local server busy
                # with maintenance times out, and the conversation's gist would be gone.
                head = (
                    f"{SUMMARY_PREFIX}\n{earlier}\n\nThe messages after this summary are "
                    f"not summarized ({reason}). The {where}"
                )
            else:
                head = f"{SUMMARY_PREFIX}\nNo summary is available ({reason}). The {where}"
        now = to_iso(self.clock())
        session.messages[:] = [{"role": "system", "content": head, "at": now}]
        session.messages += plan.kept
        session.metadata["compactions"] = int(session.metadata.get("compactions", 0)) + 1
        session.metadata["lastCompactionAt"] = now
        await self.sessions.save_async(session)
        log.info(
            "compacted %s: removed %d, kept %d, summary=%s, facts flushed=%d",
            session.id,
            len(plan.dropped),
            len(plan.kept),
            reason is None,
            flushed,
        )
        if self.on_compacted is not None:
            try:
                self.on_compacted(scope)
            except Exception:  # a listener's problem must not fail the compaction
                log.exception("compaction listener failed for %s", session.id)
        if later:
            self.resume_flushes(session.id, scope, config, zone)
        return CompactionResult(
            removed=len(plan.dropped),
            kept=len(plan.kept),
            summary_ok=reason is None,
            no_summary_reason=reason,
            flushed_facts=flushed,
        )

    async def _summarize(
        self, plan: CompactionPlan, config: RuntimeConfig, scope: str
    ) -> str | _NoSummary:
        settings = self.model.calls
        time_limit = self.model.time_limit(config)
        model = self.model.name(config)
        previous = (plan.previous_summary or "").removeprefix(SUMMARY_PREFIX).strip()
        lines = transcript_lines(
            plan.dropped,
            settings.summary_message_chars,
            tools=False,
            forgotten=self._forgotten(scope),
        )
        shrink = 1.0
        while lines:
            # The previous summary (or the last part's) rides along with every part.
            fixed = estimate_tokens(SUMMARY_INSTRUCTIONS) + estimate_tokens(previous) + 16
            part = await self.model.next_part(lines, model, fixed, shrink)
            parts = [f"PREVIOUS SUMMARY:\n{previous}"] if previous else []
            parts.append("CONVERSATION:\n" + "\n".join(part))
            request = ChatRequest(
                messages=[
                    {"role": "system", "content": SUMMARY_INSTRUCTIONS},
                    {"role": "user", "content": "\n\n".join(parts)},
                ],
                model=model,
                temperature=settings.summary_temperature,
                max_output_tokens=settings.summary_max_output_tokens,
                timeout_seconds=time_limit,
                resend=False,
                # Its own limit, from when it is sent: not shared with the flush queued
                # behind it on a one-slot server.
                deadline_seconds=time_limit + 1,
            )
            try:
                response = await self.llm.complete(request)
            except LLMError as error:
                smaller = smaller_after(error, shrink)
                if smaller is not None:
                    shrink = smaller
                    continue
                return _NoSummary(error.user_text())
            except TimeoutError:
                return _NoSummary("the summary call timed out")
            text = (response.content or "").strip()
            if not text:
                return _NoSummary("the model returned an empty summary")
            previous = text
            lines = lines[len(part) :]
        return previous or _NoSummary("nothing to summarize")


@dataclass(frozen=True, slots=True)
class _NoSummary:
    reason: str
