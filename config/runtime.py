"""The runtime config model: every tunable default of mnemobot lives here.

`preferences/runtime-config.json` is validated against these models (camelCase keys,
unknown keys rejected), written with the defaults on first start and re-read when it
changes on disk. See `RuntimeConfigStore` for the reload rules.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel


class ConfigSection(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class AssistantConfig(ConfigSection):
    name: str = "mnemobot"
    # IANA zone name such as "Europe/Berlin"; null means the machine's local zone.
    timezone: str | None = None
    # Extra operator instructions appended to the built-in system prompt.
    instructions: str | None = None

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown timezone {value!r}; use an IANA name") from None
        return value

    def tzinfo(self) -> tzinfo:
        """The configured zone, or the machine's local zone when none is set."""
        if self.timezone:
            return ZoneInfo(self.timezone)
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC


class LlmConfig(ConfigSection):
    model: str | None = None
    summary_model: str | None = None
    temperature: float = Field(0.7, ge=0, le=2)
    max_input_tokens: int = Field(128_000, ge=1_000)
    max_output_tokens: int = Field(2048, ge=16)
    request_timeout_seconds: float = Field(120, gt=0, le=3600)
    max_retries: int = Field(2, ge=0, le=10)


class TypeBoostConfig(ConfigSection):
    """Added to an item's score by its type: what must not be forgotten ranks a bit higher."""

    constraint: float = Field(0.05, ge=-1, le=1)
    preference: float = Field(0.04, ge=-1, le=1)
    decision: float = Field(0.03, ge=-1, le=1)
    fix: float = Field(0.03, ge=-1, le=1)
    failure: float = Field(0.02, ge=-1, le=1)
    project_fact: float = Field(0.02, ge=-1, le=1)
    task_state: float = Field(0.01, ge=-1, le=1)
    command_result: float = Field(0.0, ge=-1, le=1)


class RankingConfig(ConfigSection):
    """How memory items are scored into the MemoryPack (memory.scoring, memory.pack).

    score = decay * (relevance_weight * relevance + recency_weight * recency
                     + salience_weight * salience + confidence_weight * confidence
                     + type boost + tag boost)
    Relevance (BM25 scaled to 0..1 within the query's candidates) carries most of the
    weight: the other terms together cannot lift a half-as-relevant item over the best
    match, so for a question the best-matching items win and the rest break near-ties.
    """

    relevance_weight: float = Field(0.75, ge=0)
    recency_weight: float = Field(0.10, ge=0)
    salience_weight: float = Field(0.075, ge=0)
    confidence_weight: float = Field(0.075, ge=0)
    # Recency halves every this many days (age since the item was last updated).
    recency_half_life_days: float = Field(14, gt=0)
    # Decay of durable (semantic, procedural) items: the multiplier falls from 1 toward
    # this floor, halving the gap every memory.decayDays; it never reaches 0.
    decay_floor: float = Field(0.5, gt=0, le=1)
    type_boost: TypeBoostConfig = TypeBoostConfig()
    # Added when the item shares a tag with the query.
    tag_match_boost: float = Field(0.05, ge=0, le=1)
    # Past the soft budget, only items scoring at least this are added (up to the max).
    overflow_min_score: float = Field(0.6, ge=0)
    # BM25 hits kept (best first, all layers together) before the full score is computed.
    candidate_pool: int = Field(256, ge=1, le=100_000)
    # Conversation windows: turns of one conversation (each less than this many minutes
    # after the previous matching turn) share one episodic topK slot, so the pack shows
    # a stretch of the conversation around a remembered moment instead of lone lines.
    # Every turn still costs its own tokens. 0 turns windows off (one slot per turn).
    episode_window_gap_minutes: float = Field(30, ge=0)
    # At most this many turns in one window; a longer stretch opens another slot.
    episode_window_max_turns: int = Field(8, ge=1, le=1_000)
    # A turn gets this share of the relevance of a matching turn right before or after it
    # (at most neighbour_gap_seconds apart), so an answer is found through its question.
    neighbour_relevance_share: float = Field(0.5, ge=0, le=1)
    neighbour_gap_seconds: float = Field(120, ge=0)


