"""`mnemobot eval beam PATH...`: how much of a long conversation's evidence the pack holds.

BEAM's conversations (`beam_data`) are tried as a user of the bot would try them:

1. each conversation is written as a Telegram Desktop export (`result.json`) and imported
   into a fresh scope of a temporary workspace by `memory import`'s own code
   (`read_export`, then `write_export`: every message a turn of its author at its time,
   its ref `tg-export:<id>`);
2. every probing question that names its evidence (`source_chat_ids`) gets the pack
   `mnemobot memory pack QUESTION --chat SCOPE --json` prints (`pack_for_turn`, called in
   this process), asked a minute after the conversation's last message (the command
   would use the wall clock, years after the data's dates);
3. an evidence message is found when its ref is among the pack items' `references`, a
   promoted copy counting as its source (`locomo.pack_dia_ids`), or among those of the
   standing preferences every request of the chat carries (`MemoryRecall.standing_block`,
   in the prompt beside the pack: the model has them whatever the question): the message
   ref `tg-export:N` is BEAM message N-1 (`beam_data.message_id_of`). A question scores the share
   of its evidence messages found; an ability, the mean over its questions; overall, the
   mean over all questions.

Beside the pack, the strong simple baseline (`chunk_baseline`) gets, question by question,
exactly the tokens the pack and the standing block used (`diagnostics.total_tokens`, the
sum of its lines' prices, plus the block's) and pays for each 600-character chunk what the
pack pays for a line of it.

Stale-only, for knowledge updates: the pack holds a message of the old value
(`original_info`) and none of the new one (`updated_info`); a question whose evidence is a
plain list counts its newest message as the update and the others as the old value.

The import does not depend on the budget, so every `--budget` is measured on one import.
Items that score alike are ordered by their ids, which the bot draws at random; the eval
draws each message's from its refs (`SeededIds`), so two imports of the same code give the
same figures and a change is measured against that, not against the luck of the draw
(random ids moved the development figures by up to 0.005).
The export is of a chat with a bot (Telegram Desktop's `bot_chat`, the assistant's id the
chat's own), so `memory import` keeps each of the assistant's messages as the reply of the
user message it answers, in one turn whose refs name both, as the bot keeps its own turns.
With `--personal-chat` it is of a chat between two people, every message a turn of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any, TextIO, cast

import orjson

from mnemobot.bot.channels.telegram.export_file import read_export
from mnemobot.bot.cli.memory_import import write_export
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.memory.services.vectors import MemoryVectors
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.systems.memory_steps.context_building import pack_for_turn
from mnemobot_tooling.evals.beam_data import (
    DEFAULT_MESSAGE_GAP_SECONDS,
    KNOWLEDGE_UPDATE,
    BeamConversation,
    BeamQuestion,
    conversation_dirs,
    load_conversation,
    message_id_of,
    write_telegram_export,
)
from mnemobot_tooling.evals.chunk_baseline import ChunkWindowBaseline
from mnemobot_tooling.evals.eval_embeddings import eval_embedder
from mnemobot_tooling.evals.locomo import memory_config_for_budget, pack_dia_ids
from mnemobot_tooling.evals.tuning_overrides import EvalTuning

# The display order of BEAM's abilities; any other ability in a file follows them.
ABILITIES = (
    "information_extraction",
    "multi_session_reasoning",
    "knowledge_update",
    "temporal_reasoning",
    "event_ordering",
    "contradiction_resolution",
    "instruction_following",
    "preference_following",
    "summarization",
)
QUESTION_DELAY = timedelta(minutes=1)
DEFAULT_BUDGET = MemoryConfig().soft_prompt_budget_tokens


# ------------------------------------------------------------------------ scoring


@dataclass(slots=True)
class AbilityTally:
    """Evidence recall per ability (mean over questions of the share found), and stale-only
    knowledge updates."""

    shares: dict[str, float] = field(default_factory=dict)
    questions: dict[str, int] = field(default_factory=dict)
    found: int = 0
    total: int = 0
    stale_only: int = 0
    updates_judged: int = 0

    def add(self, question: BeamQuestion, present: set[int]) -> float:
        hits = sum(1 for message in question.evidence if message in present)
        share = hits / len(question.evidence)
        self.shares[question.ability] = self.shares.get(question.ability, 0.0) + share
        self.questions[question.ability] = self.questions.get(question.ability, 0) + 1
        self.found += hits
        self.total += len(question.evidence)
        if question.ability == KNOWLEDGE_UPDATE and question.older and question.newer:
            self.updates_judged += 1
            self.stale_only += is_stale_only(question, present)
        return share

    def overall(self) -> float:
        asked = sum(self.questions.values())
        return sum(self.shares.values()) / asked if asked else 0.0

    def per_ability(self) -> dict[str, float]:
        ordered = [a for a in ABILITIES if a in self.questions]
        ordered += sorted(a for a in self.questions if a not in ABILITIES)
        return {a: self.shares[a] / self.questions[a] for a in ordered}

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "overall": round(self.overall(), 4),
            "perAbility": {k: round(v, 4) for k, v in self.per_ability().items()},
            "evidenceFound": self.found,
            "evidenceTotal": self.total,
            "staleOnly": self.stale_only,
            "updatesJudged": self.updates_judged,
        }


def is_stale_only(question: BeamQuestion, present: set[int]) -> bool:
    """The old value is there and the update is not (see the module docstring)."""
    return any(m in present for m in question.older) and not any(
        m in present for m in question.newer
    )


def pack_message_ids(refs: set[str]) -> set[int]:
    """BEAM message ids behind the refs the pack's items came from."""
    return {message for ref in refs if (message := message_id_of(ref)) is not None}


