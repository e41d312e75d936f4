"""`mnemobot bench prefix`: how much of each request a model server can take from its cache.

A server reuses its work only on the part of a request that begins exactly like the
request before it (llama.cpp keeps the KV cache of that common prefix; hosted APIs bill it
at a fraction). The chat: ten facts told, `/new`, then 30 turns three minutes apart, a
memory question every third turn (about one of the facts: only memory can bring it back),
statements and small talk between. It runs through the real assistant and pipeline, in
this process, on a clock of its own.

Against the fake model server (default) it reports, per request, the reuse share: the
characters (and the bot's estimated tokens) of the request's messages that equal the
previous request's beginning, over the whole (and the same with the tool schemas in front,
as some templates lay them out: they never change, so that share is higher); the cached and
new input tokens the server reported (the bot's `/status` figures); and recall: the
questions whose fact reached the model. With `--llama FILE.gguf` it starts
llama-cpp-python's server on that model (`--verbose true`) and reads, per request, the
tokens its log says came from the KV cache ("N prefix-match hit, remaining M prompt tokens
to eval"): the share of prompt tokens that were not computed again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemobot.base.tokens import estimate_tokens
from mnemobot.bot.app import build_app
from mnemobot.config.settings import Settings
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.model_call.prompt_usage import INPUT_TOKENS_KEY
from mnemobot_tooling.bench.report import cpu_model, usable_cpus
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    cached_prefix_chars,
    prompt_chars_for_cache,
    reply,
)

# Monday 2026-03-02 09:00 UTC; the turns after /new start an hour later.
CHAT_START = 1_772_442_000.0
TURN_GAP_SECONDS = 180.0

# Told before /new, asked after it: (what the user says, the question, what must reach
# the model for the answer).
FACTS: tuple[tuple[str, str, str], ...] = (
    (
        "My cat is called Miso and she is afraid of the vacuum cleaner.",
        "What is my cat afraid of?",
        "vacuum",
    ),
    ("I work as a nurse at the St. Mary clinic.", "Where do I work as a nurse?", "St. Mary"),
    ("My locker code at the gym is QX-7731.", "What is my gym locker code?", "QX-7731"),
    (
        "Our hotel in Lisbon is the Casa Azul near Rua Augusta.",
        "Which hotel did we book in Lisbon?",
        "Casa Azul",
    ),
    ("I am allergic to shellfish.", "What am I allergic to?", "shellfish"),
    (
        "My flight TP1351 lands on May 12 at 9:40.",
        "When does my flight TP1351 land?",
        "9:40",
    ),
    (
        "My brother Tomas lives in Porto and teaches chemistry.",
        "What does my brother Tomas teach?",
        "chemistry",
    ),
    ("My favourite tea is a smoky lapsang souchong.", "What is my favourite tea?", "lapsang"),
    (
        "The wifi password at the cabin is larch-2291.",
        "What is the wifi password at the cabin?",
        "larch-2291",
    ),
    (
        "My daughter's piano lesson is every Thursday at 17:30.",
        "When is my daughter's piano lesson?",
        "Thursday",
    ),
)
# Between the questions: statements and small talk, two for each question.
BETWEEN: tuple[str, ...] = (
    "hi",
    "I am planning the week today.",
    "The weather is rainy again.",
    "thanks!",
    "I started reading a novel about sailors.",
    "ok",
    "We might repaint the kitchen in spring.",
    "👍",
    "My neighbour lent me a ladder.",
    "great, thanks",
    "I want to bake bread on Sunday.",
    "ok, noted",
    "The train to work was late this morning.",
    "nice",
    "I should call the plumber about the sink.",
    "thank you",
    "Our team meeting moved to Wednesday.",
    "cool",
    "I bought new running shoes.",
    "ok thanks",
)
MODEL_REPLY = "Noted. Anything else I can help with?"


@dataclass(frozen=True, slots=True)
class Turn:
    text: str
    # For a question: what must reach the model.
    expects: str | None = None


def chat_after_new() -> list[Turn]:
    """30 turns: two of `BETWEEN`, then a question, ten times."""
    turns: list[Turn] = []
    for index, (_, question, expects) in enumerate(FACTS):
        turns += [Turn(BETWEEN[2 * index]), Turn(BETWEEN[2 * index + 1])]
        turns.append(Turn(question, expects))
    return turns


@dataclass(slots=True)
class RequestFigures:
    """One request after /new against the one before it."""

    chars: int
    reused_chars: int
    tokens: int
    reused_tokens: int

    @property
    def share(self) -> float:
        return self.reused_chars / self.chars if self.chars else 0.0

    @property
    def token_share(self) -> float:
        return self.reused_tokens / self.tokens if self.tokens else 0.0


@dataclass(slots=True)
class PrefixFigures:
    server: str
    # The messages of each request after /new against the previous request's.
    requests: list[RequestFigures] = field(default_factory=list)
    # The same with the tool schemas in front of the messages (the fake server's cache).
    with_tools: list[RequestFigures] = field(default_factory=list)
    questions: int = 0
    recalled: int = 0
    missed: list[str] = field(default_factory=list)
    # As the bot counted them from what the server reported (`/status`).
    reported_cached: int = 0
    reported_prompt: int = 0
    reported_calls: int = 0
    # Calls whose server said what it cached (llama-cpp-python's does not).
    reported_told: int = 0
    # llama-cpp-python's log, per request after /new: (tokens from the cache, evaluated).
    server_log: list[tuple[int, int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        shares = [r.share for r in self.requests]
        token_shares = [r.token_share for r in self.requests]
        out: dict[str, Any] = {
            "server": self.server,
            "requests": len(self.requests),
            "reuse_share_mean": statistics.fmean(shares) if shares else 0.0,
            "reuse_share_min": min(shares, default=0.0),
            "reuse_token_share_mean": statistics.fmean(token_shares) if token_shares else 0.0,
            "reuse_share_with_tools_mean": (
                statistics.fmean(r.share for r in self.with_tools) if self.with_tools else 0.0
            ),
            "recalled": self.recalled,
            "questions": self.questions,
            "missed": self.missed,
            "reported_cached_tokens": self.reported_cached,
            "reported_prompt_tokens": self.reported_prompt,
            "reported_calls": self.reported_calls,
        }
        if self.server_log:
            hit = sum(h for h, _ in self.server_log)
            evaluated = sum(m for _, m in self.server_log)
            out["server_prefix_hit_tokens"] = hit
            out["server_evaluated_tokens"] = evaluated
            out["server_cached_share"] = hit / (hit + evaluated) if hit + evaluated else 0.0
        return out


class _TurnClock:
    def __init__(self) -> None:
        self.now = CHAT_START

    def advance(self, seconds: float = TURN_GAP_SECONDS) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def _messages_text(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages", []), ensure_ascii=False)


def _figures_of(
    previous: dict[str, Any], current: dict[str, Any], *, with_tools: bool = False
) -> RequestFigures:
    """`current` against `previous`: its messages (with `with_tools`, the tool schemas
    before them, as the fake server caches) that equal the beginning of `previous`'."""
    read = prompt_chars_for_cache if with_tools else _messages_text
    before, now = read(previous), read(current)
    reused = cached_prefix_chars(before, now)
    return RequestFigures(
        chars=len(now),
        reused_chars=reused,
        tokens=estimate_tokens(now),
        reused_tokens=estimate_tokens(now[:reused]),
    )


