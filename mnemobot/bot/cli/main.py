"""The `mnemobot` command line: run, chat, doctor, memory, eval, bench."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from mnemobot.bot.app import build_app
from mnemobot.bot.channels.console.channel import run_console
from mnemobot.bot.cli import memory_commands, run, tool_commands
from mnemobot.bot.cli.config_docs import register as add_config_command
from mnemobot.bot.cli.doctor import doctor
from mnemobot.bot.cli.init import register as add_init_command
from mnemobot.bot.cli.startup import fail, log_startup, settings_or_exit
from mnemobot.config.settings import ENV_FILE_VARIABLE
from mnemobot.config.workspace import use_private_modes
from mnemobot.memory.process_tuning import tune_process
from mnemobot.memory.session import InvalidSessionKey, check_session_key
from mnemobot.systems.context import ChatRef


def _cmd_chat(args: argparse.Namespace) -> int:
    settings = settings_or_exit()

    try:
        check_session_key(ChatRef("console", args.chat_id).key)
    except InvalidSessionKey as exc:
        return fail(str(exc).replace("chat key", "--chat-id", 1))
    log_startup(settings)

    async def session() -> int:
        app = build_app(settings)
        app.start_background()
        try:
            return await run_console(app, chat_id=args.chat_id, user_id=args.user_id)
        finally:
            await app.close()

    try:
        return asyncio.run(session())
    except KeyboardInterrupt:
        return 130


def _cmd_doctor(args: argparse.Namespace) -> int:
    return doctor(sys.stdout)


def installed_version() -> str:
    """The version pip installed; a source tree that was never installed has none."""
    try:
        return version("mnemobot")
    except PackageNotFoundError:
        return "unknown (not installed; run pip install .)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemobot", description="A Telegram AI assistant that remembers."
    )
    parser.add_argument(
        "--env-file",
        dest="global_env_file",
        metavar="PATH",
        help="read settings from this file only (like MNEMOBOT_ENV_FILE); default: ./.env "
        "over ~/.mnemobot/.env",
    )
    parser.add_argument("--version", action="version", version=f"mnemobot {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_init_command(sub)

    chat = sub.add_parser("chat", help="talk to the bot in this terminal (or pipe lines in)")
    chat.add_argument("--chat-id", default="local", help="console chat id (default: local)")
    chat.add_argument("--user-id", default="local", help="user id shown to the bot")
    chat.set_defaults(handler=_cmd_chat)

    check = sub.add_parser("doctor", help="check settings, workspace, model and Telegram token")
    check.set_defaults(handler=_cmd_doctor)

    memory_commands.register(sub)
    add_config_command(sub)
    run.register(sub)
    tool_commands.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Conversations, memory, journals and exports are their user's only (0600 / 0700).
    use_private_modes()
    parser = build_parser()
    words, tool_args = tool_commands.split_tool_command(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(words)
    if tool_args is not None:
        args.tool_args = tool_args
    if args.global_env_file:
        os.environ[ENV_FILE_VARIABLE] = args.global_env_file
    tune_process()
    return int(args.handler(args))