# ----------------------------------------------------------------------- running


@dataclass(slots=True)
class BudgetResult:
    budget: int
    max_budget: int
    pack: AbilityTally = field(default_factory=AbilityTally)
    baseline: AbilityTally = field(default_factory=AbilityTally)
    pack_tokens: list[int] = field(default_factory=list)
    baseline_tokens: list[int] = field(default_factory=list)
    build_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def to_json_dict(self) -> dict[str, Any]:
        ordered = sorted(self.build_ms)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else 0.0
        return {
            "budget": self.budget,
            "maxBudget": self.max_budget,
            "pack": self.pack.to_json_dict(),
            "baseline": self.baseline.to_json_dict(),
            "packTokensMean": _mean(self.pack_tokens),
            "baselineTokensMean": _mean(self.baseline_tokens),
            "packBuildMsP95": round(p95, 3),
            "seconds": round(self.seconds, 2),
        }


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / max(1, len(values)), 1)


@dataclass(slots=True)
class BeamResult:
    message_gap_seconds: float
    budgets: list[BudgetResult]
    assistant_replies: bool = False
    conversations: list[str] = field(default_factory=list)
    messages: int = 0
    questions: int = 0
    skipped_evidence: int = 0
    without_evidence: int = 0
    import_seconds: float = 0.0
    seconds: float = 0.0

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "conversations": self.conversations,
            "messages": self.messages,
            "questions": self.questions,
            "skippedEvidence": self.skipped_evidence,
            "questionsWithoutEvidence": self.without_evidence,
            "messageGapSeconds": self.message_gap_seconds,
            "assistantReplies": self.assistant_replies,
            "budgets": [b.to_json_dict() for b in self.budgets],
            "importSeconds": round(self.import_seconds, 2),
            "seconds": round(self.seconds, 2),
        }


