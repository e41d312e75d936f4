"""Benches and evals stay apart from the bot: running it never imports them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parent.parent

# Imports every module of the running bot (all of bot/ but the tooling, and every layer
# below it; iter_modules, unlike walk_packages, imports nothing by itself), then lists
# whatever of `bot.bench` came along.
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
        if child not in ("mnemobot.__main__", "mnemobot.bot.__main__", "mnemobot.bot.bench"):
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
        for name in ("systems.pipeline", "systems.memory_persist", "memory.service", "memory.pack")
    }
    assert runtime <= loaded
    bench = "mnemobot.bot.bench"
    assert sorted(n for n in loaded if n == bench or n.startswith(bench + ".")) == []