async def run_chat(
    workspace: Path,
    base_url: str,
    model: str,
    *,
    fake: FakeOpenAIServer | None = None,
    log: _ServerLog | None = None,
    max_output_tokens: int | None = None,
) -> PrefixFigures:
    """The chat against the server at `base_url`; `fake` when it is the fake (then each
    request is read back from it), `log` when it is llama-cpp-python's server."""
    if max_output_tokens is not None:
        config = workspace / "preferences" / "runtime-config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"llm": {"maxOutputTokens": max_output_tokens}}))
    settings = Settings(
        _env_file=None,
        bot_workspace=workspace,
        openai_api_key="bench-key",
        openai_base_url=base_url,
        bot_model=model,
    )
    clock = _TurnClock()
    app = build_app(settings, clock=clock)
    chat = ChatRef("telegram", "1", user_id="1", user_name="Ada")
    figures = PrefixFigures(server="fake" if fake is not None else base_url)
    message_id = 0

    async def turn(text: str) -> None:
        nonlocal message_id
        message_id += 1
        clock.advance()
        if fake is not None:
            fake.script(reply(MODEL_REPLY))
        outcome = await app.assistant.handle_text(chat, text, message_refs=[f"tg:{message_id}"])
        if outcome is None or not outcome.answered:
            raise RuntimeError(f"turn {text!r} was not answered")

    try:
        for fact, _, _ in FACTS:
            await turn(fact)
        app.assistant.reset_session(chat)
        clock.advance(3600)
        before = len(fake.requests) if fake is not None else 0
        log_before = log.mark() if log is not None else 0
        for step in chat_after_new():
            await turn(step.text)
            if step.expects is None or fake is None:
                continue  # recall is read from what the fake server was sent
            figures.questions += 1
            if step.expects.lower() in json.dumps(fake.last_request(), ensure_ascii=False).lower():
                figures.recalled += 1
            else:
                figures.missed.append(step.text)
        if fake is not None:
            requests = fake.requests
            pairs = [(requests[i - 1], requests[i]) for i in range(max(1, before), len(requests))]
            figures.requests = [_figures_of(*pair) for pair in pairs]
            figures.with_tools = [_figures_of(*pair, with_tools=True) for pair in pairs]
        if log is not None:
            figures.server_log = log.hits_since(log_before)
        counts = app.sessions.get(chat.key).metadata.get(INPUT_TOKENS_KEY) or {}
        figures.reported_cached = int(counts.get("cached", 0))
        figures.reported_prompt = int(counts.get("prompt", 0))
        figures.reported_calls = int(counts.get("calls", 0))
        figures.reported_told = int(counts.get("told", 0))
    finally:
        await app.close()
    return figures


