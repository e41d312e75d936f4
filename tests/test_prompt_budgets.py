"""Prompt sizes: the operator's instructions, and what compaction shows its model."""

from __future__ import annotations

from pathlib import Path

from mnemobot.bot.app import build_app
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.systems.compaction.summary_model import CompactionCalls
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, system_text, user_texts
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config


async def test_long_operator_instructions_are_cut_to_their_budget(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # Past the 2,000 tokens (an estimate of 4 characters each) operator instructions get.
    instructions = "Always answer like a pirate. " + "Arr " * 4_000 + "FINAL-LINE"
    write_runtime_config(
        workspace, {"llm": {"maxRetries": 0}, "assistant": {"instructions": instructions}}
    )
    app = build_app(make_settings(workspace, openai_server))
    try:
        await ask(app, "hello")
    finally:
        await app.close()
    (turn,) = [r for r in openai_server.requests if user_texts(r) == ["hello"]]
    prompt = system_text(turn)
    assert "Always answer like a pirate." in prompt and "[... cut to fit its budget]" in prompt
    assert "FINAL-LINE" not in prompt and 1_500 < prompt.count("Arr") < 2_100


async def test_compaction_shows_its_model_only_the_sizes_it_allows(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}, "compaction": {"enabled": False}})
    calls = CompactionCalls(
        summary_message_chars=60, flush_message_chars=80, flush_input_chars=1_000
    )
    tuning = Tuning(compaction_calls=calls, background_quiet_seconds=0)
    app = build_app(make_settings(workspace, openai_server), tuning=tuning)
    try:
        for i in range(6):
            await ask(app, f"message {i} " + "x" * 400)
        openai_server.script(reply("SUMMARY: talked"), reply("NO_REPLY"))
        await app.commands.run(CONSOLE_CHAT, ParsedCommand("compact", "2"))
        # The flush follows the reply on this local (one-slot) server.
        assert app.maintenance is not None
        await app.maintenance.settled()
    finally:
        await app.close()
    (summary,) = [r for r in openai_server.requests if "CONVERSATION:" in user_texts(r)[0]]
    (flush,) = [r for r in openai_server.requests if "CONVERSATION EXCERPT" in user_texts(r)[0]]
    summary_lines = user_texts(summary)[0].split("CONVERSATION:\n")[1].splitlines()
    assert summary_lines and all(len(line) <= len("assistant: ") + 60 for line in summary_lines)
    excerpt = user_texts(flush)[0].split("CONVERSATION EXCERPT:\n")[1]
    assert len(excerpt) <= 1_000 and "message 4" in excerpt
    assert all(len(line) <= len("assistant: ") + 80 for line in excerpt.splitlines())
    assert flush["temperature"] == 0.2 and summary["temperature"] == 0.3
