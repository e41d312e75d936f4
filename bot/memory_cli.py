"""`mnemobot memory pack|search|stats|export|erase`: a chat's memory, as the bot sees it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bot.channels.registry import open_runtime_config
from bot.startup import fail, settings_or_exit
from bot.tools.clock_tool import now_in_zone
from config.runtime import RuntimeConfig
from config.workspace import WorkspacePaths
from memory.scope_paths import validate_scope_key
from memory.service import MemoryService
from systems.context_building import pack_for_turn


def _open(args: argparse.Namespace) -> tuple[MemoryService, RuntimeConfig] | str:
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
    return MemoryService(paths.root), config


def _print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def _pack(args: argparse.Namespace) -> int:
    opened = _open(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, config = opened
    now = now_in_zone(config.assistant.timezone)
    pack = pack_for_turn(memory, args.chat, args.query, now, config.memory)
    if args.json:
        _print_json(pack.to_json_dict())
        return 0
    if pack.is_empty:
        print(f"(empty pack: no memory of {args.chat} matches)")
    else:
        print(pack.rendered)
    d = pack.diagnostics
    print(
        f"\n-- {len(pack.items)} items, {d.total_tokens} tokens (soft {d.soft_budget_tokens}, "
        f"max {d.max_budget_tokens}); candidates {d.candidates_per_layer}; dropped by budget "
        f"{d.dropped_by_budget}; built in {d.build_ms:.1f} ms",
        file=sys.stderr,
    )
    return 0


def _search(args: argparse.Namespace) -> int:
    opened = _open(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, config = opened
    found = memory.search(
        args.chat, args.query, config=config.memory, tz=config.assistant.tzinfo(), limit=args.limit
    )
    if args.json:
        _print_json(
            [
                {
                    "id": i.id,
                    "layer": i.layer,
                    "type": i.type,
                    "score": round(s, 6),
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
        print(
            f"{score:.3f} {item.id} [{item.layer.value.lower()}/{item.type.value.lower()}] "
            f"{item.content.replace(chr(10), ' ')}"
        )
    return 0


def _stats(args: argparse.Namespace) -> int:
    opened = _open(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    stats = memory.stats(args.chat)
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
    print(f"chat {args.chat}: {stats.items} items in {stats.files} files")
    print("per layer: " + ", ".join(f"{k.lower()} {v}" for k, v in stats.per_layer.items()))
    print("per type: " + (", ".join(f"{k.lower()} {v}" for k, v in stats.per_type.items()) or "-"))
    print(f"forgotten (tombstones): {stats.tombstones}")
    print(f"skipped lines (torn or corrupt): {stats.skipped_lines}")
    return 0


def _export(args: argparse.Namespace) -> int:
    """`memory export --chat CHAT [--out FILE]`: the chat's memory as one zip."""
    opened = _open(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    data = memory.export_scope(args.chat)
    out = Path(args.out) if args.out else Path(f"memory-{args.chat.replace(':', '-')}.zip")
    try:
        out.write_bytes(data)
    except OSError as exc:
        return fail(f"cannot write {out}: {exc.strerror}; pass --out with a writable path")
    print(f"wrote {out} ({len(data):,} bytes): MEMORY.md, daily notes, items (JSONL)")
    return 0


def _erase(args: argparse.Namespace) -> int:
    """`memory erase --chat CHAT`: delete the chat's memory, session and logs."""
    opened = _open(args)
    if isinstance(opened, str):
        return fail(opened)
    memory, _config = opened
    removed = memory.erase_scope(args.chat)
    if not removed:
        print(f"nothing to erase for {args.chat}")
        return 0
    print(f"erased {args.chat}:")
    for entry in removed:
        print(f"  {entry}")
    return 0


def _register_export_erase(actions: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    export = add("export", "the chat's memory (MEMORY.md, notes, items) as one zip", _export, False)
    export.add_argument("--out", help="where to write the zip (default: memory-<chat>.zip)")
    add("erase", "delete the chat's memory, session and logs for good", _erase, False)


def register(sub: Any) -> None:
    memory = sub.add_parser("memory", help="inspect a chat's memory: pack, search, stats")
    actions = memory.add_subparsers(dest="memory_action", required=True, metavar="ACTION")

    def add(
        name: str, help_text: str, handler: Callable[[argparse.Namespace], int], query: bool
    ) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_text)
        if query:
            parser.add_argument("query", help="the text to build or search for")
        parser.add_argument("--chat", required=True, help="scope key, e.g. console:local")
        parser.add_argument("--json", action="store_true", help="machine-readable output")
        parser.set_defaults(handler=handler)
        return parser

    add("pack", "the MemoryPack ContextBuilding would build now", _pack, True)
    search = add("search", "the best-scoring items, whatever the budget", _search, True)
    search.add_argument("--limit", type=int, default=10)
    add("stats", "counts per layer and type, skipped lines", _stats, False)
    _register_export_erase(actions, add)
