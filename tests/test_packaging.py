"""Installed under one name: a folder full of `config.py`, `bot.py`... cannot shadow it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import subprocess_env


def test_the_bot_runs_from_a_folder_whose_modules_share_our_old_names(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    for name in ("config", "bot", "memory", "systems"):
        (tmp_path / f"{name}.py").write_text("raise SystemExit('the wrong module was imported')\n")
    result = subprocess.run(
        [sys.executable, "-m", "mnemobot", "chat"],
        input="hello from a crowded folder\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=subprocess_env(
            BOT_WORKSPACE=str(tmp_path / "workspace"),
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=openai_server.base_url,
        ),
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "echo: hello from a crowded folder"
