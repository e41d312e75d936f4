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
from mnemobot.bot.cli.init import offer_init
from mnemobot.bot.cli.init import register as add_init_command
from mnemobot.bot.cli.startup import fail, log_startup, settings_or_exit
from mnemobot.config.settings import ENV_FILE_VARIABLE
from mnemobot.config.workspace import use_private_modes
from mnemobot.memory.process_tuning import tune_process
from mnemobot.memory.session import InvalidSessionKey, check_session_key
from mnemobot.systems.context import ChatRef

NO_MODEL = (
    "mnemobot: no model server is set: `mnemobot chat` needs no bot token but does need a "
    "model: set OPENAI_BASE_URL to an OpenAI-compatible server (llama.cpp, Ollama, vLLM: "
    "e.g. http://127.0.0.1:8080/v1) or OPENAI_API_KEY for OpenAI's."
)


def _cmd_chat(args: argparse.Namespace) -> int:
    settings = settings_or_exit()
    if settings.openai_base_url is None and settings.openai_api_key is None:
        # OpenAI's endpoint without a key cannot answer: say so instead of "unavailable".
        code = offer_init(NO_MODEL, telegram=False, then="Starting the chat:")
        if code != 0:
            return code
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
        help=ENV_FILE_HELP,
    )
    parser.add_argument("--version", action="version", version=f"mnemobot {installed_version()}")
    # Not required: a bare `mnemobot` prints this help instead of an error.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_init_command(sub)

    chat = sub.add_parser("chat", help="talk to the bot in this terminal (or pipe lines in)")
    chat.add_argument("--chat-id", default="local", help="console chat id (default: local)")
    chat.add_argument("--user-id", default="local", help="user id shown to the bot")
    chat.set_defaults(handler=_cmd_chat)

    check = sub.add_parser(
        "doctor",
        help="check settings, workspace, model, Telegram token, Redis, MCP servers, "
        "embeddings and speech to text",
        description="Check every setting against the real servers, one line per check: "
        "settings file, allowed users and operators, workspace, runtime config, speech to "
        "text, Redis, the model server and model, the context window, embeddings, the "
        "Telegram token, scheduled tasks and each MCP server. Changes nothing on disk; exit "
        "1 if a check fails.",
    )
    check.set_defaults(handler=_cmd_doctor)

    memory_commands.register(sub)
    add_config_command(sub)
    run.register(sub)
    tool_commands.register(sub)
    accept_env_file_everywhere(parser)
    return parser


ENV_FILE_HELP = (
    "read settings from this file only (like MNEMOBOT_ENV_FILE); default: ./.env over "
    "~/.mnemobot/.env"
)


def accept_env_file_everywhere(parser: argparse.ArgumentParser) -> None:
    """`--env-file PATH` after any command too (`mnemobot doctor --env-file F`), not only
    before it: added to every subcommand's parser that has none of its own (init's names
    the file it writes, the same file)."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for child in dict.fromkeys(action.choices.values()):
            if "--env-file" not in child._option_string_actions and child.add_help:
                # SUPPRESS: a nested command's parser must not reset what its parent read.
                child.add_argument(
                    "--env-file",
                    dest="env_file",
                    metavar="PATH",
                    default=argparse.SUPPRESS,
                    help=ENV_FILE_HELP,
                )
            accept_env_file_everywhere(child)


def chosen_env_file(args: argparse.Namespace) -> str | argparse.ArgumentError | None:
    """The env file named before or after the command; both must agree."""
    before = args.global_env_file
    after = getattr(args, "env_file", None)
    if before and after and before != after:
        return argparse.ArgumentError(
            None, f"--env-file given twice ({before} and {after}); give it once"
        )
    return before or after


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
    return int(args.handler(args))
