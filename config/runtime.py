"""The runtime config model: every tunable default of mnemobot lives here.

`preferences/runtime-config.json` is validated against these models (camelCase keys,
unknown keys rejected), written with the defaults on first start and re-read when it
changes on disk. See `RuntimeConfigStore` for the reload rules.

Channel settings are the exception: each channel keeps its section (`telegram`, `console`)
with its own code and adds it through `with_sections`, so a new channel needs no edit here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.alias_generators import to_camel


class ConfigSection(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


SectionT = TypeVar("SectionT", bound=ConfigSection)


class AssistantConfig(ConfigSection):
    name: str = "mnemobot"
    # IANA zone name such as "Europe/Berlin"; null means the machine's local zone.
    timezone: str | None = None
    # Extra operator instructions appended to the built-in system prompt.
    instructions: str | None = None
    # Longer instructions are cut to this many estimated tokens.
    instructions_budget_tokens: int = Field(2_000, ge=50)

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
    # The item recording a whole conversation turn.
    turn: float = Field(0.01, ge=-1, le=1)


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


class ExtractionConfig(ConfigSection):
    """How sure the rule-based extraction (memory.extraction) is of what it reads in a turn.

    Confidence decides promotion: an item at or above memory.promotionMinConfidence (0.75)
    becomes durable and shows in every later prompt. The defaults keep the user's own
    explicit statements and reports above it, and guesses, suggestions, hedged words and
    advice among several people below it. Each statement pattern's own confidence sits
    beside the pattern in memory.extraction.personal_rules.
    """

    # The item recording the whole turn: below promotion, so it stays an episode. It
    # matters a bit more when something was derived from it.
    turn_confidence: float = Field(0.65, ge=0, le=1)
    turn_salience: float = Field(0.5, ge=0, le=1)
    turn_with_findings_salience: float = Field(0.6, ge=0, le=1)
    # "I think", "maybe", "sometimes": a statement never scores above this.
    hedged_confidence_cap: float = Field(0.6, ge=0, le=1)
    # An order or rule from the user ("never push to main", "tests must pass").
    constraint_confidence: float = Field(0.85, ge=0, le=1)
    # An order among several people (mostly advice to each other), or a soft rule
    # ("we always ...", "every release needs to ...").
    weak_constraint_confidence: float = Field(0.7, ge=0, le=1)
    # A fix someone reports as done, and one only suggested (by the assistant, "try ...").
    confirmed_fix_confidence: float = Field(0.85, ge=0, le=1)
    suggested_fix_confidence: float = Field(0.65, ge=0, le=1)
    # A command suggested right after an error, as a step of its fix.
    suggested_fix_command_confidence: float = Field(0.7, ge=0, le=1)
    # A fix at or above this is tagged "confirmed", else "suggested".
    confirmed_fix_min_confidence: float = Field(0.8, ge=0, le=1)
    # A failure sentence naming a concrete error (an exception, an exit code, a quote),
    # told by the user; any other failure sentence.
    concrete_failure_confidence: float = Field(0.8, ge=0, le=1)
    vague_failure_confidence: float = Field(0.7, ge=0, le=1)
    # An error line of a log or traceback from the user or a tool; one the assistant wrote.
    error_line_confidence: float = Field(0.85, ge=0, le=1)
    assistant_error_line_confidence: float = Field(0.7, ge=0, le=1)
    # A shell command that was run; one the assistant only suggested.
    command_confidence: float = Field(0.8, ge=0, le=1)
    suggested_command_confidence: float = Field(0.7, ge=0, le=1)
    # Caps per turn, so a pasted log cannot flood memory.
    max_derived_items: int = Field(12, ge=0, le=1_000)
    max_commands: int = Field(6, ge=0, le=1_000)
    max_errors: int = Field(3, ge=0, le=1_000)
    # Characters of each side kept in the turn item.
    turn_user_chars: int = Field(1200, ge=40, le=100_000)
    turn_assistant_chars: int = Field(800, ge=40, le=100_000)


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
    # Facts the compaction flush keeps: their confidence and salience (ranking inputs).
    flush_confidence: float = Field(0.8, ge=0, le=1)
    flush_salience: float = Field(0.6, ge=0, le=1)
    # Scopes kept loaded (most recently used); the others reload from their files when
    # their chat speaks again (a cold load: about a second at 100k items).
    max_cached_scopes: int = Field(256, ge=1, le=100_000)
    ranking: RankingConfig = RankingConfig()
    extraction: ExtractionConfig = ExtractionConfig()

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
    # How much of each dropped message the summary call sees.
    summary_message_chars: int = Field(300, ge=50)
    # The memory-flush call (durable facts out of the dropped messages): each message is
    # cut to flushMessageChars, the excerpt to its last flushInputChars, and the memory it
    # must not repeat to flushKnownFactsBudgetTokens. Lower them for a summary model with
    # a small context (a token is about 3-4 characters).
    flush_message_chars: int = Field(1_200, ge=50)
    flush_input_chars: int = Field(24_000, ge=1_000)
    flush_known_facts_budget_tokens: int = Field(1_200, ge=0)
    flush_temperature: float = Field(0.2, ge=0, le=2)


class ToolLoopConfig(ConfigSection):
    max_llm_calls: int = Field(20, ge=1, le=1_000)
    max_tool_executions: int = Field(80, ge=0, le=10_000)


class RuntimeConfig(ConfigSection):
    assistant: AssistantConfig = AssistantConfig()
    llm: LlmConfig = LlmConfig()
    memory: MemoryConfig = MemoryConfig()
    compaction: CompactionConfig = CompactionConfig()
    tool_loop: ToolLoopConfig = ToolLoopConfig()

    def compaction_threshold_tokens(self) -> int:
        """Estimated request size past which AutoCompaction compacts (80% of the model's input)."""
        return min(int(self.llm.max_input_tokens * 0.8), self.compaction.max_context_tokens)

    def to_json_dict(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, mode="json")

    def section(self, name: str, model: type[SectionT]) -> SectionT:
        """A section added with `with_sections` (a channel's own settings), typed."""
        value = getattr(self, name, None)
        if not isinstance(value, model):
            raise LookupError(
                f"the runtime config has no {name!r} section of type {model.__name__}; "
                "pass it to RuntimeConfigStore(sections=...)"
            )
        return value


def with_sections(sections: Mapping[str, type[ConfigSection]]) -> type[RuntimeConfig]:
    """RuntimeConfig plus top-level sections owned by code above this layer (channels).

    Each section is validated, defaulted and written like a built-in one, so the file keeps
    one flat shape (`"telegram": {...}`) while its model lives with the channel. Section
    names are snake_case; the file key is their camelCase alias.
    """
    if not sections:
        return RuntimeConfig
    taken = sorted(set(sections) & set(RuntimeConfig.model_fields))
    if taken:
        raise ValueError(f"runtime config sections already built in: {', '.join(taken)}")
    fields: dict[str, Any] = {name: (model, model()) for name, model in sections.items()}
    return create_model("RuntimeConfigWithSections", __base__=RuntimeConfig, **fields)
