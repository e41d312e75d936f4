"""`mnemobot bench consolidation`: model calls and tokens consolidation costs per 100 turns.

Turns of the LoCoMo development file (one speaker as the user, the other as the assistant)
go through the bot's real write path (`MemoryRecord.record_turn`: daily note, items,
promotion) into one scope; every `--every` turns the scope's maintenance runs with its
real steps, and its model calls are counted. The model is a stand-in that keeps every old
entry and adds one bullet per new user line, trimming the oldest (named as superseded) at
the cap: MEMORY.md grows as fast as it can, so the output figure is an upper bound. Tokens
are the bot's estimate (about 4 characters per token for Latin text), the same way the
fake OpenAI server of the tests counts them.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC
from pathlib import Path

from mnemobot.base.tokens import CHARS_PER_TOKEN, estimate_tokens
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.notes.memory_rewrite import SUPERSEDED_HEADING, entries
from mnemobot.memory.services.workspace_memory import MemoryUpkeep, WorkspaceMemory
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.consolidation import MEMORY_MAX_TOKENS
from mnemobot.memory.upkeep.maintenance import (
    MAINTENANCE_STEPS,
    MaintenanceRun,
    maintain_scope,
)

SCOPE = "telegram:1"
TURN_SPACING_SECONDS = 120.0
_NOTE_USER = re.compile(r"User: (.*?) \| Assistant:")

# Every step but the days' digests, whose summaries are model calls of their own (not
# consolidation's).
CONSOLIDATION_STEPS = tuple(step for step in MAINTENANCE_STEPS if step.name != "digest days")


@dataclass(slots=True)
class CostFigures:
    turns: int
    every: int
    calls: int
    input_tokens: int
    output_tokens: int
    max_input_tokens: int
    memory_tokens_at_end: int

    def per_100_turns(self) -> dict[str, float]:
        scale = 100 / self.turns
        return {
            "calls": round(self.calls * scale, 1),
            "inputTokens": round(self.input_tokens * scale),
            "outputTokens": round(self.output_tokens * scale),
        }


class StandInModel:
    """Keeps every entry, adds each new user line as one, trims the oldest at the cap."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.max_input_tokens = 0

    def __call__(self, instructions: str, material: str) -> str:
        self.calls += 1
        spent = estimate_tokens(instructions) + estimate_tokens(material)
        self.input_tokens += spent
        self.max_input_tokens = max(self.max_input_tokens, spent)
        current = material.split("CURRENT MEMORY.md:\n", 1)[1].split("\n\nNEW ", 1)[0]
        kept = [] if current.strip() == "(empty)" else entries(current)
        kept += [m.group(1)[:120] for m in _NOTE_USER.finditer(material)]
        dropped: list[str] = []
        while sum(len(e) + 3 for e in kept) > self.max_chars * 0.9:
            dropped.append(kept.pop(0))
        answer = "\n".join(f"- {e}" for e in kept)
        if dropped:
            answer += f"\n\n{SUPERSEDED_HEADING}\n" + "\n".join(f"- {e}" for e in dropped)
        self.output_tokens += estimate_tokens(answer)
        return answer


def load_turns(path: Path) -> list[tuple[str, str]]:
    """(user, assistant) pairs: consecutive turns of two speakers, in file order."""
    pairs: list[tuple[str, str]] = []
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        sessions = sorted(
            (k for k in conversation if re.fullmatch(r"session_\d+", k)),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in sessions:
            turns = conversation[key]
            pairs += [(a["text"], b["text"]) for a, b in zip(turns[::2], turns[1::2], strict=False)]
    return pairs


def measure(turns: list[tuple[str, str]], every: int, config: MemoryConfig) -> CostFigures:
    with tempfile.TemporaryDirectory(prefix="mnemobot-consolidation-") as tmp:
        workspace = Path(tmp)
        memory = WorkspaceMemory.open(workspace)
        model = StandInModel(MEMORY_MAX_TOKENS * CHARS_PER_TOKEN)
        start = time.time() - len(turns) * TURN_SPACING_SECONDS
        paths = ScopePaths(workspace, SCOPE)
        try:
            for number, (user, assistant) in enumerate(turns, 1):
                at = start + number * TURN_SPACING_SECONDS
                memory.record.record_turn(
                    scope=SCOPE,
                    user_text=user,
                    assistant_text=assistant,
                    at=at,
                    config=config,
                    tz=UTC,
                )
                if number % every == 0 or number == len(turns):
                    run = MaintenanceRun(
                        paths=paths,
                        config=config,
                        now=at,
                        sessions_dir=workspace / "sessions",
                        memory=MemoryUpkeep(memory),
                        complete=model,
                    )
                    maintain_scope(run, CONSOLIDATION_STEPS)
            final = paths.memory_file.read_text() if paths.memory_file.exists() else ""
        finally:
            memory.close()
    return CostFigures(
        turns=len(turns),
        every=every,
        calls=model.calls,
        input_tokens=model.input_tokens,
        output_tokens=model.output_tokens,
        max_input_tokens=model.max_input_tokens,
        memory_tokens_at_end=estimate_tokens(final),
    )


def bench_command(args: argparse.Namespace) -> int:
    turns = load_turns(Path(args.file))[: args.turns]
    config = MemoryConfig()
    results = [measure(turns, every, config) for every in args.every]
    if args.json:
        print(json.dumps([asdict(r) | {"per100Turns": r.per_100_turns()} for r in results]))
        return 0
    print(f"{len(turns)} turns of {args.file}; tokens estimated as the bot does (~4 chars/token)")
    for r in results:
        per = r.per_100_turns()
        print(
            f"a run every {r.every:>4} turns: per 100 turns {per['calls']:g} calls, "
            f"{per['inputTokens']:,} input + {per['outputTokens']:,} output tokens; "
            f"largest request {r.max_input_tokens:,} tokens; MEMORY.md at the end "
            f"{r.memory_tokens_at_end:,} tokens"
        )
    return 0
