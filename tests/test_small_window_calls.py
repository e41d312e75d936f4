"""Consolidation and the compaction flush fit a small local model's context window.

The crossing: the window learned from the model x the background calls that send a
chat's whole new material at once. With a 2,048-token model, consolidation sent more than
the window every run and MEMORY.md was never written; the flush was refused the same way.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from mnemobot.bot.app import build_app
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.memory.notes.daily_notes import append_daily_note
from mnemobot.model.windows import FILE_NAME, endpoint_key
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    context_text,
    overflow,
    reply,
    request_tokens,
    system_text,
    user_texts,
)
from tests.conftest import (
    CONSOLE_CHAT,
    ask,
    make_settings,
    run_mnemobot,
    write_runtime_config,
)

SCOPE = "console:kc"
WINDOW = 2048
TOPICS = ("the garden", "a trip to Lisbon", "the dentist", "a new bicycle", "the office move")


def long_notes(count: int) -> list[str]:
    return [
        f"Note {n} about {TOPICS[n % len(TOPICS)]}. "
        + " ".join(
            f"Detail {d} about {TOPICS[(n + d) % len(TOPICS)]}: planned for week {n + d}."
            for d in range(6)
        )
        for n in range(1, count + 1)
    ]


def rewriting_model(request: dict[str, Any]) -> Step:
    """A model that writes a valid MEMORY.md: the bullets it was given plus one naming the
    notes it read."""
    material = user_texts(request)[-1]
    current = material.split("CURRENT MEMORY.md:\n", 1)[1].split("\n\nNEW ", 1)[0]
    bullets = [line for line in current.splitlines() if line.startswith("- ")]
    notes = list(dict.fromkeys(re.findall(r"Note (\d+) about", material)))
    bullets.append(f"- Read notes {','.join(notes)}")
    return reply("## Notes\n" + "\n".join(bullets) + "\n## Superseded\n- none")


def seed_notes(workspace: Path, count: int) -> None:
    directory = workspace / "memory" / SCOPE
    directory.mkdir(parents=True)
    at = time.time() - 3600
    for n, note in enumerate(long_notes(count)):
        append_daily_note(directory, note, "Noted.", at=at + n, tz=UTC)


def known_window(workspace: Path, server: FakeOpenAIServer, model: str, tokens: int) -> None:
    path = workspace / "preferences" / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"tokens": tokens, "source": "overflow error", "detail": "", "learnedAt": ""}
    path.write_text(json.dumps({f"{endpoint_key(server.base_url)} {model}": entry}))


def maintain(workspace: Path, server: FakeOpenAIServer) -> tuple[int, str]:
    result = run_mnemobot(
        "memory",
        "maintain",
        "--chat",
        SCOPE,
        timeout=120,
        BOT_WORKSPACE=str(workspace),
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test",
    )
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("window_known", [True, False], ids=["window-known", "window-learned"])
def test_maintain_against_a_2048_token_model_writes_memory_md(
    workspace: Path, openai_server: FakeOpenAIServer, window_known: bool
) -> None:
    openai_server.context_window = WINDOW
    openai_server.responder = rewriting_model
    seed_notes(workspace, 25)
    if window_known:  # learned by the bot's turns, as in a real run
        known_window(workspace, openai_server, "gpt-4o-mini", WINDOW)

    code, output = maintain(workspace, openai_server)

    assert code == 0, output
    line = next(x for x in output.splitlines() if "consolidate:" in x)
    assert "rewrote MEMORY.md from 25 note lines" in line and "calls" in line, line
    refused = [r for r in openai_server.recorded_requests if r.rejected]
    # A request the known window cannot hold is never sent; an unknown one is learned once.
    assert len(refused) == (0 if window_known else 1)
    for body in openai_server.requests[len(refused) :]:
        assert request_tokens(body) + body["max_tokens"] <= WINDOW
    memory = (workspace / "memory" / SCOPE / "MEMORY.md").read_text()
    read = {int(n) for n in re.findall(r"\d+", "".join(re.findall(r"Read notes [\d,]+", memory)))}
    assert read == set(range(1, 26))  # every note, over several calls
    assert len(list((workspace / "memory" / SCOPE / "archive").glob("MEMORY.*.md"))) <= 1


SMALL = "small-summarizer"
SMALL_WINDOW = 1024


def small_summary_model(request: dict[str, Any]) -> Step:
    """The chat model has a large window; the summary model a 1,024-token one."""
    if request["model"] == SMALL:
        prompt, answer = request_tokens(request), request["max_tokens"]
        if prompt + answer > SMALL_WINDOW:
            return overflow(
                "openai",
                context_tokens=SMALL_WINDOW,
                prompt_tokens=prompt,
                completion_tokens=answer,
            )
    system = context_text(request)
    shown = user_texts(request)[-1]
    if system.startswith("You keep an assistant's long-term memory"):
        facts = re.findall(r"^user: (Fact \d+: [^.]+)\.", shown, re.M)
        return reply("\n".join(f"- {fact}" for fact in facts) or "NO_REPLY")
    if system.startswith("You compress a chat"):
        return reply("SUMMARY: the user listed facts.")
    return reply("Noted.")


@pytest.mark.slow
async def test_the_flush_and_summary_fit_the_summary_models_window(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(
        workspace,
        {"llm": {"summaryModel": SMALL, "maxRetries": 0}, "compaction": {"enabled": False}},
    )
    known_window(workspace, openai_server, SMALL, SMALL_WINDOW)
    openai_server.responder = small_summary_model
    app = build_app(
        make_settings(workspace, openai_server), tuning=Tuning(background_quiet_seconds=0)
    )
    try:
        for n in range(8):
            filler = " ".join(f"word{n}x{i}" for i in range(220))
            await ask(app, f"Fact {n}: my locker number {n} is on floor {n + 2}. {filler}")
        answer = await app.commands.run(CONSOLE_CHAT, ParsedCommand("compact", "2"))
        # The flush follows the reply on this local (one-slot) server.
        assert app.maintenance is not None
        await app.maintenance.settled()
    finally:
        await app.close()

    small = [r for r in openai_server.recorded_requests if r.body["model"] == SMALL]
    assert small and not any(r.rejected for r in small)
    flushes = [r for r in small if system_text(r.body).startswith("You keep an")]
    assert len(flushes) >= 2  # split: the dropped messages do not fit one call
    assert answer.startswith("Compacted with summary"), answer
    facts = [
        item.content
        for item in app.memory.scopes.store(SCOPE.replace("kc", "local")).items.values()
        if "flush" in item.tags
    ]
    assert sorted(facts) == sorted(
        f"Fact {n}: my locker number {n} is on floor {n + 2}" for n in range(7)
    )
