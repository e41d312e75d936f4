"""Benches, evals and test fakes stay apart from the bot: running it never imports them,
and the wheel does not ship them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mnemobot.bot.cli.main import main
from mnemobot.bot.cli.tool_commands import split_tool_command
from mnemobot.bot.i18n import TRANSLATED
from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parent.parent

# Imports every module of the bot (all of bot/ and every layer below it; iter_modules,
# unlike walk_packages, imports nothing by itself) and builds the command line, then lists
# whatever of the tooling came along.
_IMPORT_RUNTIME = """
import importlib, json, pkgutil, sys

OURS = {"mnemobot.bot", "mnemobot.config", "mnemobot.memory", "mnemobot.systems"}

def import_tree(name):
    try:
        package = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        # An optional third-party extra that is not installed is not our concern here.
        if (exc.name or "").startswith("mnemobot"):
            raise
        return
    for module in pkgutil.iter_modules(getattr(package, "__path__", [])):
        child = f"{name}.{module.name}"
        if child not in ("mnemobot.__main__", "mnemobot.bot.__main__"):
            import_tree(child)

for root in sorted(OURS):
    import_tree(root)
import mnemobot.bot.cli.main
mnemobot.bot.cli.main.build_parser()
print(json.dumps(sorted(sys.modules)))
"""


def test_the_running_bot_never_imports_the_benches_or_evals() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_RUNTIME],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=subprocess_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = set(json.loads(result.stdout))
    # The walk reached the running bot: app, CLI, both channels, pipeline, memory.
    runtime = {
        "bot.app",
        "bot.cli.main",
        "bot.channels.console.channel",
        "bot.channels.telegram.channel",
        "bot.channels.telegram.serve",
    }
    runtime = {f"mnemobot.{name}" for name in runtime}
    runtime |= {
        f"mnemobot.{name}"
        for name in (
            "systems.core.pipeline",
            "systems.memory_steps.memory_persist",
            "memory.services.record",
            "memory.pack.build",
        )
    }
    assert runtime <= loaded
    assert "mnemobot.bot.cli.tool_commands" in loaded
    assert sorted(n for n in loaded if n.split(".")[0] == "mnemobot_tooling") == []


def test_the_wheel_ships_the_bot_and_no_tooling(tmp_path: Path) -> None:
    # Built from a copy of the checkout, tooling/ and tests/ included, as `pip install .`
    # would build it (with the installed setuptools: a build environment costs seconds).
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
        ),
    )
    built = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"),
            *("-w", str(tmp_path), source),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("mnemobot-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"mnemobot/bot/app.py", "mnemobot/bot/cli/main.py"} <= set(names)
    # The bot's words in other languages, compiled (see mnemobot/bot/i18n.py).
    assert {
        f"mnemobot/bot/locale/{language}/LC_MESSAGES/mnemobot.mo" for language in TRANSLATED
    } <= set(names)
    assert {name.split("/")[0] for name in names} == {"mnemobot", "mnemobot-0.1.0.dist-info"}
    shipped_tooling = [
        name
        for name in names
        if re.search(r"(^|/)(bench|evals|fakes|tests|tooling|mnemobot_tooling)(/|$)", name)
    ]
    assert shipped_tooling == []
    [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    assert (
        "mnemobot = mnemobot.bot.cli.main:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )


def test_bench_and_eval_get_their_arguments_untouched() -> None:
    assert split_tool_command(["--env-file", "x.env", "bench", "telegram", "--json", "-h"]) == (
        ["--env-file", "x.env", "bench"],
        ["telegram", "--json", "-h"],
    )
    assert split_tool_command(["eval", "--help"]) == (["eval"], ["--help"])
    assert split_tool_command(["memory", "pack", "bench"]) == (["memory", "pack", "bench"], None)
    assert split_tool_command(["--version"]) == (["--version"], None)


def test_mnemobot_bench_runs_the_installed_tooling(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "telegram", "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mnemobot bench telegram")
    assert "--replicas" in out