@dataclass(frozen=True, slots=True)
class BeamRun:
    """What to measure, as the command line says it."""

    paths: Sequence[Path]
    budgets: Sequence[int] = (DEFAULT_BUDGET,)
    message_gap_seconds: float = DEFAULT_MESSAGE_GAP_SECONDS
    memory_overrides: dict[str, Any] | None = None
    # The export is of a chat with a bot (its messages imported as replies); false: of a
    # chat between two people (`--personal-chat`), every message a turn of its own.
    assistant_replies: bool = True
    embedding_cache: Path | None = None
    details: TextIO | None = None
    progress: TextIO | None = None
    # Other values of the pack's and the extraction's constants (`--tuning`, an ablation).
    tuning: EvalTuning = field(default_factory=EvalTuning)
    # Ask again on what a kept workspace already holds (`--reuse-import`): only what is
    # read when asking may differ from the run that imported it.
    reuse_import: bool = False


def run_eval(run: BeamRun, workspace: Path) -> BeamResult:
    """Import and question every conversation under `run.paths` in `workspace`."""
    return asyncio.run(_run_eval(run, workspace))


class SeededIds:
    """uuid4 drawn from a seed while the eval runs: item ids (and nothing the eval
    reports) come from it. Each imported message reseeds it with its refs, so the ids of
    one message's items do not depend on how many items the messages before it made: a
    change to what is extracted from some messages leaves every other item's id, and the
    order of ties among them, as it was."""

    def __init__(self) -> None:
        self._draw = random.Random(0)
        # Only the thread that imports draws from the seed: the embedding worker's HTTP
        # client also takes uuid4s (its requests' keys), as many as the cache misses.
        self._importing: int | None = None
        self._drawn = uuid.uuid4

    def reseed(self, key: str) -> None:
        self._draw = random.Random(key)
        self._importing = threading.get_ident()

    def uuid4(self) -> uuid.UUID:
        if threading.get_ident() != self._importing:
            return self._drawn()
        return uuid.UUID(int=self._draw.getrandbits(128), version=4)

    @contextlib.contextmanager
    def installed(self) -> Iterator[SeededIds]:
        uuid.uuid4 = self.uuid4
        try:
            yield self
        finally:
            uuid.uuid4 = self._drawn


class _SeededRecord:
    """`MemoryRecord` as the import sees it, each turn's ids drawn from its refs."""

    def __init__(self, record: MemoryRecord, ids: SeededIds) -> None:
        self._record = record
        self._ids = ids
        self.scopes = record.scopes

    def record_turn(self, **turn: Any) -> Any:
        self._ids.reseed(f"{turn['scope']} {turn.get('message_refs')}")
        return self._record.record_turn(**turn)


async def _run_eval(run: BeamRun, workspace: Path) -> BeamResult:
    with SeededIds().installed() as ids:
        return await _measure(run, workspace, ids)


async def _measure(run: BeamRun, workspace: Path, ids: SeededIds) -> BeamResult:
    started = time.perf_counter()
    directories = [d for path in run.paths for d in conversation_dirs(path)]
    configs = [memory_config_for_budget(b, run.memory_overrides) for b in run.budgets]
    write_config = configs[0]
    embedder = eval_embedder(write_config, run.embedding_cache)
    memory = WorkspaceMemory.open(
        workspace, embedder=embedder, ranking=run.tuning.ranking, extraction=run.tuning.extraction
    )
    result = BeamResult(
        message_gap_seconds=run.message_gap_seconds,
        budgets=[
            BudgetResult(c.soft_prompt_budget_tokens, c.max_prompt_budget_tokens) for c in configs
        ],
        assistant_replies=run.assistant_replies,
    )
    exports = workspace / "exports"
    exports.mkdir(parents=True, exist_ok=True)
    try:
        for directory in directories:
            conversation = load_conversation(directory, run.message_gap_seconds)
            result.conversations.append(conversation.name)
            result.messages += len(conversation.messages)
            result.questions += len(conversation.questions)
            result.skipped_evidence += conversation.skipped_evidence
            result.without_evidence += conversation.without_evidence
            if not conversation.messages:
                continue
            scope = f"beam:{_scope_safe(conversation.name)}"
            imported = time.perf_counter()
            if not (run.reuse_import and memory.record.scopes.store(scope).items):
                await asyncio.to_thread(
                    _import,
                    cast(MemoryRecord, _SeededRecord(memory.record, ids)),
                    scope,
                    conversation,
                    exports,
                    write_config,
                    run.assistant_replies,
                )
            if embedder is not None:
                await asyncio.to_thread(_embed_all, memory.vectors, scope)
            result.import_seconds += time.perf_counter() - imported
            _say(
                run.progress,
                f"{conversation.name}: {len(conversation.messages)} messages "
                f"imported in {time.perf_counter() - imported:.1f} s",
            )
            baseline = ChunkWindowBaseline(conversation.messages)
            for config, measured in zip(configs, result.budgets, strict=True):
                asked = time.perf_counter()
                await _ask(memory, scope, conversation, baseline, config, measured, run.details)
                measured.seconds += time.perf_counter() - asked
    finally:
        memory.close()
        if embedder is not None:
            embedder.save()
            await embedder.aclose()
    result.seconds = time.perf_counter() - started
    return result


