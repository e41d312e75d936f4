"""`mnemobot bench chat-tokens`: memory tokens per turn of live scripted chats, and recall.

Three stories, each told in English, Russian and Chinese (`chat_scripts`, 29
turns and one `/new` each), run through the real assistant and pipeline against the fake
OpenAI server of the test suite, in this process. For every turn the bench reads the
system prompt the model received and counts the tokens of its memory parts (`# Memory`,
`# Long-term memory of this chat`; the operator's notes are not the bot's memory). It
reports, per chat and per language, their mean per turn, their mean on small-talk turns,
recall (the share of the questions after `/new` whose answer the memory part holds), and
what a language costs against English over the same stories. A memory token that repeats
the conversation the request already carries, or comes with a "thanks", is paid for and
earns nothing.

Tokens are the bot's own estimate (`memory.tokens`, what its budgets use: about 4
characters a token for Latin script, 2 for Cyrillic, 1 for Han). `--tokenizer tekken`
counts them with Mistral's Tekken tokenizer instead (a real, multilingual one, shipped in
the `mistral-common` package: `pip install mistral-common`), to see what a model would
actually be sent.

Turns run on a clock of their own, `TURN_GAP_SECONDS` apart from a fixed start, as a person
types: which turns count as neighbours depends on the time between them, and wall-clock
turns a few milliseconds apart would make every figure differ from run to run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mnemobot.bot.app import build_app
from mnemobot.config.settings import Settings
from mnemobot.memory.tokens import estimate_tokens
from mnemobot.systems.context import ChatRef
from mnemobot_tooling.bench.chat_scripts import LANGUAGES, NEW, STORIES, Step, Turn
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply

# 2026-03-02 10:00 UTC, a Monday; 29 turns span about 45 minutes.
CHAT_START = 1_772_445_600.0
TURN_GAP_SECONDS = 90.0
_SECTION = re.compile(r"\n\n(?=# )")
MEMORY_HEADINGS = ("# Memory\n", "# Long-term memory of this chat\n")


@dataclass(frozen=True, slots=True)
class ChatFigures:
    story: str
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


def _fake_server() -> FakeOpenAIServer:
    return FakeOpenAIServer()


class _TurnClock:
    """A clock that moves only between turns."""

    def __init__(self) -> None:
        self.now = CHAT_START

    def advance(self) -> None:
        self.now += TURN_GAP_SECONDS

    def __call__(self) -> float:
        return self.now


TokenCount = Callable[[str], int]
TOKENIZERS = {
    "estimate": "the bot's own estimate (what its budgets use)",
    "tekken": "Mistral's Tekken tokenizer (mistral-common)",
}


def tekken_count() -> TokenCount | None:
    """Token count by Mistral's Tekken tokenizer, or None without `mistral-common`."""
    try:
        import mistral_common  # type: ignore[import-not-found]
        from mistral_common.tokens.tokenizers.tekken import (  # type: ignore[import-not-found]
            Tekkenizer,
        )
    except ImportError:
        return None
    data = Path(mistral_common.__file__).parent / "data"
    files = sorted(data.glob("tekken_*.json"))
    if not files:
        return None
    tokenizer = Tekkenizer.from_file(str(files[-1]))
    return lambda text: len(tokenizer.encode(text, bos=False, eos=False))


