"""Compaction: offload, flush durable facts to memory, summarize, keep the recent tail.

Order matters for "no message is ever lost": the dropped messages are appended to the
chat's append-only log first; only then is the session rewritten. A crash in between
leaves them in both places, never in neither.

The summary and the flush go to `llm.summaryModel` (else the chat model), whose context
window may be small (a local model): each call is sized to it when it is known
(`model.call_budget`), and what does not fit one call is split over several (the
summary carries on from the previous part's summary; each flush call is shown the facts
the earlier ones found). Texts the user had forgotten, waiting to be erased, are never
sent: their messages read "[forgotten]".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import tzinfo
from functools import partial

from mnemobot.base.clock import SYSTEM_CLOCK, Clock, to_iso
from mnemobot.base.tokens import estimate_tokens
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.conversation.session import AgentSession, SessionStore
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.model.call_budget import MAX_SHRINKS, SHRINK_AFTER_OVERFLOW, input_budget, prompt_room
from mnemobot.systems.compaction.flush_grounding import changed_copies
from mnemobot.systems.compaction.plan import SUMMARY_PREFIX, CompactionPlan, plan_compaction
from mnemobot.systems.compaction.transcript import (
    parse_bullets,
    said,
    split_lines,
    transcript_lines,
)
from mnemobot.systems.core.context import NO_REPLY
from mnemobot.systems.core.llm import ChatModel, ChatRequest, LLMError, LLMFailureKind
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


@dataclass(frozen=True, slots=True)
class CompactionCalls:
    """The summary's and the memory flush's model calls: constants, not settings (a test
    passes a shorter time limit). None measured one by one; chosen as noted."""

    # Most tokens of a summary (the instructions ask for 350 words).
    summary_max_output_tokens: int = 500
    # Seconds a summary may take; past it the old messages are dropped without one. The
    # user's reply waits for it: a summary of 500 tokens takes a few seconds on a hosted
    # model. A server that answers one request at a time (a home one) gets the operator's
    # llm.requestTimeoutSeconds instead (`Compactor(slow_server_seconds=...)`): a small
    # model there took more than 15 s, and every compaction lost its summary and its facts.
    summary_timeout_seconds: float = 15
    # Sampling temperature of summaries: low, it must not invent.
    summary_temperature: float = 0.3
    # How much of each dropped message the summary call sees (a gist is enough).
    summary_message_chars: int = 300
    # The flush call (durable facts out of the dropped messages) sees each dropped message
    # cut to this many characters, and the last this many characters of them all.
    flush_message_chars: int = 1_200
    flush_input_chars: int = 24_000
    # Tokens of known memory the flush call is shown so it does not repeat it.
    flush_known_facts_budget_tokens: int = 1_200
    # Sampling temperature of the flush: lower still, facts only.
    flush_temperature: float = 0.2


DEFAULT_COMPACTION_CALLS = CompactionCalls()

SUMMARY_INSTRUCTIONS = f"""You compress a chat between a user and an assistant so the \
assistant can carry on without the full transcript. Write at most 350 words in exactly \
these four sections:
SESSION INTENT: what the user is trying to achieve overall.
SUMMARY: the key points, decisions and answers so far, in order.
ARTIFACTS: files, commands, links, names and numbers that matter (or "none").
NEXT STEPS: what is open or was promised (or "none").
If a previous summary is given, merge it in; do not lose its facts. Do not start with \
"{SUMMARY_PREFIX}"."""

FLUSH_INSTRUCTIONS = f"""You keep an assistant's long-term memory. From the conversation \
excerpt below, list durable facts worth remembering for weeks: facts about the user and \
their world, preferences, decisions, constraints, and how problems were solved. One short \
self-contained bullet per fact, starting with "- "; start a bullet with "[procedure]" when \
it is a how-to, a command or a fix. Leave out small talk, and leave out anything already in \
KNOWN MEMORY. If nothing new is worth keeping, answer exactly {NO_REPLY}."""


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
    ) -> None:
        """`on_compacted(scope)` is called on the loop after each compaction (and its
        memory flush), so memory maintenance above this layer can follow it. `windows`
        tells the context window of the model the summary and flush go to, when known;
        `clock` dates the summary and the facts the flush keeps; `calls`: the summary's
        and the flush's limits. `memory`: what is known and what was forgotten (never sent
        to the summary or the flush), and where new facts go; None compacts without a flush.
        `slow_server_seconds`: for a config whose model server answers one request at a
        time, how long a call to it may take (the summary's and the flush's limit when
        longer than theirs); None: it is not such a server."""
        self.llm = llm
        self.calls = calls
        self.slow_server_seconds = slow_server_seconds
        self.sessions = sessions
        self.memory = memory
        self.chat_model_for = chat_model_for
        self.on_compacted = on_compacted
        self.windows = windows
        self.clock = clock

    def _time_limit(self, config: RuntimeConfig) -> float:
        """Seconds the summary, and the flush, may each take."""
        limit = self.calls.summary_timeout_seconds
        slow = self.slow_server_seconds(config) if self.slow_server_seconds else None
        return limit if slow is None else max(limit, slow)

    def _summary_model(self, config: RuntimeConfig) -> str:
        # The chat model this bot resolves stands in for BOT_MODEL: the same name.
        return config.llm.summary_model_name(self.chat_model_for(config))

    async def _window(self, model: str) -> int | None:
        if self.windows is None:
            return None
        window = await self.windows.context_window(model)
        return window.tokens if window is not None else None

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
        summary_task = self._summarize(plan, config, scope)
        flush_task = self._flush(plan, config, scope, session.id, tz or config.assistant.tzinfo())
        summary, flushed = await asyncio.gather(summary_task, flush_task)
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
        settings = self.calls
        time_limit = self._time_limit(config)
        model = self._summary_model(config)
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
            budget = input_budget(
                await self._window(model),
                answer_tokens=settings.summary_max_output_tokens,
                fixed_prompt_tokens=fixed,
                configured=10**9,
            )
            part = split_lines(lines, max(1, int(budget * shrink)))[0]
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
                if _too_long(error) and shrink > SHRINK_AFTER_OVERFLOW**MAX_SHRINKS:
                    shrink *= SHRINK_AFTER_OVERFLOW
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

    async def _flush(
        self, plan: CompactionPlan, config: RuntimeConfig, scope: str, session_key: str, tz: tzinfo
    ) -> int:
        if self.memory is None or not config.memory.enabled:
            return 0
        settings = self.calls
        time_limit = self._time_limit(config)
        model = self._summary_model(config)
        lines = transcript_lines(
            plan.dropped,
            settings.flush_message_chars,
            tools=True,
            forgotten=self._forgotten(scope),
        )
        # The newest flush_input_chars of the excerpt, as whole lines where possible.
        kept_chars = 0
        for start in range(len(lines) - 1, -1, -1):
            kept_chars += len(lines[start]) + 1
            if kept_chars > settings.flush_input_chars:
                lines = lines[start + 1 :] or [lines[-1][-settings.flush_input_chars :]]
                break
        window = await self._window(model)
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
        try:
            while lines:
                known_now = "\n".join([known, *(f"- {bullet}" for bullet in found)])
                fixed = estimate_tokens(FLUSH_INSTRUCTIONS) + estimate_tokens(known_now) + 24
                budget = input_budget(
                    await self._window(model),
                    answer_tokens=settings.summary_max_output_tokens,
                    fixed_prompt_tokens=fixed,
                    configured=10**9,
                )
                part = split_lines(lines, max(1, int(budget * shrink)))[0]
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
                )
                try:
                    response = await self.llm.complete(request)
                except LLMError as error:
                    if _too_long(error) and shrink > SHRINK_AFTER_OVERFLOW**MAX_SHRINKS:
                        shrink *= SHRINK_AFTER_OVERFLOW
                        continue
                    raise
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
        except (LLMError, TimeoutError) as error:
            why = str(error) or f"no answer within {time_limit:g} s"
            log.warning("memory flush skipped for %s: %s", session_key, why)
            if not found:
                return 0
        try:
            if not found:
                return 0
            flushed = partial(
                self.memory.record.add_flushed_facts,
                scope,
                found,
                at=self.clock(),
                session_key=session_key,
                tz=tz,
                config=config.memory,
            )
            return await scopes.run(scope, flushed, write=True)
        except Exception:  # a memory write problem must not stop compaction
            log.exception("memory flush failed for %s", session_key)
            return 0


def _too_long(error: LLMError) -> bool:
    return error.kind is LLMFailureKind.CONTEXT_OVERFLOW


@dataclass(frozen=True, slots=True)
class _NoSummary:
    reason: str
