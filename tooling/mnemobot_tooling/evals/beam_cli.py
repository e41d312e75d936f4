"""The `mnemobot eval beam` command line: arguments checked, the run, the report.

What is measured and how: `beam`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import orjson

from mnemobot_tooling.evals.beam import DEFAULT_BUDGET, BeamResult, BeamRun, run_eval
from mnemobot_tooling.evals.beam_data import conversation_dirs
from mnemobot_tooling.evals.locomo import _OneLineErrors, parse_memory_overrides
from mnemobot_tooling.evals.tuning_overrides import TuningError, tuning_from_json


def format_report(result: BeamResult) -> str:
    lines = [
        f"BEAM evidence recall: {len(result.conversations)} conversations "
        f"({', '.join(result.conversations)}), {result.messages} messages, "
        f"{result.questions} questions with evidence ({result.without_evidence} without, "
        f"not asked; {result.skipped_evidence} unknown evidence ids), "
        f"{result.message_gap_seconds:g} s between messages; "
        + (
            "a chat with a bot: the assistant's messages imported as replies"
            if result.assistant_replies
            else "a chat between two people (--personal-chat): every message its author's turn"
        ),
    ]
    for measured in result.budgets:
        data = measured.to_json_dict()
        abilities = list(measured.pack.per_ability())
        width = max([26, *(len(a) + 2 for a in abilities)])
        lines.append(
            f"\nsoft budget {measured.budget} tokens (pack max {measured.max_budget}); "
            "baseline: BM25+ over 600-character chunks with neighbours, on the pack's tokens"
        )
        lines.append(f"{'':<{width}}{'pack':>8}{'baseline':>10}{'questions':>11}")
        lines.append(
            f"{'overall':<{width}}{measured.pack.overall():>8.3f}"
            f"{measured.baseline.overall():>10.3f}{sum(measured.pack.questions.values()):>11}"
        )
        pack, baseline = measured.pack.per_ability(), measured.baseline.per_ability()
        for ability in abilities:
            lines.append(
                f"{ability.replace('_', ' '):<{width}}{pack[ability]:>8.3f}"
                f"{baseline[ability]:>10.3f}{measured.pack.questions[ability]:>11}"
            )
        lines.append(
            f"stale-only knowledge updates: pack {measured.pack.stale_only}, baseline "
            f"{measured.baseline.stale_only} of {measured.pack.updates_judged}"
        )
        lines.append(
            f"tokens: pack mean {data['packTokensMean']}, baseline mean "
            f"{data['baselineTokensMean']}; pack build p95 {data['packBuildMsP95']} ms; "
            f"questions took {measured.seconds:.1f} s"
        )
    lines.append(f"\ntime taken: {result.seconds:.1f} s (import {result.import_seconds:.1f} s)")
    return "\n".join(lines)


def eval_command(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths]
    budgets = args.budget or [DEFAULT_BUDGET]
    if args.message_gap_seconds < 0:
        print("mnemobot: --message-gap-seconds must be 0 or more", file=sys.stderr)
        return 2
    try:
        overrides = parse_memory_overrides(args.memory)
        for path in paths:
            conversation_dirs(path)
    except ValueError as exc:
        print(f"mnemobot: {exc}", file=sys.stderr)
        return 2
    if args.reuse_import and not args.workspace:
        print("mnemobot: --reuse-import needs --workspace DIR of an earlier run", file=sys.stderr)
        return 2
    try:
        tuning = tuning_from_json(args.tuning)
    except TuningError as exc:
        print(f"mnemobot: --tuning: {exc}", file=sys.stderr)
        return 2
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineErrors("mnemobot: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    try:
        details = open(args.details, "w") if args.details else None  # noqa: SIM115
    except OSError as exc:
        print(f"mnemobot: --details: cannot write {args.details} ({exc.strerror})", file=sys.stderr)
        return 2
    run = BeamRun(
        paths,
        budgets=list(dict.fromkeys(budgets)),
        message_gap_seconds=args.message_gap_seconds,
        memory_overrides=overrides,
        assistant_replies=args.assistant_replies,
        embedding_cache=Path(args.embedding_cache) if args.embedding_cache else None,
        details=details,
        progress=None if args.no_progress else sys.stderr,
        tuning=tuning,
        reuse_import=args.reuse_import,
    )
    try:
        if args.workspace:
            workspace = Path(args.workspace)
            workspace.mkdir(parents=True, exist_ok=True)
            result = run_eval(run, workspace)
        else:
            with tempfile.TemporaryDirectory(prefix="mnemobot-beam-") as tmp:
                result = run_eval(run, Path(tmp))
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
        print(f"mnemobot: cannot evaluate: {exc}", file=sys.stderr)
        return 1
    finally:
        if details is not None:
            details.close()
    if args.json:
        sys.stdout.write(orjson.dumps(result.to_json_dict(), option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
    else:
        print(format_report(result))
    return 0
