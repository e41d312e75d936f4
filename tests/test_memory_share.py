"""Memory takes a stated share of a small context, so the conversation keeps its room.

The crossing: the MemoryPack (sized by its own budgets) x compaction (sized by the
context). With 4,000 tokens before compaction, a full pack once left room for one message:
the bot compacted on almost every turn and kept one message each time.
"""

from __future__ import annotations

import logging
import random
import re
from pathlib import Path

import pytest

from mnemobot.bot.app import build_app
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.memory.tokens import estimate_tokens
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config
from tests.fakes.openai_server import FakeOpenAIServer, Step, reply, system_text, user_texts

WORD_LIST = (
    "apple river mountain code garden project budget meeting travel Berlin Paris coffee tea "
    "music guitar piano dentist appointment car bicycle kitchen recipe pasta soup friend "
    "sister brother office laptop server deploy database backup invoice"
)
WORDS = WORD_LIST.split()
TURNS = 80


def short_answers(request: dict[str, object]) -> Step:
    system = system_text(request)
    if system.startswith("You compress a chat"):
        return reply("SESSION INTENT: notes\nSUMMARY: the user sent notes\nARTIFACTS: none")
    if system.startswith("You keep an assistant's long-term memory"):
        return reply("NO_REPLY")
    return reply("Noted: " + user_texts(request)[-1][:60])


async def test_a_small_context_compacts_rarely_and_keeps_the_recent_messages(
    workspace: Path, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    write_runtime_config(
        workspace, {"compaction": {"maxContextTokens": 4000, "keepLastMessages": 6}}
    )
    openai_server.responder = short_answers
    rng = random.Random(1)
    notes = [f"Note {n}: " + " ".join(rng.choice(WORDS) for _ in range(105)) for n in range(TURNS)]
    assert 170 <= estimate_tokens(notes[0]) <= 200  # about 180 tokens each
    app = build_app(make_settings(workspace, openai_server))
    caplog.set_level(logging.INFO, logger="mnemobot.systems.compactor")
    try:
        for note in notes:
            await ask(app, note)
        last_pack = app.assistant.activity_for(CONSOLE_CHAT).last_pack_tokens
    finally:
        await app.close()

    kept = [int(k) for k in re.findall(r"compacted \S+: removed \d+, kept (\d+)", caplog.text)]
    assert 0 < len(kept) <= TURNS // 8, kept  # about once per 10 turns (9 measured)
    assert min(kept) >= 4, kept
    allowance = RuntimeConfig.model_validate(
        {"compaction": {"maxContextTokens": 4000}}
    ).memory_allowance_tokens()
    assert last_pack is not None and 0 < last_pack <= allowance


def test_the_memory_allowance_is_a_share_of_the_smaller_budget() -> None:
    config = RuntimeConfig.model_validate(
        {"compaction": {"maxContextTokens": 4000}, "memory": {"maxContextShare": 0.25}}
    )
    assert config.memory_allowance_tokens() == 1000
    narrowed = config.for_context_window(2048)  # a small local model: its window rules
    assert narrowed.memory_allowance_tokens() == int(0.25 * int(0.8 * (2048 - 512)))
