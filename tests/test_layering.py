"""Layers and rooms: dependencies point one way only, and nothing imports in a cycle.

The contracts are in pyproject.toml (`[tool.importlinter]`): base <- config | model <-
memory <- conversation <- systems <- bot; inside memory, text <- store <- notes <- pack |
write <- upkeep <- services; inside systems, core <- memory_steps | model_call <-
compaction; inside bot, i18n <- tools | llm | delivery | media <- turn | upkeep <- schedule
<- channels | mcp | web <- assembled_app | runtime_sections <- app <- cli; each channel's
folder over the shared dispatch; nothing imports the CLI; the bot never imports its
tooling; no sibling packages import each other.
No two modules share a name unless it means the same thing in both rooms, and no class has
more than about 15 public methods without saying why; and the types check (mypy).
"""

from __future__ import annotations

import ast
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
    "tuning.py": "a part's constants, which a test or an eval may replace (extraction, the bot)",
}


def test_no_two_modules_share_a_name_that_means_different_things() -> None:
    folders: dict[str, list[str]] = {}
    for package in (ROOT / "mnemobot", ROOT / "tooling" / "mnemobot_tooling"):
        for path in package.rglob("*.py"):
            if not path.name.startswith("__"):
                folders.setdefault(path.name, []).append(str(path.parent.relative_to(ROOT)))
    shared = {name: where for name, where in folders.items() if len(where) > 1}
    assert set(shared) <= set(SAME_MEANING), {n: shared[n] for n in set(shared) - set(SAME_MEANING)}


# A class with more public methods than this is a grab bag unless its docstring says, after
# WHY_MANY_METHODS, why its methods belong together.
MAX_PUBLIC_METHODS = 15
WHY_MANY_METHODS = "Why so many methods:"


def public_methods(node: ast.ClassDef) -> list[str]:
    """The methods a class's own body defines whose names have no leading underscore;
    properties read as attributes and are not counted."""
    return [
        item.name
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        and not item.name.startswith("_")
        and not any(
            (isinstance(d, ast.Name) and d.id in ("property", "cached_property"))
            or (isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter"))
            for d in item.decorator_list
        )
    ]


def test_a_class_with_many_public_methods_says_why() -> None:
    crowded: dict[str, int] = {}
    for package in (ROOT / "mnemobot", ROOT / "tooling" / "mnemobot_tooling"):
        for path in sorted(package.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.ClassDef):
                    continue
                count = len(public_methods(node))
                if count > MAX_PUBLIC_METHODS and WHY_MANY_METHODS not in (
                    ast.get_docstring(node) or ""
                ):
                    crowded[f"{path.relative_to(ROOT)}::{node.name}"] = count
    assert crowded == {}, (
        f"more than {MAX_PUBLIC_METHODS} public methods: split the class, or say why in its "
        f"docstring after {WHY_MANY_METHODS!r}"
    )
