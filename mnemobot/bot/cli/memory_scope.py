"""The memory a `mnemobot memory ... --chat CHAT` command works on: the scope the bot would
use for that chat (every chat's is `global` when `memory.scope` is global), and the config."""

from __future__ import annotations

import argparse
import sys

from mnemobot.bot.app import open_runtime_config
from mnemobot.bot.cli.startup import settings_or_exit
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.scope_paths import validate_scope_key
from mnemobot.memory.service import MemoryService


def open_chat_memory(args: argparse.Namespace) -> tuple[MemoryService, RuntimeConfig] | str:
    """The memory service and config; `args.chat` becomes the scope the bot would use."""
    settings = settings_or_exit()
    try:
        validate_scope_key(args.chat)
    except ValueError as exc:
        return f"{exc}; use the chat's scope key, e.g. console:local or telegram:12345"
    paths = WorkspacePaths(settings.bot_workspace)
    runtime = open_runtime_config(paths.runtime_config)
    config = runtime.current()
    if runtime.error:
        print(f"mnemobot: warning: {runtime.error}; using defaults", file=sys.stderr)
    if config.memory.scope == "global" and args.chat != "global":
        # With memory.scope "global" every chat reads and writes the one global scope.
        print(f"mnemobot: memory.scope is global: {args.chat} uses scope 'global'", file=sys.stderr)
        args.chat = "global"
    return MemoryService(paths.root, embedder=OpenAIEmbeddings(settings, runtime)), config
