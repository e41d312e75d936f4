"""Layers and rooms: dependencies point one way only, and nothing imports in a cycle.

The contracts are in pyproject.toml (`[tool.importlinter]`): base <- config | model <-
memory <- conversation <- systems <- bot; inside memory, text <- store <- notes <- pack |
write <- upkeep <- services; inside systems, core <- memory_steps | model_call <-
compaction; inside bot, cli <- app <- channels | mcp | web <- schedule <- turn | upkeep <-
tools | llm | delivery | media; each channel's folder over the shared dispatch; nothing
imports the CLI; the bot never imports its tooling; no sibling packages import each other.
And no two modules share a name unless it means the same thing in both rooms; and the types
check (mypy).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_types_check() -> None:
    """mypy with the pydantic plugin, as configured in pyproject.toml (`[tool.mypy]`), over
    the bot and its tooling. A cold cache takes about 50 s of one core; a warm one 5 s."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success: no issues found"), result.stdout


def test_every_import_linter_contract_holds() -> None:
    lint_imports = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run(
        [lint_imports, str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    names = [contract["name"] for contract in contracts["contracts"]]
    assert len(names) >= 6
    for name in names:
        assert re.search(rf"^{re.escape(name)} KEPT$", result.stdout, re.MULTILINE), name


# Names several rooms use for the same thing, each for its own subject.
SAME_MEANING = {
    "channel.py": "a channel's implementation (Telegram, console)",
    "config.py": "a room's section of the runtime config (Telegram, MCP)",
    "service.py": "a room's front door (memory, scheduled tasks)",
    "access.py": "who may use what a room offers (the Telegram bot, MCP tools)",
}


def test_no_two_modules_share_a_name_that_means_different_things() -> None:
    folders: dict[str, list[str]] = {}
    for package in (ROOT / "mnemobot", ROOT / "tooling" / "mnemobot_tooling"):
        for path in package.rglob("*.py"):
            if not path.name.startswith("__"):
                folders.setdefault(path.name, []).append(str(path.parent.relative_to(ROOT)))
    shared = {name: where for name, where in folders.items() if len(where) > 1}
    assert set(shared) <= set(SAME_MEANING), {n: shared[n] for n in set(shared) - set(SAME_MEANING)}
