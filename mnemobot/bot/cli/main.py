"""The `mnemobot` command line: parse the words (`parser`), then run the one command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from mnemobot.bot.cli import tool_commands
from mnemobot.bot.cli.parser import build_parser, chosen_env_file, handler_of
from mnemobot.bot.cli.process_tuning import tune_process
from mnemobot.config.settings import ENV_FILE_VARIABLE
from mnemobot.config.workspace import use_private_modes

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    # Conversations, memory, journals and exports are their user's only (0600 / 0700).
    use_private_modes()
    parser = build_parser()
    words, tool_args = tool_commands.split_tool_command(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help()
        return 0
    if tool_args is not None:
        args.tool_args = tool_args
    env_file = chosen_env_file(args)
    if isinstance(env_file, argparse.ArgumentError):
        parser.error(str(env_file))
    if env_file:
        os.environ[ENV_FILE_VARIABLE] = env_file
    tune_process()
    return int(handler_of(args)(args))
