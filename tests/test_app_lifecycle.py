"""The assembled bot's lifecycle: started once, closed once, never started again."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemobot.bot.app import build_app
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import ask, make_settings


async def test_starting_twice_or_after_close_is_refused_and_closing_twice_is_harmless(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    app = build_app(make_settings(workspace, openai_server))
    app.start_background()
    with pytest.raises(RuntimeError, match="already started"):
        app.start_background()
    # The refused start changed nothing: the bot answers, and closes cleanly.
    assert await ask(app, "still here?") == "echo: still here?"
    await app.close()
    await app.close()
    with pytest.raises(RuntimeError, match="closed; build a new one"):
        app.start_background()


async def test_an_app_that_never_started_answers_and_closes(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    app = build_app(make_settings(workspace, openai_server))
    assert await ask(app, "hello") == "echo: hello"
    await app.close()
    await app.close()
