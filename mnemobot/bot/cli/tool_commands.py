"""`mnemobot bench` and `mnemobot eval`: development tools, installed apart from the bot.

The benchmarks and evals live in the repository's `tooling/` folder, a distribution of its
own (mnemobot-tooling) that the wheel does not ship. It names its commands under the
`mnemobot.commands` entry-point group; this module finds the one asked for and hands it the
rest of the command line untouched, so no other command imports any of the tooling.
Without it installed, the command says in one line how to get it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "mnemobot.commands"
TOOL_COMMANDS = {
    "bench": "measure throughput, latency and costs (development tool)",
    "eval": "measure memory retrieval on a benchmark (development tool)",
}
NOT_INSTALLED = (
    "mnemobot: bench and eval are development tools: from a checkout of the repository, "
    "pip install -e ./tooling"
)


def split_tool_command(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """(what `mnemobot` parses, what the tool gets): `--env-file X bench telegram --json`
    -> (`--env-file X bench`, `telegram --json`); (argv, None) for any other command. An
    `--env-file X` after the tool's name is `mnemobot`'s too, as for every command."""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--env-file":
            index += 2
        elif arg.startswith("-"):
            index += 1
        elif arg in TOOL_COMMANDS:
            words, rest = list(argv[: index + 1]), []
            tail = list(argv[index + 1 :])
            while tail:
                word = tail.pop(0)
                if word == "--":
                    rest += [word, *tail]
                    break
                if word == "--env-file" and tail:
                    words[:0] = [word, tail.pop(0)]
                elif word.startswith("--env-file="):
                    words[:0] = [word]
                else:
                    rest.append(word)
            return words, rest
        else:
            break
    return list(argv), None


def run_tool_command(args: argparse.Namespace) -> int:
    for entry in entry_points(group=ENTRY_POINT_GROUP, name=args.command):
        try:
            tool_main = entry.load()
        except ImportError as exc:
            print(
                f"mnemobot: {args.command} is registered but cannot be imported ({exc}); "
                "reinstall the tooling: pip install -e ./tooling",
                file=sys.stderr,
            )
            return 2
        return int(tool_main(args.tool_args))
    print(NOT_INSTALLED, file=sys.stderr)
    return 2
