"""`mnemobot memory chats`: which chats have memory; `pack|search|stats`: look at a chat's
memory the way the bot does; `maintain|history|restore`: consolidate it now, list and
restore MEMORY.md versions; `export|erase`: take a chat's memory out, or delete it for good.

Longer than a module of ours should be: the `mnemobot memory` subcommands share how they
find a chat's scope, open the workspace and print; each is short.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from filelock import Timeout

from mnemobot.base.clock import SYSTEM_CLOCK, to_iso
from mnemobot.base.counts import counted
from mnemobot.base.file_lock import private_file_lock
from mnemobot.bot.cli.erasure_reach import reach_beyond_files, replicas_of
from mnemobot.bot.cli.memory_scope import open_chat_memory, unknown_scope_line
from mnemobot.bot.cli.startup import fail, settings_or_exit
from mnemobot.bot.cli.workspace_guard import MEMORY_COMMAND_RUNNING, MemoryCommandLock
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.bot.schedule.service import cli_erase_step
from mnemobot.bot.turn.erasure import ScopeErasure, journal_file_step
from mnemobot.bot.upkeep.maintenance_timer import MaintenanceTimer
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.conversation.session import AgentSession, SessionStore
from mnemobot.memory.notes.memory_rewrite import entries
from mnemobot.memory.notes.memory_versions import find_version, list_versions, restore_version
from mnemobot.memory.pack.build import MemoryPack
from mnemobot.memory.services.workspace_memory import MemoryUpkeep, WorkspaceMemory
from mnemobot.memory.store.item_vectors import QueryVector
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.store.workspace_scopes import chat_summary, scopes_with_memory
from mnemobot.memory.upkeep.maintenance import MaintenanceReport
from mnemobot.model.windows import ModelWindow, ModelWindowStore
from mnemobot.systems.compaction.auto_compaction import memory_room
from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot.systems.memory_steps.context_building import (
    ContextBuilding,
    pack_for_turn,
    wants_memory,
)


def _print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def pack_command(args: argparse.Namespace) -> int:
    """The MemoryPack the bot would send with `args.query` now: built by ContextBuilding
    itself, within the learned context window and memory's share of it, leaving out what
    the chat's session already carries; `--unconstrained`: the configured budgets alone."""
    chat_key = args.chat
    opened = open_chat_memory(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, config = opened
    settings = settings_or_exit()
    paths = WorkspacePaths(settings.bot_workspace)
    model = config.llm.chat_model_name(settings.bot_model)
    now = config.assistant.local_time(SYSTEM_CLOCK())

    async def query_vector_and_window() -> tuple[QueryVector | None, ModelWindow | None]:
        # The window as the bot's client finds it (the same endpoint key); nothing is asked.
        llm = OpenAIChatModel(
            api_key=None,
            base_url=settings.openai_base_url,
            windows=ModelWindowStore.in_workspace(paths.root),
        )
        try:
            return await memory.vectors.query_vector(args.query, config.memory), llm.known_window(
                model
            )
        finally:
            await llm.close()
            if isinstance(memory.vectors.embedder, OpenAIEmbeddings):
                await memory.vectors.embedder.aclose()

    vector, window = asyncio.run(query_vector_and_window())
    if args.unconstrained:
        pack = pack_for_turn(
            memory.recall, args.chat, args.query, now, config.memory, query_vector=vector
        )
        share = "unconstrained: memory's share of the window not applied"
    else:
        if window is not None:
            config = config.for_context_window(window.tokens)
        pack_or_none = _pack_as_sent(memory, chat_key, args.chat, args.query, config, now, vector)
        if pack_or_none is None:
            print("(memory is off: memory.enabled is false, the bot sends none)")
            return 0
        pack = pack_or_none
        shown = (
            window.describe()
            if window is not None
            else (f"{config.llm.max_input_tokens:,} tokens (not learned yet; llm.maxInputTokens)")
        )
        share = f"window {shown}; memory may take {config.memory_allowance_tokens():,} tokens"
    if args.json:
        _print_json(pack.to_json_dict())
        return 0
    carried = pack.diagnostics.skipped_in_request
    why = (
        f"the {carried} matching item{'' if carried == 1 else 's'} the conversation carries already"
        if carried
        else f"no memory of {args.chat} matches"
    )
    if pack.is_empty and not args.unconstrained and not wants_memory(args.query):
        print("(small talk: the bot sends no memory with it)")
    elif pack.diagnostics.legacy_fallback_used:
        print(f"(empty pack: {why}; the bot sends the daily notes instead)")
    elif pack.is_empty:
        print(f"(empty pack: {why})")
    else:
        print(pack.rendered)
    d = pack.diagnostics
    candidates = ", ".join(
        f"{count:,} {layer.lower()}" for layer, count in d.candidates_per_layer.items()
    )
    print(
        f"\n-- {counted(len(pack.items), 'item')}, {d.total_tokens:,} tokens (soft "
        f"{d.soft_budget_tokens:,}, max {d.max_budget_tokens:,}); {share}; candidates: "
        f"{candidates or 'none'}; dropped by budget: {d.dropped_by_budget:,}; built in "
        f"{d.build_ms:.1f} ms; meaning: {d.meaning}",
        file=sys.stderr,
    )
    return 0


def _pack_as_sent(
    memory: WorkspaceMemory,
    chat_key: str,
    scope: str,
    query: str,
    config: RuntimeConfig,
    now: datetime,
    vector: QueryVector | None,
) -> MemoryPack | None:
    """The pack ContextBuilding builds for `query` in the chat `chat_key` (its session read,
    never written); None when memory is off."""
    channel, _, chat_id = chat_key.partition(":")
    chat = ChatRef(channel, chat_id)
    ctx = TurnContext(
        chat=chat,
        session=_session_as_saved(memory.workspace, chat_key, now),
        user_text=query,
        config=config,
        now=now,
        model="",
        scope=scope,
    )
    # As in a turn: the message joins the conversation (read, never written), and memory
    # takes what the conversation leaves it (AutoCompaction).
    ctx.session.messages.append({"role": "user", "content": query, "at": to_iso(now.timestamp())})
    ctx.memory_room_tokens = memory_room(ctx, None)
    ContextBuilding(memory.recall).build(ctx, query_vector=vector)
    return ctx.memory_pack


def _session_as_saved(workspace: Path, key: str, now: datetime) -> AgentSession:
    """The chat's session as on disk (an unreadable one is left alone: none)."""
    try:
        path = SessionStore(WorkspacePaths(workspace).sessions).path_for(key)
        return AgentSession.from_json_dict(orjson.loads(path.read_bytes()))
    except (OSError, ValueError, KeyError, TypeError):
        return AgentSession.new(key, now.timestamp())


def search_command(args: argparse.Namespace) -> int:
    opened = open_chat_memory(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    hits = memory.recall.marked_search(args.chat, args.query, limit=args.limit)
    found, updated = hits.found, hits.updated
    if args.json:
        _print_json(
            [
                {
                    "id": i.id,
                    "layer": i.layer,
                    "type": i.type,
                    "score": round(s, 6),
                    "earlier": i.is_superseded or i.id in updated,
                    "content": i.content,
                    "references": i.references,
                }
                for i, s in found
            ]
        )
        return 0
    if not found:
        print("(nothing found)")
    for item, score in found:
        replaced = ""
        if item.is_superseded:
            until = f" until {to_iso(item.valid_to)[:10]}" if item.valid_to is not None else ""
            replaced = f"(earlier{until}) "
        elif item.id in updated:
            replaced = f"(earlier: updated {to_iso(updated[item.id])[:10]}) "
        print(
            f"{score:.3f} {item.id} [{item.layer.value.lower()}/{item.type.value.lower()}] "
            f"{replaced}{item.content.replace(chr(10), ' ')}"
        )
    return 0


def stats_command(args: argparse.Namespace) -> int:
    opened = open_chat_memory(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    stats = memory.recall.stats(args.chat)
    data = {
        "chat": args.chat,
        "items": stats.items,
        "perLayer": stats.per_layer,
        "perType": stats.per_type,
        "skippedLines": stats.skipped_lines,
        "files": stats.files,
        "tombstones": stats.tombstones,
    }
    if args.json:
        _print_json(data)
        return 0
    print(f"chat {args.chat}: {counted(stats.items, 'item')} in {counted(stats.files, 'file')}")
    print("per layer: " + ", ".join(f"{k.lower()} {v}" for k, v in stats.per_layer.items()))
    print("per type: " + (", ".join(f"{k.lower()} {v}" for k, v in stats.per_type.items()) or "-"))
    print(f"forgotten (tombstones): {stats.tombstones}")
    print(f"skipped lines (torn or corrupt): {stats.skipped_lines}")
    return 0


def chats_command(args: argparse.Namespace) -> int:
    """`memory chats`: every chat with memory, its counts and when it was last active."""
    settings = settings_or_exit()
    paths = WorkspacePaths(settings.bot_workspace)
    scopes = scopes_with_memory(paths.root)
    rows = []
    for scope in scopes:
        # One scope loaded at a time: a workspace of many big chats fits in memory.
        memory = WorkspaceMemory.open(paths.root)
        try:
            stats = memory.recall.stats(scope)
        finally:
            memory.close()
        rows.append(chat_summary(paths, scope, stats).to_json())
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print(f"(no chat has memory in workspace {paths.root} yet)")
        return 0
    width = max(len(str(row["chat"])) for row in rows)
    print(f"{'chat':<{width}}  {'items':>7}  {'notes':>5}  MEMORY.md  last activity")
    for row in rows:
        print(
            f"{row['chat']:<{width}}  {row['items']:>7}  {row['dailyNotes']:>5}  "
            f"{'yes' if row['memoryMd'] else 'no':<9}  {row['lastActivity'] or '-'}"
        )
    return 0


def maintain_command(args: argparse.Namespace) -> int:
    settings = settings_or_exit()
    paths = WorkspacePaths(settings.bot_workspace)
    if args.chat is not None:
        opened = open_chat_memory(args)
        if isinstance(opened, str):
            return fail(opened)
        opened[0].close()
    runtime = open_runtime_config(paths.runtime_config)
    config = runtime.current()
    # The step lines are printed below; logged as well they would show twice.
    logging.getLogger("mnemobot.memory.upkeep.maintenance").setLevel(logging.WARNING)

    async def run() -> list[MaintenanceReport]:
        llm = OpenAIChatModel(
            api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
            base_url=settings.openai_base_url,
            max_retries=config.llm.max_retries,
            timeout_seconds=config.llm.request_timeout_seconds,
            # The windows the bot learned: a small local model's consolidation fits it.
            windows=ModelWindowStore.in_workspace(paths.root),
        )
        embedder = OpenAIEmbeddings(settings, runtime)
        memory = WorkspaceMemory.open(paths.root, embedder=embedder)
        replicas = replicas_of(settings)
        reach_beyond_files(memory, paths, replicas=replicas, bot_running=served_by_a_bot(paths))
        timer = MaintenanceTimer(
            paths=paths,
            runtime=runtime,
            memory=MemoryUpkeep(memory),
            llm=llm,
            chat_model_name=settings.bot_model,
        )
        try:
            if args.chat is not None:
                return [await timer.maintain(args.chat)]
            return await timer.maintain_all()
        finally:
            await llm.close()
            memory.close()
            await embedder.aclose()
            if replicas is not None:
                await replicas.close()

    reports = asyncio.run(run())
    if not reports:
        print("(no memory scopes in this workspace yet)")
    for report in reports:
        for line in report.lines():
            print(line)
    return 1 if any(report.failed for report in reports) else 0


def history_command(args: argparse.Namespace) -> int:
    opened = open_chat_memory(args)
    if isinstance(opened, str):
        return fail(opened)
    opened[0].close()
    paths = ScopePaths(opened[0].workspace, args.chat)
    versions = list_versions(paths)
    current = paths.memory_file
    if current.is_file():
        text = current.read_text(encoding="utf-8", errors="replace")
        print(
            f"current  {counted(len(entries(text)), 'entry', 'entries')}, "
            f"{current.stat().st_size} bytes"
        )
    else:
        print(f"current  (no MEMORY.md for {args.chat})")
    for version in versions:
        text = version.path.read_text(encoding="utf-8", errors="replace")
        saved = version.saved_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        print(
            f"{version.version}  saved {saved}, {counted(len(entries(text)), 'entry', 'entries')}, "
            f"{version.size} bytes"
        )
    if not versions:
        print("(no earlier versions)")
    return 0


def restore_command(args: argparse.Namespace) -> int:
    opened = open_chat_memory(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    memory.close()
    paths = ScopePaths(memory.workspace, args.chat)
    version = find_version(paths, args.version)
    if version is None:
        return fail(
            f"no version {args.version!r} of {args.chat}; "
            f"`mnemobot memory history --chat {args.chat}` lists them"
        )
    restore_version(paths, version, SYSTEM_CLOCK())
    print(f"restored MEMORY.md of {args.chat} from {version.version} (the current one archived)")
    return 0


def export_command(args: argparse.Namespace) -> int:
    """`memory export --chat CHAT [--out FILE]`: the chat's memory as one zip."""
    opened = open_chat_memory(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    data = memory.forget.export_scope(args.chat)
    out = Path(args.out) if args.out else Path(f"memory-{args.chat.replace(':', '-')}.zip")
    try:
        out.write_bytes(data)
    except OSError as exc:
        return fail(f"cannot write {out}: {exc.strerror}; pass --out with a writable path")
    print(f"wrote {out} ({len(data):,} bytes): MEMORY.md, daily notes, items (JSONL)")
    return 0


def served_by_a_bot(paths: WorkspacePaths) -> bool:
    """Whether a `mnemobot run` (or a replica) holds this workspace now."""
    locks = [paths.run_lock, *sorted(paths.delivery.glob(".replica-*.lock"))]
    for path in locks:
        if not path.exists():
            continue
        lock = private_file_lock(path)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return True
        lock.release()
    return False


def erase_command(args: argparse.Namespace) -> int:
    """`memory erase --chat CHAT`: delete every trace of the chat (see `bot.turn.erasure`)."""
    opened = open_chat_memory(args, must_exist=False)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    try:
        paths = WorkspacePaths(memory.workspace)
        held = MemoryCommandLock(paths)
        if not held.acquire():
            return fail(MEMORY_COMMAND_RUNNING)
        try:
            return _erase_held(args, memory, paths)
        finally:
            held.release()
    finally:
        # Every way out, a refusal too: the memory holds open files (and, in a process
        # that goes on, e.g. a test or an embedding caller, they would stay open).
        memory.close()


def _erase_held(args: argparse.Namespace, memory: WorkspaceMemory, paths: WorkspacePaths) -> int:
    """The erasure, with the workspace held against a `run` starting meanwhile."""
    if served_by_a_bot(paths):
        # Its caches would write back part of what is erased here.
        return fail(
            "a running `mnemobot run` serves this workspace: send /forget_me in the chat, "
            "or stop the bot and run this again"
        )
    runtime = open_runtime_config(paths.runtime_config)
    erasure = ScopeErasure(paths, memory.forget, SessionStore(paths.sessions), runtime.current)
    for journal in sorted(paths.delivery.glob("*.jsonl")):
        erasure.add_step(journal_file_step(journal, paths.root))
    settings = settings_or_exit()
    redis_url = settings.bot_redis_url.get_secret_value() if settings.bot_redis_url else None
    erasure.add_step(cli_erase_step(paths.root, redis_url))
    removed = asyncio.run(erasure.erase(erasure.target(args.chat)))
    if not removed:
        # Most often a mistyped key: name the chats that do have something.
        return fail(f"nothing to erase: {unknown_scope_line(args.chat, paths.root)}")
    print(f"erased {args.chat}:")
    for entry in removed:
        print(f"  {entry}")
    return 0
