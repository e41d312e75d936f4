"""A message said again and again (a spammer, a reminder bot, an export of either) costs
memory in proportion to the repeats, not their square; forgetting it still erases it
from every file.

A repeat merges into the item that holds its words, and the merged item is appended to
its file again: it names a bounded few of the messages (`memory.store.kept_refs`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import orjson

from mnemobot.bot.app import App
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.kept_refs import MAX_MESSAGE_REFS
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.digest_days import write_digest
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call, tool_messages
from tests.conftest import ask
from tests.test_memory_import import run

__all__ = ["run"]

SCOPE = "console:kc"
CHAT = "telegram:555"
CONFIG = MemoryConfig()
SECRET = "My address is 12 Baker Street, flat QX-7731."
START = datetime(2025, 3, 2, 18, 0, tzinfo=UTC).timestamp()


def items_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("items/**/*.jsonl"))


def files_with(root: Path, text: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and text in p.read_bytes()
    )


def say_again(memory: WorkspaceMemory, first: int, last: int) -> None:
    """The secret said in messages `first`..`last`, a second apart."""
    for n in range(first, last + 1):
        memory.record.record_turn(
            scope=SCOPE,
            user_text=SECRET,
            assistant_text="Noted.",
            at=START + n,
            config=CONFIG,
            tz=UTC,
            message_refs=[f"tg:{n}"],
        )


def test_a_repeated_message_grows_memory_linearly_and_is_forgotten_everywhere(
    tmp_path: Path,
) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    say_again(memory, 1, 100)
    after_n = items_bytes(tmp_path)
    say_again(memory, 101, 200)
    after_2n = items_bytes(tmp_path)
    # Every repeat appends lines of the same length: twice the repeats, twice the bytes
    # (the first few lines are shorter); a line naming every message made it about 3x.
    assert 1.9 < after_2n / after_n < 2.2, (after_n, after_2n)

    store = memory.scopes.store(SCOPE)
    [turn] = [i for i in store.items.values() if i.type is ItemType.TURN]
    # The first messages it was said in and the latest; the rest counted.
    assert turn.references == ["tg:1", "tg:2", "tg:3", "tg:4"] + [
        f"tg:{n}" for n in range(197, 201)
    ]
    assert turn.mentions == 200
    assert all(len(i.references) <= MAX_MESSAGE_REFS + 1 for i in store.items.values())
    # A reload reads the same.
    memory.scopes.reload(SCOPE)
    [reloaded] = [i for i in memory.scopes.store(SCOPE).items.values() if i.type is ItemType.TURN]
    assert reloaded.references == turn.references and reloaded.mentions == 200

    # Forgetting the fact learned from it takes the turn (they share the first messages)
    # and erases the words from every file, though no item names message 100.
    fact = next(
        i
        for i in memory.scopes.store(SCOPE).items.values()
        if i.layer is not Layer.EPISODIC and "QX-7731" in i.content
    )
    memory.forget.forget(SCOPE, fact.id)
    memory.forget.erase_forgotten(SCOPE)
    assert files_with(tmp_path, b"QX-7731") == []
    # The item files hold the tombstones only: no superseded copy of the repeats is left.
    assert items_bytes(tmp_path) < after_n / 10


def _export(path: Path, repeats: int) -> Path:
    messages = [
        {
            "id": n,
            "type": "message",
            "date": datetime.fromtimestamp(START + n, UTC).strftime("%Y-%m-%dT%H:%M:%S"),
            "date_unixtime": str(int(START + n)),
            "from": "Ada",
            "from_id": "user1",
            "text": "The quarterly budget review moved to the small room on the third floor.",
            "text_entities": [],
        }
        for n in range(1, repeats + 1)
    ]
    path.write_text(
        json.dumps({"name": "Ada", "type": "personal_chat", "id": 555, "messages": messages})
    )
    return path


def test_an_export_of_one_message_repeated_imports_in_linear_space(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    sizes = {}
    for repeats in (1000, 2000):
        workspace = tmp_path / f"ws{repeats}"
        export = _export(tmp_path / f"result{repeats}.json", repeats)
        imported = run(workspace, "memory", "import", str(export), "--chat", CHAT)
        assert imported.returncode == 0, imported.stderr
        assert f"imported {repeats:,} messages" in imported.stdout
        sizes[repeats] = items_bytes(workspace)
    # Quadratic, the 2,000 were 4x the 1,000 (a 650 KB export of 3,000 left 72 MB).
    assert sizes[2000] / sizes[1000] < 2.2, sizes

    pack = run(workspace, "memory", "pack", "budget review room", "--chat", CHAT, "--json")
    rendered = json.loads(pack.stdout)["rendered"]
    assert "The quarterly budget review moved" in rendered
    digest = next(
        i
        for i in WorkspaceMemory.open(workspace).scopes.store(CHAT).items.values()
        if i.type is ItemType.DIGEST
    )
    # The day's digest lists the message once, with how often it was said.
    assert digest.content.splitlines() == [
        "Digest of 2025-03-02 (2000 turns):",
        "- [tg-export:1, tg-export:2, tg-export:3, tg-export:4, tg-export:1997, "
        "tg-export:1998, tg-export:1999, tg-export:2000] (2000×) Ada: The quarterly budget "
        "review moved to the small room on the third floor.",
    ]


def test_compaction_shrinks_a_file_written_before_refs_were_bounded(tmp_path: Path) -> None:
    """An item line per repeat, each naming every message so far (as a scope written
    before the fix holds): compacting keeps one line naming a bounded few."""
    paths = ScopePaths(tmp_path, SCOPE)
    repeated = MemoryItem(
        id="t1",
        layer=Layer.EPISODIC,
        type=ItemType.TURN,
        title="User: spam",
        content="User: buy cheap followers now\nAssistant: Noted.",
        scope=SCOPE,
        created_at=START,
        updated_at=START,
    )
    day_file = paths.items_dir / "episodic" / "2025-03-02.jsonl"
    day_file.parent.mkdir(parents=True)
    with day_file.open("wb") as lines:
        for n in range(1, 301):
            line = replace(repeated, references=[f"tg:{m}" for m in range(1, n + 1)])
            lines.write(orjson.dumps(line.to_json_dict()) + b"\n")
    store = ScopeItemStore(paths)
    store.load()
    store.compact_files()

    [line] = day_file.read_bytes().splitlines()
    compacted = MemoryItem.from_json_dict(orjson.loads(line))
    assert compacted.references == [f"tg:{n}" for n in (1, 2, 3, 4, 297, 298, 299, 300)]
    assert compacted.mentions == 300
    assert store.items["t1"] == compacted


async def test_the_memory_tool_reads_how_often_a_repeated_message_was_said(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    say_again(app.memory, 1, 20)
    [turn] = [i for i in app.memory.scopes.store(SCOPE).items.values() if i.type is ItemType.TURN]
    openai_server.script(tool_call("memory", {"operation": "read", "id": turn.id}), reply("Ok."))
    await ask(app, "read it", chat=ChatRef("console", "kc", user_id="u1"))
    read = tool_messages(openai_server.last_request())[-1]["content"]
    assert read.endswith(
        "references: tg:1, tg:2, tg:3, tg:4, tg:17, tg:18, tg:19, tg:20"
        " (said 20 times; the first and latest named)"
    ), read


def test_a_days_digest_names_the_messages_of_all_its_lines(tmp_path: Path) -> None:
    """Refs are bounded per item said again, not per digest: a digest of twelve different
    messages names them all (a request carrying only some of them does not carry it)."""
    memory = WorkspaceMemory.open(tmp_path)
    for n in range(1, 13):
        memory.record.record_turn(
            scope=SCOPE,
            user_text=f"Step {n} of the plan is number {n * 7} on the list.",
            assistant_text="Noted.",
            at=START + n,
            config=CONFIG,
            tz=UTC,
            message_refs=[f"tg:{n}"],
        )
    store = memory.scopes.store(SCOPE)
    digest = write_digest(store, datetime.fromtimestamp(START, UTC).date(), UTC)
    assert digest is not None
    assert digest.references == [f"tg:{n}" for n in range(1, 13)]
    memory.scopes.reload(SCOPE)
    assert memory.scopes.store(SCOPE).items[digest.id].references == digest.references
