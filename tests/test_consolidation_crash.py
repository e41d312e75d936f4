"""A consolidation killed with SIGKILL at any moment leaves the old or the new MEMORY.md."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemobot.config.runtime import ConsolidationConfig
from mnemobot.memory.consolidation import consolidate_scope, load_state
from mnemobot.memory.scope_paths import ScopePaths
from tests.conftest import subprocess_env

# Consolidates the scope again and again, each run with one new note line; the "model"
# sleeps SLEEP seconds (up to it, at random) and answers with the newest fact.
WORKER = """
import random, sys, time
from pathlib import Path
from mnemobot.config.runtime import ConsolidationConfig
from mnemobot.memory.consolidation import consolidate_scope
from mnemobot.memory.daily_notes import append_daily_note
from mnemobot.memory.scope_paths import ScopePaths

paths = ScopePaths(Path(sys.argv[1]), "console:local")
sleep = float(sys.argv[2])
for i in range(1, 100_000):
    append_daily_note(paths.directory, f"fact {i}", "ok", at=time.time())

    def complete(instructions, material, i=i):
        time.sleep(random.uniform(0, sleep))
        return f"- fact {i}\\n- base fact\\n## Superseded\\n- fact {i - 1}\\n"

    outcome = consolidate_scope(
        paths, complete=complete, config=ConsolidationConfig(), items=list, now=time.time()
    )
    assert outcome.changed, outcome.line
    print(i, flush=True)
"""
MEMORY = re.compile(r"\A- fact (\d+)\n- base fact\n\Z")


def run_and_kill(workspace: Path, sleep: float, after_runs: int, extra: float) -> int:
    """Start the worker, SIGKILL it `extra` s after its `after_runs`-th run; the runs it had
    reported finished when it died."""
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(workspace), str(sleep)],
        stdout=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    assert worker.stdout is not None
    done = 0
    try:
        while done < after_runs:
            line = worker.stdout.readline()
            assert line, "the worker ended early"
            done = int(line)
        time.sleep(extra)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    # Runs may have finished between the last line read and the kill.
    for line in worker.stdout.read().split():
        done = int(line)
    return done


@pytest.mark.parametrize(
    ("sleep", "after_runs"),
    [(0.002, 8), (0.2, 1)],
    ids=["anywhere", "during-the-model-call"],
)
def test_sigkill_leaves_the_old_or_the_new_file(
    workspace: Path, sleep: float, after_runs: int
) -> None:
    extra = random.uniform(0, 0.05) if sleep < 0.1 else 0.1
    done = run_and_kill(workspace, sleep, after_runs, extra)
    paths = ScopePaths(workspace, "console:local")
    match = MEMORY.match(paths.memory_file.read_text())
    assert match, paths.memory_file.read_text()
    # The file is the last finished run's, or the one being written at the kill.
    assert int(match.group(1)) in (done, done + 1)
    json.loads((paths.directory / ".consolidation_state").read_text())
    for version in (paths.directory / "archive").glob("MEMORY.*.md"):
        assert MEMORY.match(version.read_text()), version.name
    # The next run picks up whatever the killed one had not finished.
    offsets = load_state(paths).note_offsets
    outcome = consolidate_scope(
        paths,
        complete=lambda instructions, material: (
            "- fact final\n- base fact\n"
            "## Superseded\n- " + "\n- ".join(f"fact {n}" for n in range(done + 2))
        ),
        config=ConsolidationConfig(),
        items=list,
        now=time.time(),
    )
    assert outcome.changed or outcome.line == "nothing new since the last run", outcome.line
    assert sum(load_state(paths).note_offsets.values()) >= sum(offsets.values())
