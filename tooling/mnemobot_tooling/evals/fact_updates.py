"""`mnemobot eval updates`: does the pack hold the current value of a fact that changed?

Each case of `data/knowledge_updates.json` is one chat: the old statement 60 days ago,
filler turns, the new statement 10 days ago, more filler, all through the bot's memory
write path (`MemoryRecord.record_turn`, the same as a chat turn), then the pack for a
question about the fact, built as the bot builds it. A case counts as

- *current*: the new value is in the pack;
- *stale*: the old value is in a pack line not marked "earlier" (shown as current).

The slot rules judge updates at write time; replacements no rule can see are left to
consolidation, which marks them through `MemoryRecord.supersede_matching`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.clock import SECONDS_PER_DAY
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory

DATA_FILE = Path(__file__).parent / "data" / "knowledge_updates.json"
OLD_DAYS_AGO = 60
NEW_DAYS_AGO = 10
EARLIER_MARK = "earlier"
# Filler turns between the two statements and after the new one: enough that neither
# statement is among the newest turns a pack shows as recent context anyway.
FILLERS_BETWEEN = 30
FILLERS_AFTER = 8


@dataclass(frozen=True, slots=True)
class CaseResult:
    case_id: str
    lang: str
    current: bool
    stale: bool
    pack: str


def pack_entries(rendered: str) -> list[str]:
    """The pack's list entries, each with its continuation lines."""
    entries: list[str] = []
    for line in rendered.splitlines():
        if line.startswith("- "):
            entries.append(line)
        elif line.startswith("  ") and entries:
            entries[-1] += "\n" + line
    return entries


def shows_as_current(rendered: str, value: str) -> bool:
    folded = value.casefold()
    return any(
        folded in entry.casefold() and EARLIER_MARK not in entry for entry in pack_entries(rendered)
    )


def run_case(
    memory: WorkspaceMemory, case: dict[str, Any], fillers: list[str], now: float
) -> CaseResult:
    scope = f"eval:{case['id']}"
    config = MemoryConfig()

    def say(text: str, days_ago: float) -> None:
        memory.record.record_turn(
            scope=scope,
            user_text=text,
            assistant_text="Got it.",
            at=now - days_ago * SECONDS_PER_DAY,
            config=config,
            tz=UTC,
        )

    say(case["old"], OLD_DAYS_AGO)
    step = (OLD_DAYS_AGO - NEW_DAYS_AGO) / (FILLERS_BETWEEN + 1)
    for number in range(1, FILLERS_BETWEEN + 1):
        say(fillers[number % len(fillers)], OLD_DAYS_AGO - number * step)
    say(case["new"], NEW_DAYS_AGO)
    for number in range(1, FILLERS_AFTER + 1):
        say(fillers[number % len(fillers)], NEW_DAYS_AGO - number)
    pack = memory.recall.build_pack(scope, case["question"], now=now, config=config, tz=UTC)
    rendered = pack.rendered
    return CaseResult(
        case["id"],
        case["lang"],
        current=case["newValue"].casefold() in rendered.casefold(),
        stale=shows_as_current(rendered, case["oldValue"]),
        pack=rendered,
    )


def evaluate(data_file: Path = DATA_FILE, workspace: Path | None = None) -> list[CaseResult]:
    data = orjson.loads(data_file.read_bytes())
    now = time.time()
    with tempfile.TemporaryDirectory(prefix="mnemobot-updates-") as temp:
        memory = WorkspaceMemory.open(workspace or Path(temp))
        try:
            return [
                run_case(memory, case, data["fillers"][case["lang"]], now) for case in data["cases"]
            ]
        finally:
            memory.close()


def eval_command(args: argparse.Namespace) -> int:
    data_file = Path(args.file) if args.file else DATA_FILE
    try:
        results = evaluate(data_file, Path(args.workspace) if args.workspace else None)
    except (OSError, orjson.JSONDecodeError, KeyError) as exc:
        print(f"mnemobot: cannot read the update cases in {data_file}: {exc}", file=sys.stderr)
        return 2
    total = len(results)
    current = sum(r.current for r in results)
    stale = sum(r.stale for r in results)
    summary: dict[str, Any] = {
        "cases": total,
        "currentValueInPack": round(current / total, 3) if total else 0.0,
        "oldValueShownAsCurrent": round(stale / total, 3) if total else 0.0,
        "perLanguage": {
            lang: {
                "cases": sum(r.lang == lang for r in results),
                "current": sum(r.current for r in results if r.lang == lang),
                "stale": sum(r.stale for r in results if r.lang == lang),
            }
            for lang in sorted({r.lang for r in results})
        },
        "failures": [r.case_id for r in results if not r.current or r.stale],
    }
    if args.json:
        sys.stdout.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"Knowledge updates: {total} facts that changed ({data_file.name})")
    print(f"new value in the pack:        {current}/{total} ({summary['currentValueInPack']:.1%})")
    print(
        f"old value shown as current:   {stale}/{total} ({summary['oldValueShownAsCurrent']:.1%})"
    )
    for lang, counts in summary["perLanguage"].items():
        print(f"  {lang}: {counts['current']}/{counts['cases']} current, {counts['stale']} stale")
    for result in results:
        if not result.current or result.stale:
            print(f"\n-- {result.case_id}: current={result.current} stale={result.stale}")
            if args.verbose:
                print(result.pack)
    return 0
