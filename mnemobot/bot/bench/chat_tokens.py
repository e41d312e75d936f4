"""`mnemobot bench chat-tokens`: memory tokens per turn of live scripted chats, and recall.

Three scripted chats (English, Russian, Chinese; `bot.bench.chat_scripts`, 29 turns and one
`/new` each) run through the real assistant and pipeline against the fake OpenAI server of
the test suite, in this process. For every turn the bench reads the system prompt the model
received and counts the tokens of its memory parts (`# Memory`, `# Long-term memory of
this chat`; the operator's notes are not the bot's memory). It reports their mean per turn,
their mean on small-talk turns, and recall: the share of the questions after `/new` whose
answer the memory part holds. A memory token that repeats the conversation the request
already carries, or comes with a "thanks", is paid for and earns nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mnemobot.bot.app import build_app
from mnemobot.bot.bench.chat_scripts import CHATS, NEW, SMALL_TALK, Step, Turn
from mnemobot.bot.bench.suite_fakes import require_test_fakes
from mnemobot.config.settings import Settings
from mnemobot.memory.tokens import estimate_tokens
from mnemobot.systems.context import ChatRef

_SECTION = re.compile(r"\n\n(?=# )")
MEMORY_HEADINGS = ("# Memory\n", "# Long-term memory of this chat\n")


@dataclass(frozen=True, slots=True)
class ChatFigures:
    language: str
    turns: int
    mean_memory_tokens: float
    max_memory_tokens: int
    small_talk_turns: int
    small_talk_mean_tokens: float
    small_talk_max_tokens: int
    recall_questions: int
    recalled: int


def memory_part(system_prompt: str) -> str:
    """The memory sections of a system prompt (the pack, the chat's MEMORY.md, notes)."""
    return "\n\n".join(
        part for part in _SECTION.split(system_prompt) if part.startswith(MEMORY_HEADINGS)
    )


def _system_prompt(request: dict[str, Any]) -> str:
    messages = request.get("messages") or []
    if messages and messages[0].get("role") == "system":
        return str(messages[0].get("content") or "")
    return ""


def _fake_server() -> Any:
    require_test_fakes("chat-tokens")
    from tests.fakes.openai_server import FakeOpenAIServer

    return FakeOpenAIServer()


async def run_chat(language: str, steps: list[Step], workspace: Path, server: Any) -> ChatFigures:
    """One scripted chat in a fresh workspace below `workspace`, against `server` (a
    running FakeOpenAIServer)."""
    from tests.fakes.openai_server import reply

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        bot_workspace=workspace / language,
        openai_api_key="bench-key",
        openai_base_url=server.base_url,
        bot_model="bench-model",
    )
    app = build_app(settings)
    chat = ChatRef("telegram", "1", user_id="1", user_name=None)
    tokens: list[int] = []
    small: list[int] = []
    recalled = questions = 0
    message_id = 0
    try:
        for step in steps:
            if step == NEW:
                app.assistant.reset_session(chat)
                continue
            assert isinstance(step, Turn)
            message_id += 1
            server.clear()
            server.script(reply(step.reply))
            outcome = await app.assistant.handle_text(
                chat, step.user, message_refs=[f"tg:{message_id}"]
            )
            if outcome is None or not outcome.answered:
                raise RuntimeError(f"turn {step.user!r} was not answered")
            memory = memory_part(_system_prompt(server.requests[0]))
            count = estimate_tokens(memory) if memory else 0
            tokens.append(count)
            if step.user in SMALL_TALK:
                small.append(count)
            if step.expects is not None:
                questions += 1
                recalled += step.expects.lower() in memory.lower()
    finally:
        await app.close()
    return ChatFigures(
        language=language,
        turns=len(tokens),
        mean_memory_tokens=statistics.fmean(tokens),
        max_memory_tokens=max(tokens),
        small_talk_turns=len(small),
        small_talk_mean_tokens=statistics.fmean(small) if small else 0.0,
        small_talk_max_tokens=max(small, default=0),
        recall_questions=questions,
        recalled=recalled,
    )


def run_bench() -> list[ChatFigures]:
    server = _fake_server()
    with server, tempfile.TemporaryDirectory(prefix="mnemobot-bench-chat-") as tmp:
        return [
            asyncio.run(run_chat(language, steps, Path(tmp), server))
            for language, steps in CHATS.items()
        ]


def format_report(figures: list[ChatFigures]) -> str:
    lines = [
        "memory tokens per turn of scripted live chats (system prompt as the model got it)",
        f"{'chat':<6}{'turns':>6}{'mean':>8}{'max':>7}{'small talk mean':>17}"
        f"{'small talk max':>16}{'recall':>10}",
    ]
    for f in figures:
        lines.append(
            f"{f.language:<6}{f.turns:>6}{f.mean_memory_tokens:>8.1f}{f.max_memory_tokens:>7}"
            f"{f.small_talk_mean_tokens:>17.1f}{f.small_talk_max_tokens:>16}"
            f"{f'{f.recalled}/{f.recall_questions}':>10}"
        )
    total_turns = sum(f.turns for f in figures)
    mean = sum(f.mean_memory_tokens * f.turns for f in figures) / max(1, total_turns)
    recall = sum(f.recalled for f in figures) / max(1, sum(f.recall_questions for f in figures))
    lines.append(f"all: mean {mean:.1f} memory tokens per turn, recall {recall:.2f}")
    return "\n".join(lines)


def bench_command(args: argparse.Namespace) -> int:
    figures = run_bench()
    if args.json:
        print(json.dumps([asdict(f) for f in figures], indent=2, ensure_ascii=False))
    else:
        print(format_report(figures))
    return 0
