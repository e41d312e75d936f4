"""`mnemobot eval locomo FILE`: how much of the evidence a question needs the MemoryPack holds.

Each conversation of a LoCoMo-format file (Maharana et al., 2024) is written into a fresh
memory scope through the bot's own write path (`MemoryPersist.process` on a real
`TurnContext` whose `occurred_at` is the turn's time, as any caller replaying a past
conversation sets it), then every question of categories 1-4 gets the pack
ContextBuilding would build (`pack_for_turn`), with the question as the user's message
and the clock just after the last session (the finished days' digests written, as
maintenance would have by then). The score is the share of the question's
evidence turns (`dia_id`s) found in the pack's items.

How a two-person dialogue maps onto the bot: every LoCoMo turn is one user message from
its speaker (`ChatRef.user_name`), with an empty reply; a shared photo is added to the
text as "[shares a photo: <caption>]", which is what a bot that describes images would
see. The turn's `dia_id` is its message ref, so every item written from it (the turn
item, the derived facts, their promoted copies) carries it in `references`.

Budget: `--budget N` sets `memory.softPromptBudgetTokens` to N and keeps the default
ratio of max to soft budget (3500/1800), so N=1800 is exactly the bot's default config.
An ablation changes one of the pack's constants with `--tuning` (`tuning_overrides`), e.g.
`--tuning '{"ranking": {"turnsAroundHits": 0}}'`; `--memory` takes the operator's memory
settings (an embedding server).
The pack may pass the soft budget (up to the max) for high-scoring items, as in the bot;
the mean tokens it used are reported beside the recall so the comparison stays honest.

Three baselines (`locomo_baselines`) on the same soft budget, each turn priced
as the pack prices its line: newest turns first; plain `rank_bm25.BM25Okapi` over single
turns; and the strong one, BM25+ over the project's own terms with each hit's turns
before and after it. The data dates only sessions, so turns of a session are spaced
`--turn-gap-seconds` apart (30 by default); the pack's neighbour rules look at time, so
docs/measured.md shows two spacings.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from mnemobot.bot.cli.progress import ProgressBar, terminal_progress
from mnemobot.config.runtime import MemoryConfig, RuntimeConfig
from mnemobot.conversation.session import AgentSession
from mnemobot.memory.pack.build import MemoryPack
from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.services.vectors import MemoryVectors
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX
from mnemobot.memory.upkeep.digest_days import write_missing_digests
from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot.systems.memory_steps.context_building import pack_for_turn
from mnemobot.systems.memory_steps.memory_persist import MemoryPersist
from mnemobot_tooling.evals.eval_embeddings import eval_embedder
from mnemobot_tooling.evals.locomo_baselines import Bm25Baseline, Bm25WindowBaseline, newest_first
from mnemobot_tooling.evals.tuning_overrides import EvalTuning, TuningError, tuning_from_json

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# Consecutive turns of a session are this far apart by default (the data only dates
# sessions; `--turn-gap-seconds` sets another spacing).
TURN_SPACING_SECONDS = 30.0
# The questions are asked this long after the last turn.
QUESTION_DELAY_SECONDS = 60
_DEFAULTS = MemoryConfig()
_DIA_ID = re.compile(r"^D\d+:\d+$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


# ------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class DialogueTurn:
    dia_id: str
    speaker: str
    text: str
    at: datetime

    @property
    def line(self) -> str:
        """The turn as one line, the way the baselines see and cost it."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(slots=True)
class Conversation:
    sample_id: str
    turns: list[DialogueTurn]
    questions: list[EvalQuestion]
    skipped_evidence: int = 0


