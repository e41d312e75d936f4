"""A consolidation killed at any moment leaves the old or the new MEMORY.md."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.consolidation import consolidate_scope, load_state
from tests.crash_points import run_to_crash

# Consolidates the scope four times, each run with one new note line; the "model" answers
# with the newest fact. The fourth run dies at the crash point: inside the model call, or
# at the archive copy's write (skip 0) or at MEMORY.md's own rewrite (skip 1).
WORKER = """
import time
from pathlib import Path
from mnemobot.memory.upkeep.consolidation import consolidate_scope
from mnemobot.memory.notes.daily_notes import append_daily_note
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.config.runtime import ConsolidationConfig
from mnemobot.memory.upkeep.consolidation import consolidate_scope
from mnemobot.memory.notes.daily_notes import append_daily_note
from mnemobot.memory.store.scope_paths import ScopePaths

paths = ScopePaths(Path(sys.argv[1]), "console:local")
skip = int(sys.argv[2])
point = os.environ["CRASH_POINT"]
for i in range(1, 5):
    append_daily_note(paths.directory, f"fact {i}", "ok", at=time.time())

    def complete(instructions, material, i=i):
        if i == 4 and point == "model-call":
            _die()
        return f"- fact {i}\\n- base fact\\n## Superseded\\n- fact {i - 1}\\n"

    if i == 4 and point != "model-call":
        arm(skip)
    outcome = consolidate_scope(
        paths, complete=complete, items=list, now=time.time()
    )
    assert outcome.changed, outcome.line
"""
MEMORY = re.compile(r"\A- fact (\d+)\n- base fact\n\Z")


@pytest.mark.parametrize(
    ("point", "skip", "fact_in_memory"),
    [
        ("model-call", 0, 3),
        ("mid-write", 0, 3),  # the archive copy of the old MEMORY.md, half written
        ("mid-write", 1, 3),  # MEMORY.md's rewrite, half written
        ("before-replace", 1, 3),
        ("after-replace", 1, 4),  # MEMORY.md is new; the run's state is not saved yet
    ],
    ids=["model-call", "archive-mid-write", "mid-write", "before-replace", "after-replace"],
)
def test_a_kill_leaves_the_old_or_the_new_file_and_the_next_run_goes_on(
    workspace: Path, point: str, skip: int, fact_in_memory: int
) -> None:
    run_to_crash(WORKER, point, str(workspace), str(skip))
    paths = ScopePaths(workspace, "console:local")
    match = MEMORY.match(paths.memory_file.read_text())
    assert match, paths.memory_file.read_text()
    assert int(match.group(1)) == fact_in_memory
    json.loads((paths.directory / ".consolidation_state").read_text())
    for version in (paths.directory / "archive").glob("MEMORY.*.md"):
        assert MEMORY.match(version.read_text()), version.name
    # The next run picks up whatever the killed one had not finished.
    offsets = load_state(paths).note_offsets
    outcome = consolidate_scope(
        paths,
        complete=lambda instructions, material: (
            "- fact final\n- base fact\n"
            "## Superseded\n- " + "\n- ".join(f"fact {n}" for n in range(1, 5))
        ),
        items=list,
        now=time.time(),
    )
    assert outcome.changed, outcome.line
    assert paths.memory_file.read_text() == "- fact final\n- base fact\n"
    assert sum(load_state(paths).note_offsets.values()) >= sum(offsets.values())
