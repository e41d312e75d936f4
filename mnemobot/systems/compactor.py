"""Compaction: offload, flush durable facts to memory, summarize, keep the recent tail.

Order matters for "no message is ever lost": the dropped messages are appended to the
chat's append-only log first; only then is the session rewritten. A crash in between
leaves them in both places, never in neither.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from typing import Protocol

from mnemobot.config.runtime import MemoryConfig, RuntimeConfig
from mnemobot.memory.items import to_iso
from mnemobot.memory.session import AgentSession, Message, SessionStore
from mnemobot.systems.compaction_plan import SUMMARY_PREFIX, CompactionPlan, plan_compaction
from mnemobot.systems.llm import ChatModel, ChatRequest, LLMError

log = logging.getLogger(__name__)

# The flush model's answer when nothing is worth keeping: part of the prompt's contract
# with parse_bullets, not a tunable.
NO_REPLY = "NO_REPLY"

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


class MemoryFlushTarget(Protocol):
    """What compaction needs from memory: what is known, and a place for new facts.

    Both may read or load a whole scope: they run off the event loop (a worker thread).
    """

    async def known_facts_async(self, scope: str, budget_tokens: int) -> str: ...

    async def add_flushed_facts_async(
        self,
        scope: str,
        bullets: list[str],
        *,
        at: float,
        session_key: str,
        tz: tzinfo,
        config: MemoryConfig,
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class CompactionResult:
    removed: int
    kept: int
    summary_ok: bool
    no_summary_reason: str | None = None
    flushed_facts: int = 0


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def transcript(messages: list[Message], per_message_chars: int, *, tools: bool) -> str:
    lines = []
    for message in messages:
        role = message.get("role")
        if role == "tool" and not tools:
            continue
        content = str(message.get("content") or "")
        if not content and message.get("tool_calls"):
            names = ", ".join(c["function"]["name"] for c in message["tool_calls"])
            content = f"(called tools: {names})"
        if content:
            lines.append(f"{role}: {_cut(content, per_message_chars)}")
    return "\n".join(lines)


def parse_bullets(answer: str) -> list[str]:
    if answer.strip().upper().startswith(NO_REPLY):
        return []
    bullets = []
    for line in answer.splitlines():
        line = line.strip()
        if line[:2] in ("- ", "* ", "• "):
            line = line[2:].strip()
        elif line[:1] == "-":
            line = line[1:].strip()
        else:
            continue
        if len(line) >= 3:
            bullets.append(line)
    return bullets


class Compactor:
    def __init__(
        self,
        llm: ChatModel,
        sessions: SessionStore,
        memory: MemoryFlushTarget | None,
        *,
        chat_model_for: Callable[[RuntimeConfig], str],
        on_compacted: Callable[[str], None] | None = None,
    ) -> None:
        """`on_compacted(scope)` is called on the loop after each compaction (and its
        memory flush), so memory maintenance above this layer can follow it."""
        self.llm = llm
        self.sessions = sessions
        self.memory = memory
        self.chat_model_for = chat_model_for
        self.on_compacted = on_compacted

    def offload_path_text(self, session: AgentSession) -> str:
        return f"sessions/{self.sessions.offload_path_for(session.id).name}"

    async def compact(
        self, session: AgentSession, *, keep_last: int, config: RuntimeConfig, scope: str
    ) -> CompactionResult:
        plan = plan_compaction(session.messages, keep_last)
        if plan.is_empty:
            return CompactionResult(removed=0, kept=len(plan.kept), summary_ok=False)
        # File writes (an append, then a rewrite with fsync) go to a worker thread, so other
        # chats go on meanwhile; awaited in turn, so the order above still holds.
        await asyncio.to_thread(self.sessions.append_offload, session.id, plan.dropped)
        summary_task = self._summarize(plan, config)
        flush_task = self._flush(plan, config, scope, session.id)
        summary, flushed = await asyncio.gather(summary_task, flush_task)
        reason = None
        if isinstance(summary, str):
            head = f"{SUMMARY_PREFIX}\n{summary}"
        else:
            reason = summary.reason
            head = (
                f"{SUMMARY_PREFIX}\nNo summary is available ({reason}). The "
                f"{len(plan.dropped)} earlier messages are kept word for word in "
                f"{self.offload_path_text(session)}; the session_history and session_search "
                "tools can read them."
            )
        session.messages[:] = [{"role": "system", "content": head, "at": to_iso(time.time())}]
        session.messages += plan.kept
        session.metadata["compactions"] = int(session.metadata.get("compactions", 0)) + 1
        session.metadata["lastCompactionAt"] = to_iso(time.time())
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

    async def _summarize(self, plan: CompactionPlan, config: RuntimeConfig) -> str | _NoSummary:
        settings = config.compaction
        parts = []
        if plan.previous_summary:
            previous = plan.previous_summary.removeprefix(SUMMARY_PREFIX).strip()
            parts.append(f"PREVIOUS SUMMARY:\n{previous}")
        parts.append(
            "CONVERSATION:\n"
            + transcript(plan.dropped, settings.summary_message_chars, tools=False)
        )
        request = ChatRequest(
            messages=[
                {"role": "system", "content": SUMMARY_INSTRUCTIONS},
                {"role": "user", "content": "\n\n".join(parts)},
            ],
            model=config.llm.summary_model or self.chat_model_for(config),
            temperature=settings.summary_temperature,
            max_output_tokens=settings.summary_max_output_tokens,
            timeout_seconds=settings.summary_timeout_seconds,
        )
        try:
            response = await asyncio.wait_for(
                self.llm.complete(request), timeout=settings.summary_timeout_seconds + 1
            )
        except LLMError as error:
            return _NoSummary(error.user_text())
        except TimeoutError:
            return _NoSummary("the summary call timed out")
        text = (response.content or "").strip()
        return text if text else _NoSummary("the model returned an empty summary")

    async def _flush(
        self, plan: CompactionPlan, config: RuntimeConfig, scope: str, session_key: str
    ) -> int:
        if self.memory is None or not config.memory.enabled:
            return 0
        settings = config.compaction
        excerpt = transcript(plan.dropped, settings.flush_message_chars, tools=True)
        excerpt = excerpt[-settings.flush_input_chars :]
        known_budget = settings.flush_known_facts_budget_tokens
        known = await self.memory.known_facts_async(scope, known_budget) or "(nothing yet)"
        request = ChatRequest(
            messages=[
                {"role": "system", "content": FLUSH_INSTRUCTIONS},
                {
                    "role": "user",
                    "content": f"KNOWN MEMORY:\n{known}\n\nCONVERSATION EXCERPT:\n{excerpt}",
                },
            ],
            model=config.llm.summary_model or self.chat_model_for(config),
            temperature=settings.flush_temperature,
            max_output_tokens=config.compaction.summary_max_output_tokens,
            timeout_seconds=config.compaction.summary_timeout_seconds,
        )
        try:
            response = await asyncio.wait_for(
                self.llm.complete(request), timeout=config.compaction.summary_timeout_seconds + 1
            )
            bullets = parse_bullets(response.content or "")
            if not bullets:
                return 0
            return await self.memory.add_flushed_facts_async(
                scope,
                bullets,
                at=time.time(),
                session_key=session_key,
                tz=config.assistant.tzinfo(),
                config=config.memory,
            )
        except (LLMError, TimeoutError) as error:
            log.warning("memory flush skipped for %s: %s", session_key, error)
            return 0
        except Exception:  # a memory write problem must not stop compaction
            log.exception("memory flush failed for %s", session_key)
            return 0


@dataclass(frozen=True, slots=True)
class _NoSummary:
    reason: str
