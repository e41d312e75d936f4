"""Layers and rooms: dependencies point one way only, and nothing imports in a cycle.

The contracts are in pyproject.toml (`[tool.importlinter]`): config <- memory <- systems <-
bot; inside bot, cli <- app <- channels | mcp <- turn | upkeep <- tools | llm | delivery; each
channel's folder over the shared dispatch; nothing imports the CLI; the bot never imports
its tooling; no sibling packages import each other.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
