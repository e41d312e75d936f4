"""The memory a `mnemobot memory ... --chat CHAT` command works on: the scope the bot would
use for that chat (every chat's is `global` when `memory.scope` is global), and the config.

A chat key that names no scope with memory is an error naming the closest ones that exist:
a typo (`console` for `console:local`) must not look like an empty memory.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from mnemobot.bot.cli.startup import settings_or_exit
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.scope_paths import scope_under, validate_scope_key
from mnemobot.memory.store.workspace_scopes import scopes_with_memory

# How many existing scopes an unknown chat key's error names.
SUGGESTED_SCOPES = 5


def has_traces(paths: WorkspacePaths, scope: str) -> bool:
    """Whether the workspace holds anything of `scope`: its memory or a session of its chat
    (maintenance prunes those)."""
    if (paths.memory / scope).is_dir():
        return True
    if not paths.sessions.is_dir():
        return False
    return any(
        p.name in (f"{scope}.json", f"{scope}.log.jsonl")
        # A forum topic's session: `<channel>:<chatId>:<threadId>`.
        or (":" in scope and p.name.startswith(f"{scope}:"))
        for p in paths.sessions.iterdir()
    )


def closest_scopes(key: str, scopes: list[str]) -> list[str]:
    """The existing scopes most like `key`: close spellings first, then the same channel's
    (`telegram1` -> `telegram:...`), then any, at most SUGGESTED_SCOPES."""
    close = difflib.get_close_matches(key, scopes, n=SUGGESTED_SCOPES, cutoff=0.4)
    channel = key.split(":", 1)[0].rstrip("0123456789").lower()
    same_channel = [s for s in scopes if channel and s.lower().startswith(channel)]
    ordered = list(dict.fromkeys([*close, *same_channel, *scopes]))
    return ordered[:SUGGESTED_SCOPES]


def unknown_scope_line(key: str, workspace: Path) -> str:
    """The error for a chat key that names no scope with memory."""
    scopes = scopes_with_memory(workspace)
    if not scopes:
        return (
            f"no chat has memory in workspace {workspace} yet, so {key!r} has none; "
            "talk to the bot first, or check BOT_WORKSPACE"
        )
    named = ", ".join(closest_scopes(key, scopes))
    more = f" ({len(scopes)} in all: `mnemobot memory chats`)" if len(scopes) > 1 else ""
    return f"no memory for chat {key!r}; closest: {named}{more}"


def open_chat_memory(
    args: argparse.Namespace, *, must_exist: bool = True
) -> tuple[WorkspaceMemory, RuntimeConfig] | str:
    """The memory and config; `args.chat` becomes the scope the bot would use.
    With `must_exist` (every command but import and erase) a scope without memory is an
    error line naming the closest existing ones."""
    settings = settings_or_exit()
    try:
        validate_scope_key(args.chat)
    except ValueError as exc:
        return f"{exc}; use the chat's scope key, e.g. console:local or telegram:12345"
    if args.chat.lstrip("-").isdigit():
        # Found live: "--chat 5003" imported into a scope the bot never reads.
        return (
            f"--chat {args.chat!r} names no channel; give the chat as the bot names it, "
            f"e.g. telegram:{args.chat} or console:local"
        )
    paths = WorkspacePaths(settings.bot_workspace)
    runtime = open_runtime_config(paths.runtime_config)
    config = runtime.current()
    if runtime.error:
        print(f"mnemobot: warning: {runtime.error}; using defaults", file=sys.stderr)
    scope = scope_under(args.chat, config.memory.scope)
    if scope != args.chat:
        print(
            f"mnemobot: memory.scope is global: {args.chat} uses scope {scope!r}", file=sys.stderr
        )
        args.chat = scope
    if must_exist and not has_traces(paths, args.chat):
        return unknown_scope_line(args.chat, paths.root)
    memory = WorkspaceMemory.open(paths.root, embedder=OpenAIEmbeddings(settings, runtime))
    return memory, config
