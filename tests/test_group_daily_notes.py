"""A group's daily notes say who said what. They said "User:" for every member, and
Anna's "I live in Riga" reached the model in Boris's request as something "User" said."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply
from tests.conftest import CONSOLE_CHAT, ask, make_settings

ANNA = ChatRef("telegram", "-500", user_id="1", user_name="Anna", is_group=True)
BORIS = ChatRef("telegram", "-500", user_id="2", user_name="Boris", is_group=True)


@pytest.fixture
async def app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[App]:
    built = build_app(make_settings(workspace, openai_server))
    yield built
    await built.close()


def note_text(workspace: Path, scope: str) -> str:
    return "".join(p.read_text() for p in sorted((workspace / "memory" / scope).glob("*.md")))


async def test_a_groups_daily_note_names_each_member_and_a_private_one_says_user(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.script(reply("Nice."), reply("Noted."), reply("Hello."))
    await ask(app, "I live in Riga.", chat=ANNA)
    await ask(app, "I live in Oslo.", chat=BORIS)
    await ask(app, "I live in Lima.", chat=CONSOLE_CHAT)
    group = note_text(workspace, ANNA.key)
    assert "] Anna: I live in Riga. | Assistant: Nice." in group
    assert "] Boris: I live in Oslo. | Assistant: Noted." in group
    assert "User:" not in group
    assert "] User: I live in Lima. | Assistant: Hello." in note_text(workspace, CONSOLE_CHAT.key)
