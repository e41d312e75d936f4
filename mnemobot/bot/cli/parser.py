"""The `mnemobot` command line's words: every command, option and help text, and which
function runs each.

A command's function is named by its module (`"mnemobot.bot.cli.run:run_command"`) and
imported only when that command runs: the bot's own imports (the model client above all)
cost a child Python over two seconds of CPU, which `mnemobot --help`, `config docs` or a
mistyped option should not pay.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mnemobot.bot.cli import tool_commands
from mnemobot.bot.cli.progress import PROGRESS_LINE_SECONDS
from mnemobot.config.settings import Settings

CLI = "mnemobot.bot.cli"
DEFAULT_MODEL = str(Settings.model_fields["bot_model"].default)
# The memory page's defaults (`mnemobot web`, `run --web`): this machine only.
WEB_HOST = "127.0.0.1"
WEB_PORT = 8765
ENV_FILE_HELP = (
    "read settings from this file only (like MNEMOBOT_ENV_FILE); default: ./.env over "
    "~/.mnemobot/.env"
)
DOCTOR_DESCRIPTION = (
    "Check every setting against the real servers, one line per check: settings file, "
    "allowed users and operators, workspace, runtime config, Redis, the model server and "
    "model, speech to text (the server offers the model, or transcribes a test recording), "
    "the context window, embeddings, the Telegram token, scheduled tasks and each MCP "
    "server. Changes nothing on disk; exit 1 if a check fails."
)


def handler_of(args: argparse.Namespace) -> Callable[[argparse.Namespace], int]:
    """The function that runs the parsed command (its module imported now)."""
    module, _, name = str(args.handler).partition(":")
    function: Callable[[argparse.Namespace], int] = getattr(import_module(module), name)
    return function


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
    parser.add_argument("--env-file", dest="global_env_file", metavar="PATH", help=ENV_FILE_HELP)
    parser.add_argument("--version", action="version", version=f"mnemobot {installed_version()}")
    # Not required: a bare `mnemobot` prints this help instead of an error.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    init = sub.add_parser(
        "init",
        help="set up: bot token, model server and model, allowed users; checked "
        "(--console: the model alone)",
    )
    add_init_arguments(init)

    chat = sub.add_parser(
        "chat",
        help="talk to the bot in this terminal (or pipe lines in)",
        description="The bot in this terminal: the reply shows as it is written. The log "
        "goes to stderr, or to the workspace's logs/console.log when stderr is the terminal. "
        "Piped, each non-empty input line is answered on stdout, and each answer ends with a "
        "line holding only the ASCII record separator (\\x1e; invisible on a terminal): "
        "split the output on '\\x1e\\n' to tell answers apart.",
    )
    chat.add_argument("--chat-id", default="local", help="console chat id (default: local)")
    chat.add_argument("--user-id", default="local", help="user id shown to the bot")
    chat.set_defaults(handler=f"{CLI}.chat:chat_command")

    check = sub.add_parser(
        "doctor",
        help="check settings, workspace, model, Telegram token, Redis, MCP servers, "
        "embeddings and speech to text",
        description=DOCTOR_DESCRIPTION,
    )
    check.set_defaults(handler=f"{CLI}.doctor:doctor_command")

    _add_memory(sub)
    _add_config(sub)
    _add_run(sub)
    _add_web(sub)
    for name, description in tool_commands.TOOL_COMMANDS.items():
        # Their own arguments are the tool's to parse.
        tool = sub.add_parser(name, help=description, add_help=False)
        tool.set_defaults(handler=f"{CLI}.tool_commands:run_tool_command", tool_args=[])
    accept_env_file_everywhere(parser)
    return parser


def add_init_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--token", help="the bot token from @BotFather")
    parser.add_argument("--base-url", help="the model server's base URL (empty for OpenAI)")
    parser.add_argument("--model", help=f"the chat model (default {DEFAULT_MODEL})")
    parser.add_argument("--api-key", help="the model server's API key (empty for local ones)")
    parser.add_argument("--allowed-users", help="Telegram user ids, comma-separated, or *")
    parser.add_argument(
        "--env-file",
        help="where to write (default: MNEMOBOT_ENV_FILE, else ~/.mnemobot/.env)",
    )
    parser.add_argument(
        "--non-interactive", action="store_true", help="never ask; take flags and defaults"
    )
    parser.add_argument(
        "--no-check", action="store_true", help="skip the network checks (offline set-up)"
    )
    parser.add_argument(
        "--embeddings",
        action="store_true",
        help="turn on recall by meaning with the embedding model the model server lists",
    )
    parser.add_argument(
        "--console",
        action="store_true",
        help="the model alone, no bot token: for `mnemobot chat` (Telegram can come later)",
    )
    parser.set_defaults(handler=f"{CLI}.init:run_init")


def _add_run(sub: Any) -> None:
    run = sub.add_parser("run", help="serve the bot on Telegram (long polling, or --webhook)")
    run.add_argument(
        "--webhook",
        action="store_true",
        help="receive updates on BOT_WEBHOOK_URL (listening on BOT_WEBHOOK_LISTEN, checking "
        "BOT_WEBHOOK_SECRET) instead of polling",
    )
    run.add_argument(
        "--web",
        nargs="?",
        type=port_number,
        const=WEB_PORT,
        metavar="PORT",
        help=f"serve the memory page too, from the bot itself (port {WEB_PORT} unless given; "
        "see `mnemobot web`)",
    )
    run.add_argument(
        "--web-host",
        default=WEB_HOST,
        metavar="HOST",
        help=f"where --web listens (default {WEB_HOST}: this machine only)",
    )
    run.set_defaults(handler=f"{CLI}.run:run_command")


def port_number(text: str) -> int:
    """argparse type of a port: 1-65535 (0: any free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def _add_web(sub: Any) -> None:
    web = sub.add_parser(
        "web",
        help="a local web page to browse, question and correct each chat's memory",
        description=(
            "A local web page over the workspace's memory: chats, facts and their history, "
            "items, daily notes, MEMORY.md versions, scheduled tasks, what the bot would "
            "recall for a message; forget an item or restore MEMORY.md. Every request needs "
            "the access token printed at start (or MNEMOBOT_WEB_TOKEN / MNEMOBOT_WEB_TOKENS)."
        ),
    )
    web.add_argument(
        "--host", default=WEB_HOST, help=f"where to listen (default {WEB_HOST}: this machine)"
    )
    web.add_argument(
        "--port", type=port_number, default=WEB_PORT, help=f"default {WEB_PORT}; 0: any free one"
    )
    web.add_argument(
        "--read-only", action="store_true", help="browse only: no forgetting, no restoring"
    )
    web.set_defaults(handler=f"{CLI}.web:web_command")


def _add_config(sub: Any) -> None:
    config = sub.add_parser("config", help="the runtime config: `config docs` lists every key")
    actions = config.add_subparsers(dest="config_action", required=True, metavar="ACTION")
    docs = actions.add_parser(
        "docs", help="every runtime-config.json key with its default and meaning (Markdown)"
    )
    docs.set_defaults(handler=f"{CLI}.config_docs:docs_command")


def _add_memory(sub: Any) -> None:
    memory = sub.add_parser(
        "memory",
        help="a chat's memory: chats, pack, search, stats, maintain, history, restore, "
        "import, export, erase",
    )
    actions = memory.add_subparsers(dest="memory_action", required=True, metavar="ACTION")
    commands = f"{CLI}.memory_commands"

    def add(name: str, help_text: str, handler: str, query: bool) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, help=help_text)
        if query:
            parser.add_argument("query", help="the text to build or search for")
        parser.add_argument("--chat", required=True, help="scope key, e.g. console:local")
        parser.add_argument("--json", action="store_true", help="machine-readable output")
        parser.set_defaults(handler=handler)
        return parser

    pack = add(
        "pack",
        "the MemoryPack the bot would send with QUERY now (its learned context window and "
        "memory's share of it applied)",
        f"{commands}:pack_command",
        True,
    )
    pack.add_argument(
        "--unconstrained",
        action="store_true",
        help="every match within the configured memory budgets alone: no window, no share "
        "of it, and what the conversation carries already left in",
    )
    search = add(
        "search", "the best-scoring items, whatever the budget", f"{commands}:search_command", True
    )
    search.add_argument("--limit", type=int, default=10)
    add("stats", "counts per layer and type, skipped lines", f"{commands}:stats_command", False)
    chats = actions.add_parser(
        "chats", help="every chat with memory: item and note counts, last activity"
    )
    chats.add_argument("--json", action="store_true", help="machine-readable output")
    chats.set_defaults(handler=f"{commands}:chats_command")
    maintain = actions.add_parser(
        "maintain", help="consolidate MEMORY.md and apply retention now (one line per step)"
    )
    maintain.add_argument("--chat", help="scope key, e.g. console:local (default: every scope)")
    maintain.set_defaults(handler=f"{commands}:maintain_command")
    history = actions.add_parser("history", help="MEMORY.md versions kept in the archive")
    history.add_argument("--chat", required=True, help="scope key, e.g. console:local")
    history.set_defaults(handler=f"{commands}:history_command")
    restore = actions.add_parser("restore", help="put an earlier MEMORY.md version back")
    restore.add_argument("--chat", required=True, help="scope key, e.g. console:local")
    restore.add_argument("version", help="a version from `mnemobot memory history`")
    restore.set_defaults(handler=f"{commands}:restore_command")
    imported = actions.add_parser(
        "import", help="import a Telegram Desktop chat export (result.json) into a chat's memory"
    )
    imported.add_argument("file", help="the export's result.json (Export chat history, JSON)")
    imported.add_argument("--chat", required=True, help="scope key, e.g. telegram:12345")
    replies = imported.add_mutually_exclusive_group()
    replies.add_argument(
        "--assistant",
        default=None,
        metavar="NAME",
        help="the chat was with an assistant whose messages are from NAME: keep each of them "
        "as the reply of the message it answers, as the bot keeps its own turns (the default "
        "for an export of a chat with a bot, with the bot's messages)",
    )
    replies.add_argument(
        "--no-assistant",
        action="store_true",
        help="keep every message as a turn of its own, the bot's too in a chat with a bot",
    )
    imported.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress on stderr (a bar on a terminal, else a line every "
        f"{PROGRESS_LINE_SECONDS} s of a long import)",
    )
    imported.set_defaults(handler=f"{CLI}.memory_import:import_command")
    export = add(
        "export",
        "the chat's memory (MEMORY.md, notes, items) as one zip",
        f"{commands}:export_command",
        False,
    )
    export.add_argument("--out", help="where to write the zip (default: memory-<chat>.zip)")
    add(
        "erase",
        "delete every trace of the chat for good: memory, sessions and logs (forum topics "
        "too), files, exports, journal entries",
        f"{commands}:erase_command",
        False,
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
