"""`mnemobot bench cold-scope`: what one chat's cold load of a big scope costs the others.

Chat A's scope holds a synthetic group chat of `--items` items (the generator of `mnemobot
bench memory`); chat B is a small chat whose scope is already loaded. Each round starts a
fresh app (so A's scope is cold), warms chat B, times B's turns with nothing else going on
(the baseline), then sends A's first message and keeps timing B's turns, one after the
other, until A's reply is out. Every turn goes through the real assistant and pipeline and
the real OpenAI client; the model is the fake OpenAI server of the test suite, in a child
process, so its CPU is not the bot's.

The figure that matters is the worst delay of a B turn that ran while A's scope loaded,
minus B's typical (median) delay without the load: what a cold 100,000-item scope adds to
another chat's reply. The memory work runs in worker threads; they share the GIL with the
event loop, so some delay remains, but it must stay far below the load's own second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from mnemobot.bot.app import App, build_app
from mnemobot.bot.cli.process_tuning import tune_process
from mnemobot.config.settings import Settings
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.bench.memory_speed import SCOPE, machine

TARGET_ADDED_MS = 50.0
# Chat A's scope is the generator's scope (`telegram:<chat id>`).
COLD_CHAT = ChatRef("telegram", SCOPE.split(":", 1)[1], user_id="1", user_name="Caroline")
WARM_CHAT = ChatRef("telegram", "4242", user_id="2", user_name="Bob")
_FAKE_SERVER_START_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class ColdScopeFigures:
    items: int
    rounds: int
    cold_turn_s: list[float]
    baseline_turns: int
    baseline_p50_ms: float
    baseline_max_ms: float
    during_turns: int
    during_p50_ms: float
    during_max_ms: float
    added_worst_ms: float


def _generate(workspace: Path, items: int, seed: int) -> int:
    """The big scope, written by a child (its heap stays out of the measured process)."""
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from mnemobot_tooling.bench.memory_speed import write_synthetic_scope\n"
        "print(write_synthetic_scope(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(workspace), str(items), str(seed)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"scope generator failed:\n{done.stderr[-2000:]}")
    return int(done.stdout.strip().splitlines()[-1])


def _start_fake_llm() -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen(
        [sys.executable, "-m", "mnemobot_tooling.fakes.openai_server"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    url = child.stdout.readline().strip()
    if not url.startswith("http"):
        child.kill()
        raise RuntimeError("the fake OpenAI server did not start")
    return child, url


async def _timed_turn(app: App, chat: ChatRef, text: str) -> float:
    begin = time.perf_counter()
    outcome = await app.assistant.handle_text(chat, text)
    elapsed = time.perf_counter() - begin
    if outcome is None or not outcome.answered:
        raise RuntimeError(f"turn in {chat.key} was not answered: {outcome}")
    return elapsed


async def _round(
    settings: Settings, baseline_turns: int, number: int
) -> tuple[float, list[float], list[float]]:
    """(A's cold turn, B's delays without load, B's delays during A's cold turn), seconds."""
    app = build_app(settings)
    try:
        for i in range(3):  # B's scope loaded, HTTP connection open, code paths warm
            await _timed_turn(app, WARM_CHAT, f"warm-up {number}.{i}: I like green tea")
        baseline = [
            await _timed_turn(app, WARM_CHAT, f"round {number} turn {i}: what tea do I like?")
            for i in range(baseline_turns)
        ]
        if app.memory.scopes.is_loaded(SCOPE):
            raise RuntimeError("chat A's scope is loaded before its first message")
        cold = asyncio.create_task(
            _timed_turn(app, COLD_CHAT, "What did Caroline say about pottery?")
        )
        during: list[float] = []
        # B's first turn starts before A's task runs, so at least one overlaps the load.
        while not cold.done():
            during.append(await _timed_turn(app, WARM_CHAT, f"busy {number}.{len(during)}"))
        return await cold, baseline, during
    finally:
        await app.close()


async def _measure(
    workspace: Path, llm_url: str, rounds: int, baseline_turns: int
) -> tuple[list[float], list[float], list[float]]:
    settings = Settings(
        _env_file=None,
        bot_workspace=workspace,
        openai_api_key="bench-key",
        openai_base_url=llm_url,
        bot_model="bench-model",
    )
    colds: list[float] = []
    baseline: list[float] = []
    during: list[float] = []
    for number in range(rounds):
        cold, base, busy = await _round(settings, baseline_turns, number)
        colds.append(cold)
        baseline += base
        during += busy
    return colds, baseline, during


def run_bench(items: int, rounds: int, baseline_turns: int, seed: int) -> ColdScopeFigures:
    with tempfile.TemporaryDirectory(prefix="mnemobot-bench-cold-") as tmp:
        workspace = Path(tmp)
        written = _generate(workspace, items, seed)
        fake, url = _start_fake_llm()
        try:
            tune_process()  # as `mnemobot` does at start-up
            colds, baseline, during = asyncio.run(_measure(workspace, url, rounds, baseline_turns))
        finally:
            fake.kill()
            fake.wait()
    base_p50 = statistics.median(baseline) * 1000.0
    return ColdScopeFigures(
        items=written,
        rounds=rounds,
        cold_turn_s=colds,
        baseline_turns=len(baseline),
        baseline_p50_ms=base_p50,
        baseline_max_ms=max(baseline) * 1000.0,
        during_turns=len(during),
        during_p50_ms=statistics.median(during) * 1000.0,
        during_max_ms=max(during) * 1000.0,
        added_worst_ms=max(during) * 1000.0 - base_p50,
    )


def format_report(figures: ColdScopeFigures) -> str:
    f = figures
    host = machine()
    verdict = "ok" if f.added_worst_ms <= TARGET_ADDED_MS else "MISSED"
    colds = ", ".join(f"{s:.2f}" for s in f.cold_turn_s)
    return "\n".join(
        [
            f"bench cold-scope: chat A's scope of {f.items} items loads cold while warm chat B "
            f"talks ({f.rounds} rounds)",
            f"machine: {host['nproc']} cpus, {host['cpu']}, Python {host['python']}",
            "",
            f"  chat A's cold turn (load + pack + reply)  {colds} s",
            f"  chat B reply, nothing else running        p50 {f.baseline_p50_ms:.1f} ms, "
            f"max {f.baseline_max_ms:.1f} ms ({f.baseline_turns} turns)",
            f"  chat B reply, while A's scope loads       p50 {f.during_p50_ms:.1f} ms, "
            f"max {f.during_max_ms:.1f} ms ({f.during_turns} turns)",
            f"  worst delay added to chat B               {f.added_worst_ms:.1f} ms "
            f"(target <= {TARGET_ADDED_MS:g}: {verdict})",
        ]
    )


def bench_command(args: argparse.Namespace) -> int:
    figures = run_bench(args.items, args.rounds, args.baseline_turns, args.seed)
    if args.json:
        print(json.dumps({"machine": machine(), **asdict(figures), "target_ms": TARGET_ADDED_MS}))
    else:
        print(format_report(figures))
    return 0