def _import(
    record: MemoryRecord,
    scope: str,
    conversation: BeamConversation,
    exports: Path,
    config: MemoryConfig,
    assistant_replies: bool,
) -> None:
    """`mnemobot memory import EXPORT --chat SCOPE`, minus opening the workspace: the
    export of a chat with a bot keeps the bot's messages as replies, as the command does."""
    if record.scopes.store(scope).items:
        raise ValueError(f"the workspace already holds memory of {scope}; use a new one")
    path = write_telegram_export(
        conversation,
        exports / f"{_scope_safe(conversation.name)}.json",
        with_bot=assistant_replies,
    )
    export = read_export(path, UTC)
    write_export(record, scope, export, config=config, tz=UTC, assistant=export.bot)


def _embed_all(vectors: MemoryVectors, scope: str) -> None:
    """Every item of the scope with its vector, as `memory maintain` leaves a scope."""
    vectors.wait(3600)
    report = vectors.fill(scope, limit=10_000_000)
    if report.note:
        raise ValueError(f"embedding the items of {scope} failed: {report.note}")


async def _ask(
    memory: WorkspaceMemory,
    scope: str,
    conversation: BeamConversation,
    baseline: ChunkWindowBaseline,
    config: MemoryConfig,
    measured: BudgetResult,
    details: TextIO | None,
) -> None:
    asked_at = conversation.messages[-1].at + QUESTION_DELAY
    standing = memory.recall.standing_block(scope, UTC, config.standing_budget_tokens)
    in_standing = pack_message_ids({ref for item in standing.items for ref in item.references})
    for question in conversation.questions:
        vector = await memory.vectors.query_vector(question.text, config)
        pack = pack_for_turn(
            memory.recall,
            scope,
            question.text,
            asked_at,
            config,
            query_vector=vector,
            standing=standing,
        )
        in_pack = pack_message_ids(pack_dia_ids(pack, memory.scopes, scope)) | in_standing
        tokens = pack.diagnostics.total_tokens + standing.tokens
        in_baseline, baseline_tokens = baseline.retrieve(question.text, tokens)
        measured.pack.add(question, in_pack)
        measured.baseline.add(question, in_baseline)
        measured.pack_tokens.append(tokens)
        measured.baseline_tokens.append(baseline_tokens)
        measured.build_ms.append(pack.diagnostics.build_ms)
        if details is not None:
            details.write(
                orjson.dumps(
                    {
                        "conversation": conversation.name,
                        "budget": measured.budget,
                        "ability": question.ability,
                        "question": question.text,
                        "evidence": list(question.evidence),
                        "pack": sorted(in_pack & set(question.evidence)),
                        "baseline": sorted(in_baseline & set(question.evidence)),
                        "packTokens": tokens,
                        "standingTokens": standing.tokens,
                        "packItems": [p.item.id for p in pack.items],
                    }
                ).decode()
                + "\n"
            )


def _say(stream: TextIO | None, line: str) -> None:
    if stream is not None:
        print(line, file=stream, flush=True)


def _scope_safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name).strip("-") or "conversation"