# --------------------------------------------------------------------------------------------
# llama-cpp-python's server
# --------------------------------------------------------------------------------------------

_PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


class _ServerLog:
    """The server's stderr, read as it grows, for its prefix-match lines."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _hits(self) -> list[tuple[int, int]]:
        text = self.path.read_text(encoding="utf-8", errors="replace")
        return [(int(hit), int(left)) for hit, left in _PREFIX_HIT.findall(text)]

    def mark(self) -> int:
        return len(self._hits())

    def hits_since(self, mark: int) -> list[tuple[int, int]]:
        return self._hits()[mark:]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(
    model: Path, python: str, n_ctx: int, log_path: Path
) -> Iterator[tuple[str, _ServerLog]]:
    """llama-cpp-python's server on `model`, on a free local port, until the block ends."""
    port = _free_port()
    command = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--n_ctx",
        str(n_ctx),
        "--model_alias",
        "smollm",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--verbose",
        "true",
    ]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            url = f"http://127.0.0.1:{port}/v1"
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"llama-cpp-python's server stopped; see {log_path}")
                try:
                    with urllib.request.urlopen(f"{url}/models", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("llama-cpp-python's server did not start") from None
                    time.sleep(0.5)
            yield url, _ServerLog(log_path)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def format_report(figures: PrefixFigures) -> str:
    summary = figures.summary()
    lines = [f"prompt reuse over a 30-turn chat after /new ({figures.server})"]
    if figures.requests:
        lines.append(
            f"  requests: {summary['requests']}; messages that are the previous request's "
            "beginning: mean "
            f"{summary['reuse_share_mean']:.1%} of characters (min "
            f"{summary['reuse_share_min']:.1%}), {summary['reuse_token_share_mean']:.1%} of "
            "estimated tokens"
        )
        lines.append(
            "  with the tool schemas in front (as the fake server caches): mean "
            f"{summary['reuse_share_with_tools_mean']:.1%}"
        )
        lines.append(
            "  per request (% of messages reused): "
            + " ".join(f"{request.share:.0%}" for request in figures.requests)
        )
    if figures.questions:
        lines.append(f"  recall: {figures.recalled}/{figures.questions} facts reached the model")
        lines += [f"    missed: {question}" for question in figures.missed]
    if figures.reported_calls and not figures.reported_told:
        lines.append(
            f"  as the server reported (/status): {figures.reported_prompt:,} input tokens over "
            f"{figures.reported_calls} calls; it does not say what it cached"
        )
    elif figures.reported_calls:
        cached, prompt = figures.reported_cached, figures.reported_prompt
        lines.append(
            f"  as the server reported (/status): {cached:,} cached, {prompt - cached:,} new "
            f"input tokens over {figures.reported_calls} calls ({cached / max(1, prompt):.1%})"
        )
    if figures.server_log:
        lines.append(
            f"  llama-cpp-python's log: {summary['server_prefix_hit_tokens']:,} prompt tokens "
            f"from its cache, {summary['server_evaluated_tokens']:,} evaluated "
            f"({summary['server_cached_share']:.1%} from the cache) over "
            f"{len(figures.server_log)} requests"
        )
        lines.append(
            "  per request (cached/evaluated): "
            + " ".join(f"{hit}/{left}" for hit, left in figures.server_log)
        )
    return "\n".join(lines)


def bench_command(args: argparse.Namespace) -> int:
    args.llama_python = args.llama_python or default_llama_python()
    host = f"{usable_cpus()} cpus, {cpu_model()}"
    results: list[PrefixFigures] = []
    with tempfile.TemporaryDirectory(prefix="mnemobot-bench-prefix-") as tmp:
        with FakeOpenAIServer() as fake:
            results.append(asyncio.run(run_chat(Path(tmp) / "fake", fake.base_url, "m", fake=fake)))
        if args.llama is not None:
            model = Path(args.llama)
            if not model.is_file():
                print(f"--llama: no model file at {model}")
                return 2
            log_path = Path(tmp) / "llama-server.log"
            try:
                with llama_server(model, args.llama_python, args.n_ctx, log_path) as (url, log):
                    results.append(
                        asyncio.run(
                            run_chat(
                                Path(tmp) / "llama",
                                url,
                                "smollm",
                                log=log,
                                max_output_tokens=args.max_output_tokens,
                            )
                        )
                    )
            except RuntimeError as exc:
                print(f"--llama: {exc}")
                tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
                print(tail, file=sys.stderr)
                return 1
    if args.json:
        print(json.dumps({"machine": host, "runs": [r.summary() for r in results]}, indent=2))
    else:
        print(f"machine: {host}")
        for figures in results:
            print(format_report(figures))
    return 0


def default_llama_python() -> str:
    """The Python that has llama-cpp-python: $MNEMOBOT_LLAMA_PYTHON, else this one."""
    return os.environ.get("MNEMOBOT_LLAMA_PYTHON", sys.executable)