def parse_session_time(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> an aware UTC datetime."""
    cleaned = " ".join(text.replace(",", " ").split())
    for pattern in ("%I:%M %p on %d %B %Y", "%H:%M on %d %B %Y", "%I:%M %p on %d %b %Y"):
        try:
            return datetime.strptime(cleaned, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unrecognized session date {text!r}")


def _turn_text(raw: dict[str, Any]) -> str:
    text = str(raw.get("text") or "").strip()
    caption = str(raw.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def load_conversations(
    path: Path, turn_gap_seconds: float = TURN_SPACING_SECONDS
) -> list[Conversation]:
    """Read a LoCoMo-format file; evidence ids that are malformed or unknown are skipped.

    The data dates only sessions: turn n of a session is `turn_gap_seconds` * n after it.
    """
    data = orjson.loads(path.read_bytes())
    if not isinstance(data, list):
        raise ValueError("a LoCoMo file holds a JSON list of conversations")
    conversations: list[Conversation] = []
    for sample in data:
        raw = sample["conversation"]
        sessions = sorted((int(m.group(1)), key) for key in raw if (m := _SESSION_KEY.match(key)))
        turns: list[DialogueTurn] = []
        for number, key in sessions:
            started = parse_session_time(raw[f"session_{number}_date_time"])
            for position, turn in enumerate(raw[key] or []):
                at = started + timedelta(seconds=position * turn_gap_seconds)
                text = _turn_text(turn)
                if text:
                    turns.append(DialogueTurn(str(turn["dia_id"]), str(turn["speaker"]), text, at))
        known = {turn.dia_id for turn in turns}
        questions: list[EvalQuestion] = []
        skipped = 0
        for qa in sample.get("qa", []):
            category = int(qa.get("category", 0))
            if category not in CATEGORIES:
                continue
            evidence: list[str] = []
            for ref in qa.get("evidence") or []:
                ref = str(ref).strip()
                if _DIA_ID.match(ref) and ref in known:
                    evidence.append(ref)
                else:
                    skipped += 1
            if evidence:
                questions.append(
                    EvalQuestion(str(qa["question"]), category, tuple(dict.fromkeys(evidence)))
                )
        conversations.append(
            Conversation(
                str(sample.get("sample_id", len(conversations))), turns, questions, skipped
            )
        )
    return conversations


# ------------------------------------------------------------------------ scoring


@dataclass(slots=True)
class RecallTally:
    """Mean over questions of the share of each question's evidence found; per category too.

    A question with one evidence turn counts as much as one with five, the usual way
    evidence recall on LoCoMo is averaged (plain BM25 over turns finds 0.67 that way).
    """

    shares: dict[int, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    questions: dict[int, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    found: int = 0
    total: int = 0

    def add(self, question: EvalQuestion, present: set[str]) -> None:
        hits = sum(1 for ref in question.evidence if ref in present)
        self.shares[question.category] += hits / len(question.evidence)
        self.questions[question.category] += 1
        self.found += hits
        self.total += len(question.evidence)

    def overall(self) -> float:
        asked = sum(self.questions.values())
        return sum(self.shares.values()) / asked if asked else 0.0

    def per_category(self) -> dict[str, float]:
        return {
            CATEGORIES[c]: (self.shares[c] / self.questions[c] if self.questions[c] else 0.0)
            for c in CATEGORIES
        }

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "overall": round(self.overall(), 4),
            "perCategory": {k: round(v, 4) for k, v in self.per_category().items()},
            "evidenceFound": self.found,
            "evidenceTotal": self.total,
        }


def pack_dia_ids(pack: MemoryPack, scopes: ScopeRuntime, scope: str) -> set[str]:
    """The dia_ids the pack's items came from; a promoted copy counts as its source's."""
    store = scopes.store(scope)
    found: set[str] = set()
    for packed in pack.items:
        # What the line shows: a day's digest names only the messages of its lines shown.
        pending = list(packed.references)
        seen: set[str] = set()
        while pending:
            ref = pending.pop()
            if ref in seen:
                continue
            seen.add(ref)
            if ref.startswith(PROMOTED_FROM_PREFIX):
                source = store.get(ref[len(PROMOTED_FROM_PREFIX) :])
                if source is not None:
                    pending.extend(source.references)
            else:
                found.add(ref)
    return found


# ----------------------------------------------------------------------- running


def memory_config_for_budget(
    budget: int | None, overrides: dict[str, Any] | None = None
) -> MemoryConfig:
    """The memory config (defaults, or `overrides` over them, keyed as in the runtime
    config's `memory` section), with the soft budget set and the max scaled alike."""
    base = MemoryConfig.model_validate(overrides) if overrides else _DEFAULTS
    if budget is None:
        return base
    ratio = _DEFAULTS.max_prompt_budget_tokens / _DEFAULTS.soft_prompt_budget_tokens
    return base.model_copy(
        update={
            "soft_prompt_budget_tokens": budget,
            "max_prompt_budget_tokens": max(budget, math.ceil(budget * ratio)),
        }
    )


class MemoryWriteFailed(Exception):
    """MemoryPersist could not write a turn (it logged why); the eval cannot go on."""


class _OneLineErrors(logging.Formatter):
    """Log lines with the exception as `Type: message`, not a traceback, for a CLI user."""

    def formatException(self, ei: Any) -> str:
        kind, error = ei[0], ei[1]
        return f"  {kind.__name__ if kind else 'Error'}: {error}"


async def ingest(
    memory: WorkspaceMemory,
    scope: str,
    conversation: Conversation,
    config: RuntimeConfig,
    progress: ProgressBar | None = None,
) -> None:
    """Write every turn through MemoryPersist, as the bot does after each answered turn."""
    persist = MemoryPersist(memory.record, memory.forget)
    channel, _, chat_id = scope.partition(":")
    # Dated like the conversation it replays: its first turn (an empty one: the epoch).
    started = conversation.turns[0].at.timestamp() if conversation.turns else 0.0
    session = AgentSession.new(scope, started)
    for turn in conversation.turns:
        ctx = TurnContext(
            chat=ChatRef(channel, chat_id, user_id=turn.speaker, user_name=turn.speaker),
            session=session,
            user_text=turn.text,
            config=config,
            now=turn.at,
            model="eval",
            scope=scope,
            message_refs=[turn.dia_id],
            reply="",
            occurred_at=turn.at.timestamp(),
        )
        if persist.enabled(ctx):
            await persist.process(ctx)
        if ctx.memory_write_failed:
            raise MemoryWriteFailed(f"memory write failed at {turn.dia_id} of {scope}")
        if progress is not None:
            progress.advance(label=f"{conversation.sample_id} ingest")


@dataclass(slots=True)
class EvalResult:
    budget: int
    max_budget: int
    conversations: int
    questions: int
    skipped_evidence: int
    pack: RecallTally
    bm25: RecallTally
    bm25_windows: RecallTally
    newest: RecallTally
    turn_gap_seconds: float
    pack_tokens: list[int]
    build_ms: list[float]
    seconds: float
    # Embeddings on: how many packs used meaning, or why not ("timed out after 1 s"...).
    meaning: Counter[str] = field(default_factory=Counter)
    items_without_vector: int = 0

    def to_json_dict(self) -> dict[str, Any]:
        ordered = sorted(self.build_ms)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else 0.0
        return {
            "budget": self.budget,
            "turnGapSeconds": self.turn_gap_seconds,
            "maxBudget": self.max_budget,
            "conversations": self.conversations,
            "questions": self.questions,
            "skippedEvidence": self.skipped_evidence,
            "pack": self.pack.to_json_dict(),
            "bm25": self.bm25.to_json_dict(),
            "bm25Windows": self.bm25_windows.to_json_dict(),
            "newestFirst": self.newest.to_json_dict(),
            "packTokensMean": round(sum(self.pack_tokens) / max(1, len(self.pack_tokens)), 1),
            "packTokensMax": max(self.pack_tokens, default=0),
            "packBuildMsP95": round(p95, 3),
            "meaning": dict(self.meaning),
            "seconds": round(self.seconds, 2),
        }


def run_eval(
    path: Path,
    workspace: Path,
    *,
    budget: int | None = None,
    turn_gap_seconds: float = TURN_SPACING_SECONDS,
    memory_overrides: dict[str, Any] | None = None,
    show_progress: bool = False,
    embedding_cache: Path | None = None,
    tuning: EvalTuning | None = None,
) -> EvalResult:
    """Ingest and question every conversation of `path` in `workspace`; `tuning`: other
    values of the pack's and the extraction's constants (an ablation).

    `show_progress` draws a bar on stderr when stderr is a terminal. With
    `memory.embeddings` on, each conversation's items are embedded before its questions
    (as maintenance would have done by then), and each question is embedded as the bot
    embeds a message (`embedding_cache`: see `eval_embeddings`).
    """
    return asyncio.run(
        _run_eval(
            path,
            workspace,
            budget=budget,
            turn_gap_seconds=turn_gap_seconds,
            memory_overrides=memory_overrides,
            show_progress=show_progress,
            embedding_cache=embedding_cache,
            tuning=tuning or EvalTuning(),
        )
    )


async def _run_eval(
    path: Path,
    workspace: Path,
    *,
    budget: int | None,
    turn_gap_seconds: float,
    memory_overrides: dict[str, Any] | None,
    show_progress: bool,
    embedding_cache: Path | None,
    tuning: EvalTuning,
) -> EvalResult:
    started = time.perf_counter()
    conversations = load_conversations(path, turn_gap_seconds)
    memory_config = memory_config_for_budget(budget, memory_overrides)
    config = RuntimeConfig().model_copy(update={"memory": memory_config})
    embedder = eval_embedder(memory_config, embedding_cache)
    memory = WorkspaceMemory.open(
        workspace, embedder=embedder, ranking=tuning.ranking, extraction=tuning.extraction
    )
    total_steps = sum(len(c.turns) + len(c.questions) for c in conversations)
    progress = terminal_progress(total_steps) if show_progress else None
    soft = memory_config.soft_prompt_budget_tokens
    result = EvalResult(
        budget=soft,
        max_budget=memory_config.max_prompt_budget_tokens,
        conversations=len(conversations),
        questions=sum(len(c.questions) for c in conversations),
        skipped_evidence=sum(c.skipped_evidence for c in conversations),
        pack=RecallTally(),
        bm25=RecallTally(),
        bm25_windows=RecallTally(),
        newest=RecallTally(),
        turn_gap_seconds=turn_gap_seconds,
        pack_tokens=[],
        build_ms=[],
        seconds=0.0,
    )
    try:
        for conversation in conversations:
            scope = f"locomo:{_scope_safe(conversation.sample_id)}"
            if memory.scopes.store(scope).items:
                raise ValueError(f"the workspace already holds memory of {scope}; use a new one")
            await ingest(memory, scope, conversation, config, progress)
            if not conversation.turns:
                continue
            if embedder is not None:
                await asyncio.to_thread(_embed_all, memory.vectors, scope, result)
            asked_at = conversation.turns[-1].at + timedelta(seconds=QUESTION_DELAY_SECONDS)
            # The finished days' digests, as maintenance would have written them by then.
            write_missing_digests(memory.scopes.store(scope), UTC, asked_at.timestamp())
            baseline = Bm25Baseline(conversation.turns)
            windows = Bm25WindowBaseline(conversation.turns)
            for question in conversation.questions:
                vector = await memory.vectors.query_vector(question.text, memory_config)
                pack = pack_for_turn(
                    memory.recall,
                    scope,
                    question.text,
                    asked_at,
                    memory_config,
                    query_vector=vector,
                )
                if embedder is not None:
                    result.meaning[pack.diagnostics.meaning.split(" (")[0]] += 1
                result.pack.add(question, pack_dia_ids(pack, memory.scopes, scope))
                result.pack_tokens.append(pack.diagnostics.total_tokens)
                result.build_ms.append(pack.diagnostics.build_ms)
                result.bm25.add(question, baseline.retrieve(question.text, soft))
                result.bm25_windows.add(question, windows.retrieve(question.text, soft))
                result.newest.add(question, newest_first(conversation.turns, soft))
                if progress is not None:
                    progress.advance(label=f"{conversation.sample_id} questions")
    finally:
        if progress is not None:
            progress.close()
        memory.close()
        if embedder is not None:
            embedder.save()
            await embedder.aclose()
    result.seconds = time.perf_counter() - started
    return result


def _embed_all(vectors: MemoryVectors, scope: str, result: EvalResult) -> None:
    """Every item of the scope with its vector, as maintenance leaves a scope."""
    vectors.wait(3600)
    report = vectors.fill(scope, limit=10_000_000)
    if report.note:
        raise ValueError(f"embedding the items of {scope} failed: {report.note}")
    result.items_without_vector += report.missing


def _scope_safe(sample_id: str) -> str:
    return re.sub(r"[^\w.-]+", "-", sample_id).strip("-") or "sample"


# --------------------------------------------------------------------------- CLI


def format_report(result: EvalResult) -> str:
    data = result.to_json_dict()
    rows = [
        ("memory pack", result.pack),
        ("bm25 turns", result.bm25),
        ("bm25+ windows", result.bm25_windows),
        ("newest first", result.newest),
    ]
    header = f"{'':<14}{'overall':>9}" + "".join(f"{name:>13}" for name in CATEGORIES.values())
    lines = [
        f"LoCoMo evidence recall: {result.conversations} conversations, {result.questions} "
        f"questions (categories 1-4), soft budget {result.budget} tokens "
        f"(pack max {result.max_budget}), {result.turn_gap_seconds:g} s between turns",
        header,
    ]
    for name, tally in rows:
        per = tally.per_category()
        lines.append(
            f"{name:<14}{tally.overall():>9.3f}" + "".join(f"{per[c]:>13.3f}" for c in per)
        )
    lines.append(
        f"pack tokens: mean {data['packTokensMean']}, max {data['packTokensMax']}; "
        f"pack build p95 {data['packBuildMsP95']} ms; skipped evidence ids "
        f"{result.skipped_evidence}"
    )
    if result.meaning:
        lines.append(f"packs by meaning: {dict(result.meaning)}")
    lines.append(f"time taken: {result.seconds:.1f} s")
    return "\n".join(lines)


def parse_memory_overrides(text: str | None) -> dict[str, Any] | None:
    """`--memory JSON`: memory settings over the defaults, checked; ValueError says what is
    wrong in one line."""
    if not text:
        return None
    try:
        overrides = orjson.loads(text)
        if not isinstance(overrides, dict):
            raise ValueError("not a JSON object")
        MemoryConfig.model_validate(overrides)
    except ValidationError as exc:
        where = ".".join(str(part) for part in exc.errors()[0]["loc"])
        why = exc.errors()[0]["msg"]
        if where.split(".")[0] in MemoryConfig.retired:
            why = "not a setting any more; a tuning constant goes in --tuning"
        raise ValueError(f"--memory: {where}: {why}") from None
    except ValueError as exc:
        raise ValueError(f"--memory must be a JSON object ({exc})") from None
    return overrides


def eval_command(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        print(f"mnemobot: no such file: {path}", file=sys.stderr)
        return 2
    if args.budget is not None and args.budget < 1:
        print("mnemobot: --budget must be a positive number of tokens", file=sys.stderr)
        return 2
    if args.turn_gap_seconds < 0:
        print("mnemobot: --turn-gap-seconds must be 0 or more", file=sys.stderr)
        return 2
    try:
        overrides = parse_memory_overrides(args.memory)
    except ValueError as exc:
        print(f"mnemobot: {exc}", file=sys.stderr)
        return 2
    try:
        tuning = tuning_from_json(args.tuning)
    except TuningError as exc:
        print(f"mnemobot: --tuning: {exc}", file=sys.stderr)
        return 2
    show_progress = not args.no_progress
    cache = Path(args.embedding_cache) if args.embedding_cache else None
    # The bot's systems log their failures (a memory write that raised); say why briefly.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineErrors("mnemobot: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    try:
        if args.workspace:
            workspace = Path(args.workspace)
            workspace.mkdir(parents=True, exist_ok=True)
            result = run_eval(
                path,
                workspace,
                budget=args.budget,
                turn_gap_seconds=args.turn_gap_seconds,
                memory_overrides=overrides,
                show_progress=show_progress,
                embedding_cache=cache,
                tuning=tuning,
            )
        else:
            with tempfile.TemporaryDirectory(prefix="mnemobot-eval-") as tmp:
                result = run_eval(
                    path,
                    Path(tmp),
                    budget=args.budget,
                    turn_gap_seconds=args.turn_gap_seconds,
                    memory_overrides=overrides,
                    show_progress=show_progress,
                    embedding_cache=cache,
                    tuning=tuning,
                )
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError, MemoryWriteFailed) as exc:
        print(f"mnemobot: cannot evaluate {path}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout.write(orjson.dumps(result.to_json_dict(), option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
    else:
        print(format_report(result))
    return 0
