"""Memory takes a stated share of a small context, so the conversation keeps its room.

The crossing: the MemoryPack (sized by its own budgets) x compaction (sized by the
context). With 4,000 tokens before compaction, a full pack once left room for one message:
the bot compacted on almost every turn and kept one message each time.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemobot.base.tokens import estimate_tokens
from mnemobot.bot.app import build_app
from mnemobot.config.runtime import RuntimeConfig
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    context_text,
    reply,
    user_texts,
)
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config

WORD_LIST = (
    "apple river mountain code garden project budget meeting travel Berlin Paris coffee tea "
    "music guitar piano dentist appointment car bicycle kitchen recipe pasta soup friend "
    "sister brother office laptop server deploy database backup invoice"
)
WORDS = WORD_LIST.split()
TURNS = 80


def answering(echo: bool) -> Callable[[dict[str, object]], Step]:
    """Short summaries and no flushed facts; the answer a short note, or the whole message
    echoed (the fake's default: every turn then adds two long messages)."""

    def respond(request: dict[str, object]) -> Step:
        system = context_text(request)
        if system.startswith("You compress a chat"):
            return reply("SESSION INTENT: notes\nSUMMARY: the user sent notes\nARTIFACTS: none")
        if system.startswith("You keep an assistant's long-term memory"):
            return reply("NO_REPLY")
        said = user_texts(request)[-1]
        return reply(f"echo: {said}" if echo else f"Noted: {said[:60]}")

    return respond


@pytest.mark.parametrize(
    ("echo", "most_compactions"),
    # Measured: 9 with short answers (23 before the share), 25 with echoes (61 before, most
    # of them keeping 1 message). An echoed turn adds ~380 tokens to a 4,000-token budget.
    # With the schedule tool's definition (~200 tokens more in every request, a twentieth
    # of this budget) echoes take 37. Since a long note shows as its passage, the pack
    # fills the same share with more of them: 11 with short answers.
    [(False, TURNS // 6), (True, TURNS // 2)],
    ids=["short-answers", "echoed"],
)
@pytest.mark.slow
async def test_a_small_context_compacts_as_the_conversation_grows_and_keeps_recent_messages(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
    echo: bool,
    most_compactions: int,
) -> None:
    write_runtime_config(
        workspace, {"compaction": {"maxContextTokens": 4000, "keepLastMessages": 6}}
    )
    openai_server.responder = answering(echo)
    rng = random.Random(1)
    notes = [f"Note {n}: " + " ".join(rng.choice(WORDS) for _ in range(105)) for n in range(TURNS)]
    assert 170 <= estimate_tokens(notes[0]) <= 200  # about 180 tokens each
    app = build_app(make_settings(workspace, openai_server))
    caplog.set_level(logging.INFO, logger="mnemobot.systems.compaction.compactor")
    try:
        for note in notes:
            await ask(app, note)
        last_pack = app.assistant.activity_for(CONSOLE_CHAT).last_pack_tokens
    finally:
        await app.close()

    kept = [int(k) for k in re.findall(r"compacted \S+: removed \d+, kept (\d+)", caplog.text)]
    assert 0 < len(kept) <= most_compactions, kept
    assert min(kept) >= 4, kept
    allowance = RuntimeConfig.model_validate(
        {"compaction": {"maxContextTokens": 4000}}
    ).memory_allowance_tokens()
    assert last_pack is not None and 0 < last_pack <= allowance


def test_the_memory_allowance_is_a_share_of_the_smaller_budget() -> None:
    config = RuntimeConfig.model_validate({"compaction": {"maxContextTokens": 4000}})
    assert config.memory_allowance_tokens() == 800  # a fifth (MEMORY_CONTEXT_SHARE)
    narrowed = config.for_context_window(2048)  # a small local model: its window rules
    assert narrowed.memory_allowance_tokens() == int(0.2 * int(0.8 * (2048 - 512)))
