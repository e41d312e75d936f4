"""The model a compaction's calls go to (`llm.summaryModel`, else the chat model), and how
long and how large each call may be.

Shared by the summary (`compaction.compactor`) and the memory flush
(`compaction.memory_flush`): each splits what it is shown into parts that fit the model's
window (`next_part`), smaller again after the server refuses one as too long
(`smaller_after`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mnemobot.config.runtime import RuntimeConfig
from mnemobot.model.call_budget import MAX_SHRINKS, SHRINK_AFTER_OVERFLOW, input_budget
from mnemobot.systems.compaction.transcript import split_lines
from mnemobot.systems.core.llm import LLMError, LLMFailureKind
from mnemobot.systems.model_call.context_window import ContextWindows


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
    # A flush after the reply that failed (the server down, or no answer in time) is tried
    # again this much later, this many times in all; then its lines are let go (the
    # messages stay in the offload log, the per-turn facts in memory). Chosen, not
    # measured: a home server restarted or busy with a long job is back within minutes.
    flush_retry_seconds: float = 300.0
    flush_tries: int = 3


DEFAULT_COMPACTION_CALLS = CompactionCalls()


@dataclass(frozen=True, slots=True)
class SummaryModel:
    """`chat_model_for`: the chat model this bot resolves (it stands in for BOT_MODEL);
    `windows`: the context windows of models, when known; `slow_server_seconds`: for a
    config whose model server answers one request at a time, how long a call to it may
    take (None: it is not such a server)."""

    chat_model_for: Callable[[RuntimeConfig], str]
    calls: CompactionCalls = DEFAULT_COMPACTION_CALLS
    windows: ContextWindows | None = None
    slow_server_seconds: Callable[[RuntimeConfig], float | None] | None = None

    def name(self, config: RuntimeConfig) -> str:
        return config.llm.summary_model_name(self.chat_model_for(config))

    def one_slot(self, config: RuntimeConfig) -> bool:
        """Whether the server answers one request at a time (a home one)."""
        return self.slow_server_seconds is not None and self.slow_server_seconds(config) is not None

    def time_limit(self, config: RuntimeConfig) -> float:
        """Seconds the summary, and the flush, may each take."""
        limit = self.calls.summary_timeout_seconds
        slow = self.slow_server_seconds(config) if self.slow_server_seconds else None
        return limit if slow is None else max(limit, slow)

    async def window(self, model: str) -> int | None:
        if self.windows is None:
            return None
        window = await self.windows.context_window(model)
        return window.tokens if window is not None else None

    async def next_part(
        self, lines: list[str], model: str, fixed_prompt_tokens: int, shrink: float
    ) -> list[str]:
        """The first of `lines` that fit one call to `model` beside a prompt of
        `fixed_prompt_tokens` (the instructions and what rides along with every part),
        scaled by `shrink` after the server refused a part as too long."""
        budget = input_budget(
            await self.window(model),
            answer_tokens=self.calls.summary_max_output_tokens,
            fixed_prompt_tokens=fixed_prompt_tokens,
            configured=10**9,
        )
        return split_lines(lines, max(1, int(budget * shrink)))[0]


def smaller_after(error: LLMError, shrink: float) -> float | None:
    """The share of a part to try again with after `error`: smaller after an overflow,
    while it may still shrink; None for any other error."""
    if (
        error.kind is LLMFailureKind.CONTEXT_OVERFLOW
        and shrink > SHRINK_AFTER_OVERFLOW**MAX_SHRINKS
    ):
        return shrink * SHRINK_AFTER_OVERFLOW
    return None
