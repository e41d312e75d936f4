"""One clock: what the bot writes down is dated by the clock it was built with, never by the
wall (a replay, an import or a bench passes its own, and the dates must agree)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mnemobot.base.clock import SECONDS_PER_DAY, from_iso
from mnemobot.bot.app import App
from mnemobot.bot.turn.commands import ParsedCommand
from tests.conftest import CONSOLE_CHAT, AppFactory, ask

# A morning years before any test runs: a wall-clock date cannot pass for it.
PAST = datetime(2021, 3, 4, 9, 30, tzinfo=UTC).timestamp()


class SettableClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> SettableClock:
    return SettableClock(PAST)


@pytest.fixture
async def app(make_app: AppFactory, clock: SettableClock) -> App:
    return make_app(clock=clock)


def session_file(app: App) -> dict[str, object]:
    path = app.sessions.path_for(CONSOLE_CHAT.key)
    return json.loads(path.read_text(encoding="utf-8"))


async def test_a_turn_dates_the_session_by_the_injected_clock(
    app: App, clock: SettableClock
) -> None:
    assert await ask(app, "good morning") == "echo: good morning"
    saved = session_file(app)
    assert from_iso(str(saved["createdAt"])) == PAST
    assert from_iso(str(saved["updatedAt"])) == PAST

    clock.now = PAST + SECONDS_PER_DAY
    assert await ask(app, "and the next day") == "echo: and the next day"
    saved = session_file(app)
    assert from_iso(str(saved["createdAt"])) == PAST
    assert from_iso(str(saved["updatedAt"])) == PAST + SECONDS_PER_DAY
    assert app.sessions.get(CONSOLE_CHAT.key).updated_at == PAST + SECONDS_PER_DAY


async def test_export_names_its_file_by_the_injected_clock(app: App) -> None:
    await ask(app, "something to export")
    exported = await app.commands.reply(CONSOLE_CHAT, ParsedCommand("export", ""))
    assert exported.attachment is not None
    assert exported.attachment.filename.endswith("20210304-093000.zip")
