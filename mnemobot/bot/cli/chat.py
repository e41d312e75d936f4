"""`mnemobot chat`: the bot in this terminal, or answering piped lines."""

from __future__ import annotations

import argparse
import asyncio
import sys

from mnemobot.bot.app import build_app
from mnemobot.bot.channels.console.channel import run_console
from mnemobot.bot.cli.init import offer_init
from mnemobot.bot.cli.logging_setup import configure_logging
from mnemobot.bot.cli.startup import fail, log_startup, secrets_of, settings_or_exit
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import InvalidSessionKey, check_session_key
from mnemobot.systems.core.context import ChatRef

# In the workspace: the console's log, when its stderr is the terminal it talks on.
CONSOLE_LOG = "logs/console.log"
NO_MODEL = (
    "mnemobot: no model server is set: `mnemobot chat` needs no bot token but does need a "
    "model: set OPENAI_BASE_URL to an OpenAI-compatible server (llama.cpp, Ollama, vLLM: "
    "e.g. http://127.0.0.1:8080/v1) or OPENAI_API_KEY for OpenAI's."
)


def chat_command(args: argparse.Namespace) -> int:
    settings = settings_or_exit(log_all=True)
    if settings.openai_base_url is None and settings.openai_api_key is None:
        # OpenAI's endpoint without a key cannot answer: say so instead of "unavailable".
        code = offer_init(NO_MODEL, telegram=False, then="Starting the chat:")
        if code != 0:
            return code
        settings = settings_or_exit(log_all=True)
    log_file = None
    if sys.stderr.isatty():
        # That terminal is the one the conversation is on: the log goes to a file.
        log_file = WorkspacePaths(settings.bot_workspace).root / CONSOLE_LOG
        configure_logging(settings.bot_log_level, secrets_of(settings), log_file=log_file)

    try:
        check_session_key(ChatRef("console", args.chat_id).key)
    except InvalidSessionKey as exc:
        return fail(str(exc).replace("chat key", "--chat-id", 1))
    log_startup(settings)

    async def session() -> int:
        app = build_app(settings)
        app.start_background()
        try:
            return await run_console(
                app, chat_id=args.chat_id, user_id=args.user_id, log_file=log_file
            )
        finally:
            await app.close()

    try:
        return asyncio.run(session())
    except KeyboardInterrupt:
        return 130