async def run_chat(
    language: str,
    steps: list[Step],
    workspace: Path,
    server: Any,
    story: str = "",
    count_tokens: TokenCount = estimate_tokens,
) -> ChatFigures:
    """One scripted chat in a fresh workspace below `workspace`, against `server` (a
    running FakeOpenAIServer)."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        bot_workspace=workspace / f"{story}-{language}",
        openai_api_key="bench-key",
        openai_base_url=server.base_url,
        bot_model="bench-model",
    )
    clock = _TurnClock()
    app = build_app(settings, clock=clock)
    # As Telegram gives it: the sender's first name, which turns and facts are stored with.
    chat = ChatRef("telegram", "1", user_id="1", user_name="Ada")
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
            clock.advance()
            server.clear()
            server.script(reply(step.reply))
            outcome = await app.assistant.handle_text(
                chat, step.user, message_refs=[f"tg:{message_id}"]
            )
            if outcome is None or not outcome.answered:
                raise RuntimeError(f"turn {step.user!r} was not answered")
            memory = memory_part(_system_prompt(server.requests[0]))
            count = count_tokens(memory) if memory else 0
            tokens.append(count)
            if step.small_talk:
                small.append(count)
            if step.expects is not None:
                questions += 1
                recalled += step.expects.lower() in memory.lower()
    finally:
        await app.close()
    return ChatFigures(
        story=story,
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


def run_bench(count_tokens: TokenCount = estimate_tokens) -> list[ChatFigures]:
    server = _fake_server()
    with server, tempfile.TemporaryDirectory(prefix="mnemobot-bench-chat-") as tmp:
        return [
            asyncio.run(run_chat(language, steps, Path(tmp), server, story, count_tokens))
            for story, tellings in STORIES.items()
            for language, steps in tellings.items()
        ]


@dataclass(frozen=True, slots=True)
class LanguageFigures:
    language: str
    mean_memory_tokens: float
    small_talk_max_tokens: int
    recall_questions: int
    recalled: int
    # Its memory tokens over English's, on the same stories.
    tokens_over_english: float


def by_language(figures: list[ChatFigures]) -> list[LanguageFigures]:
    def total(chats: list[ChatFigures]) -> float:
        return sum(f.mean_memory_tokens * f.turns for f in chats)

    english = total([f for f in figures if f.language == "en"])
    out: list[LanguageFigures] = []
    for language in LANGUAGES:
        chats = [f for f in figures if f.language == language]
        if not chats:
            continue
        turns = sum(f.turns for f in chats)
        out.append(
            LanguageFigures(
                language=language,
                mean_memory_tokens=total(chats) / max(1, turns),
                small_talk_max_tokens=max(f.small_talk_max_tokens for f in chats),
                recall_questions=sum(f.recall_questions for f in chats),
                recalled=sum(f.recalled for f in chats),
                tokens_over_english=total(chats) / english if english else float("nan"),
            )
        )
    return out


def format_report(figures: list[ChatFigures]) -> str:
    lines = [
        "memory tokens per turn of scripted live chats (system prompt as the model got it)",
        f"{'story':<9}{'chat':<6}{'turns':>6}{'mean':>8}{'max':>7}{'small talk mean':>17}"
        f"{'small talk max':>16}{'recall':>10}",
    ]
    for f in figures:
        lines.append(
            f"{f.story:<9}{f.language:<6}{f.turns:>6}{f.mean_memory_tokens:>8.1f}"
            f"{f.max_memory_tokens:>7}{f.small_talk_mean_tokens:>17.1f}"
            f"{f.small_talk_max_tokens:>16}{f'{f.recalled}/{f.recall_questions}':>10}"
        )
    lines.append("per language, the same stories:")
    for lang in by_language(figures):
        lines.append(
            f"  {lang.language}: mean {lang.mean_memory_tokens:.1f} memory tokens per turn "
            f"({lang.tokens_over_english:.2f}x English), recall "
            f"{lang.recalled}/{lang.recall_questions}, small talk at most "
            f"{lang.small_talk_max_tokens} tokens"
        )
    return "\n".join(lines)


def bench_command(args: argparse.Namespace) -> int:
    count_tokens: TokenCount = estimate_tokens
    if args.tokenizer == "tekken":
        tekken = tekken_count()
        if tekken is None:
            print("--tokenizer tekken needs the mistral-common package: pip install mistral-common")
            return 2
        count_tokens = tekken
    figures = run_bench(count_tokens)
    if not args.json:
        print(f"tokens counted by: {TOKENIZERS[args.tokenizer]}")
    if args.json:
        report = {
            "chats": [asdict(f) for f in figures],
            "languages": [asdict(f) for f in by_language(figures)],
        }
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_report(figures))
    return 0