class MemoryConfig(ConfigSection):
    enabled: bool = True
    scope: Literal["chat", "global"] = "chat"
    recent_days: int = Field(7, ge=0, le=365)
    soft_prompt_budget_tokens: int = Field(1800, ge=0)
    max_prompt_budget_tokens: int = Field(3500, ge=0)
    working_top_k: int = Field(6, ge=0)
    episodic_top_k: int = Field(8, ge=0)
    semantic_top_k: int = Field(6, ge=0)
    procedural_top_k: int = Field(4, ge=0)
    promotion_enabled: bool = True
    promotion_min_confidence: float = Field(0.75, ge=0, le=1)
    decay_enabled: bool = True
    decay_days: float = Field(30, gt=0)
    code_aware_extraction_enabled: bool = True
    legacy_daily_notes_enabled: bool = True
    # Budgets of the other system-prompt parts, in estimated tokens.
    operator_memory_budget_tokens: int = Field(2000, ge=0)
    scope_memory_budget_tokens: int = Field(2000, ge=0)
    legacy_context_budget_tokens: int = Field(1500, ge=0)
    ranking: RankingConfig = RankingConfig()

    @model_validator(mode="after")
    def _budgets_ordered(self) -> MemoryConfig:
        if self.max_prompt_budget_tokens < self.soft_prompt_budget_tokens:
            raise ValueError(
                "memory.maxPromptBudgetTokens must be >= memory.softPromptBudgetTokens"
            )
        return self


class CompactionConfig(ConfigSection):
    enabled: bool = True
    max_context_tokens: int = Field(50_000, ge=1_000)
    keep_last_messages: int = Field(20, ge=1, le=1_000)
    summary_max_output_tokens: int = Field(500, ge=50)
    summary_timeout_seconds: float = Field(15, gt=0)
    summary_temperature: float = Field(0.3, ge=0, le=2)
    # Tool results older than this many user turns are stubbed in the LLM request.
    prune_tool_results_after_turns: int = Field(3, ge=0)
    tool_result_eviction_chars: int = Field(80_000, ge=1_000)


class ToolLoopConfig(ConfigSection):
    max_llm_calls: int = Field(20, ge=1, le=1_000)
    max_tool_executions: int = Field(80, ge=0, le=10_000)


class TelegramConfig(ConfigSection):
    queue_mode: Literal["queue", "collect"] = "queue"
    queue_cap: int = Field(20, ge=1, le=1_000)
    typing_interval_seconds: float = Field(4, gt=0, le=5)


# On a model whose context window is smaller than llm.maxInputTokens, the memory parts of
# the prompt (pack, operator notes, the chat's MEMORY.md) together take at most this share
# of the input, so the conversation keeps room; and at most this share of the window is set
# aside for the answer. Not tunable: they only scale the tunable budgets down to a window.
SMALL_WINDOW_MEMORY_SHARE = 0.3
SMALL_WINDOW_ANSWER_SHARE = 0.25
_MEMORY_BUDGET_FIELDS = (
    "soft_prompt_budget_tokens",
    "max_prompt_budget_tokens",
    "operator_memory_budget_tokens",
    "scope_memory_budget_tokens",
    "legacy_context_budget_tokens",
)


class RuntimeConfig(ConfigSection):
    assistant: AssistantConfig = AssistantConfig()
    llm: LlmConfig = LlmConfig()
    memory: MemoryConfig = MemoryConfig()
    compaction: CompactionConfig = CompactionConfig()
    tool_loop: ToolLoopConfig = ToolLoopConfig()
    telegram: TelegramConfig = TelegramConfig()

    def compaction_threshold_tokens(self) -> int:
        """Estimated request size past which AutoCompaction compacts (80% of the model's input)."""
        return min(int(self.llm.max_input_tokens * 0.8), self.compaction.max_context_tokens)

    def for_context_window(self, window_tokens: int) -> RuntimeConfig:
        """This config for a model whose whole context (prompt and answer) is `window_tokens`.

        The input limit becomes the smaller of llm.maxInputTokens and the window less the
        room for an answer; when that cuts it, the memory budgets shrink in proportion, so
        compaction and the prompt fit a small local model. Applying it twice changes nothing.
        """
        answer_room = min(
            self.llm.max_output_tokens, int(window_tokens * SMALL_WINDOW_ANSWER_SHARE)
        )
        input_limit = max(1, window_tokens - answer_room)
        if input_limit >= self.llm.max_input_tokens:
            return self
        memory = self.memory
        memory_tokens = (
            memory.max_prompt_budget_tokens
            + memory.operator_memory_budget_tokens
            + memory.scope_memory_budget_tokens
        )
        if memory_tokens > SMALL_WINDOW_MEMORY_SHARE * input_limit:
            scale = SMALL_WINDOW_MEMORY_SHARE * input_limit / memory_tokens
            memory = memory.model_copy(
                update={f: int(getattr(memory, f) * scale) for f in _MEMORY_BUDGET_FIELDS}
            )
        # model_copy skips validation on purpose: a window may be below maxInputTokens' floor.
        llm = self.llm.model_copy(update={"max_input_tokens": input_limit})
        return self.model_copy(update={"llm": llm, "memory": memory})

    def to_json_dict(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, mode="json")
