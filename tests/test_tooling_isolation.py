"""Benches and evals stay apart from the bot: running it never imports them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parent.parent

# Imports every module of the running bot (all of bot/ but the tooling, and every layer
# below it; iter_modules, unlike walk_packages, imports nothing by itself), then lists
# whatever of `bot.bench` came along.
_IMPORT_RUNTIME = """
import importlib, pkgutil, sys

def import_tree(name):
    package = importlib.import_module(name)
    for module in pkgutil.iter_modules(getattr(package, "__path__", [])):
        child = f"{name}.{module.name}"
        if child != "bot.__main__" and child != "bot.bench":
            import_tree(child)

for root in ("bot", "config", "memory", "systems"):
    import_tree(root)
import bot.cli
bot.cli.build_parser()
print(sorted(n for n in sys.modules if n == "bot.bench" or n.startswith("bot.bench.")))
print(len(sys.modules))
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
    bench_modules, module_count = result.stdout.splitlines()
    assert bench_modules == "[]"
    # The walk did reach the bot: channels, pipeline and memory are all loaded.
    assert int(module_count) > 100
