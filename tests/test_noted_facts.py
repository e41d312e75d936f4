"""What the model wrote is labelled as the model's everywhere: a fact a compaction's flush
kept is "noted from the conversation" in the pack, the daily note and consolidation's
input, never "said" and never a `User:` line (a small model's flush invents things)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from mnemobot.bot.app import build_app
from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    reply,
    system_text,
    user_texts,
)
from tests.conftest import ask, make_settings, run_mnemobot, write_runtime_config

START = 1_600_000_000.0
INVENTED = "The assistant was designed by a team of engineers at Acme"


QUESTION = "who designed the assistant? engineers at Acme?"


async def test_a_flushed_fact_is_noted_not_said_in_pack_note_and_consolidation(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(
        workspace,
        {"llm": {"maxRetries": 0}, "compaction": {"maxContextTokens": 1000, "keepLastMessages": 2}},
    )

    def model(request: dict[str, Any]) -> Step:
        if system_text(request).startswith("You keep an assistant's long-term memory"):
            return reply(f"- {INVENTED}.")
        if system_text(request).startswith("You compress a chat"):
            return reply("SUMMARY: notes")
        if system_text(request).startswith("You maintain the long-term memory file"):
            return reply("## About the user\n- Talks about engineers\n\n## Superseded\n- none")
        return reply(f"echo: {user_texts(request)[-1]}")

    openai_server.responder = model
    minutes = itertools.count(START, 60.0)
    app = build_app(
        make_settings(workspace, openai_server),
        clock=lambda: next(minutes),
        tuning=Tuning(background_quiet_seconds=0),
    )
    try:
        for n in range(6):
            await ask(app, f"Long note {n}: " + "lorem ipsum dolor sit amet " * 30)
        # The flush follows the reply on this local (one-slot) server.
        assert app.maintenance is not None
        await app.maintenance.settled()
        await ask(app, QUESTION)
    finally:
        await app.close()

    folder = workspace / "memory" / "console:local"
    notes = "".join(path.read_text() for path in sorted(folder.glob("????-??-??.md")))
    noted = [line for line in notes.splitlines() if INVENTED in line]
    assert noted, notes
    assert all("User:" not in line for line in noted), noted
    assert all(line[8:].startswith("Noted from the conversation: ") for line in noted), noted

    # The pack the last turn's request carried says who wrote it.
    [last_turn] = [r for r in openai_server.requests if user_texts(r)[-1:] == [QUESTION]]
    last = json.dumps(last_turn, ensure_ascii=False)
    assert "Fact (noted from the conversation 2020-09-13): " + INVENTED in last, last
    assert f"(said 2020-09-13): {INVENTED}" not in last

    result = run_mnemobot(
        "memory",
        "maintain",
        "--chat",
        "console:local",
        BOT_WORKSPACE=str(workspace),
        OPENAI_BASE_URL=openai_server.base_url,
        OPENAI_API_KEY="sk-test",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [consolidation] = [
        r
        for r in openai_server.requests
        if system_text(r).startswith("You maintain the long-term memory file")
    ]
    material = "\n".join(user_texts(consolidation))
    assert INVENTED in material
    assert all(
        "Noted from the conversation: " in line or "noted from the conversation]" in line
        for line in material.splitlines()
        if INVENTED in line
    ), material
    assert "not the user's words" in system_text(consolidation)
