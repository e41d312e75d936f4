"""Memory through the whole bot: recall across /new, isolation, the memory tool, bad files."""

from __future__ import annotations

import json
import time
from datetime import UTC
from pathlib import Path

from mnemobot.bot.app import App
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    context_text,
    reply,
    tool_call,
    tool_messages,
    user_texts,
)
from tests.conftest import ask, run_mnemobot
from tests.test_console_e2e import run_chat

CHAT_A = ChatRef("telegram", "1001", user_id="1001", user_name="Ada")
CHAT_B = ChatRef("telegram", "2002", user_id="2002", user_name="Bob")


def memory_section(request: dict[str, object]) -> str:
    text = context_text(request)
    return text[text.find("# Memory") :] if "# Memory" in text else ""


def test_a_fact_survives_new_and_reaches_the_next_request(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """The 'done when' of the memory issue, through `mnemobot chat`."""
    script = "My favourite colour is teal\n/new\nwhat is my favourite colour?\n"
    result = run_chat(script, workspace, openai_server)
    assert result.returncode == 0, result.stderr
    last = openai_server.last_request()
    assert user_texts(last) == ["what is my favourite colour?"]
    assert "teal" in memory_section(last)
    # The same question in another chat id finds nothing of chat "local".
    run_chat("what is my favourite colour?\n", workspace, openai_server, "--chat-id", "other")
    assert "teal" not in context_text(openai_server.last_request())


async def test_one_chat_never_sees_another_chats_memory(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await ask(app, chat=CHAT_A, text="My sister lives in Lisbon and I'm allergic to peanuts.")
    await ask(app, chat=CHAT_A, text="I prefer answers in bullet points.")
    # B's turn: the model searches memory with a tool; B asks about the same things.
    openai_server.script(
        tool_call("memory", {"operation": "search", "query": "sister Lisbon peanuts allergic"}),
        tool_call("session_search", {"query": "Lisbon peanuts"}),
        reply("I don't know."),
    )
    await ask(app, chat=CHAT_B, text="Where does my sister live? Am I allergic to peanuts?")
    b_requests = openai_server.requests[-3:]
    for request in b_requests:
        assert "Lisbon" not in context_text(request) and "peanut" not in context_text(request)
    results = [m["content"] for m in tool_messages(b_requests[-1])]
    assert len(results) == 2 and all("Lisbon" not in r and "peanut" not in r for r in results)
    # A's own pack has it; B's pack built by the CLI path does not.
    pack_a = app.memory.recall.build_pack(
        "telegram:1001", "sister", now=9e9, config=app.assistant.config().memory, tz=None
    )
    pack_b = app.memory.recall.build_pack(
        "telegram:2002", "sister", now=9e9, config=app.assistant.config().memory, tz=None
    )
    assert "Lisbon" in pack_a.rendered and "Lisbon" not in pack_b.rendered
    assert not (workspace / "memory" / "telegram:2002" / "items" / "semantic.jsonl").exists() or (
        "Lisbon"
        not in (workspace / "memory" / "telegram:2002" / "items" / "semantic.jsonl").read_text()
    )


async def test_memory_tool_add_search_forget(app: App, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(
        tool_call(
            "memory", {"operation": "add", "content": "Ada's cat is called Miso", "kind": "fact"}
        ),
        reply("Saved."),
    )
    await ask(app, chat=CHAT_A, text="remember that my cat is called Miso")
    saved = tool_messages(openai_server.last_request())[-1]["content"]
    assert saved.startswith("saved ") and "[semantic/project_fact]" in saved
    item_id = saved.split()[1]
    openai_server.script(
        tool_call("memory", {"operation": "search", "query": "cat name"}), reply("Miso.")
    )
    await ask(app, chat=CHAT_A, text="what's my cat called?")
    assert "Miso" in tool_messages(openai_server.last_request())[-1]["content"]
    # The conversation still holds the tool's "saved ..." line: the pack does not repeat it.
    assert "Miso" not in memory_section(openai_server.last_request())
    app.assistant.reset_session(CHAT_A)
    openai_server.script(reply("Miso."))
    await ask(app, chat=CHAT_A, text="what's my cat called?")
    assert "Miso" in memory_section(openai_server.last_request())
    openai_server.script(
        tool_call("memory", {"operation": "forget", "id": item_id}), reply("Forgotten.")
    )
    await ask(app, chat=CHAT_A, text="forget my cat's name")
    # Forgotten means gone from the tool's reach and from every pack; B cannot touch A's ids.
    openai_server.script(
        tool_call("memory", {"operation": "read", "id": item_id}), reply("Nothing.")
    )
    await ask(app, chat=CHAT_B, text="read item please")
    assert "no memory item" in tool_messages(openai_server.last_request())[-1]["content"]
    pack = app.memory.recall.build_pack(
        "telegram:1001", "cat called", now=9e9, config=app.assistant.config().memory, tz=None
    )
    assert item_id not in {p.item.id for p in pack.items}


async def test_status_shows_memory_counts_and_last_pack(app: App) -> None:
    await ask(app, chat=CHAT_A, text="I work at the harbour office as an engineer.")
    await ask(app, chat=CHAT_A, text="Where do I work?")
    status = await app.commands.run(CHAT_A, ParsedCommand("status", ""))
    memory_line = next(line for line in status.splitlines() if line.startswith("Memory"))
    assert "episodic" in memory_line and "semantic" in memory_line
    assert "last pack" in memory_line and "tokens" in memory_line


async def test_a_failed_memory_write_never_breaks_the_reply(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # A file where the scope's directory should be: every memory write fails.
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "telegram:1001").write_text("not a directory")
    openai_server.script(reply("Still here."))
    answer = await ask(app, chat=CHAT_A, text="I prefer tea over coffee.")
    assert answer.startswith("Still here.\n\n") and "could not save this to memory" in answer


async def test_bad_memory_files_do_not_stop_the_bot(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    scope_dir = workspace / "memory" / "telegram:1001"
    (scope_dir / "items" / "episodic").mkdir(parents=True)
    good = {
        "id": "a1",
        "layer": "SEMANTIC",
        "type": "PREFERENCE",
        "title": "tea",
        "content": "Ada prefers green tea",
        "scope": "telegram:1001",
        "createdAt": "2026-01-01T10:00:00Z",
        "updatedAt": "2026-01-01T10:00:00Z",
    }
    lines = [json.dumps(good), "{corrupt", json.dumps({**good, "id": "a2", "content": "Ada hikes"})]
    (scope_dir / "items" / "semantic.jsonl").write_text("\n".join(lines) + '\n{"id": "torn", "lay')
    (workspace / "memory" / "MEMORY.md").write_bytes(
        b"operator \xff\xfe notes " + b"x" * 10_000_000
    )
    (scope_dir / "MEMORY.md").write_bytes(b"Ada \xc3\x28 likes sailing.\n")
    openai_server.script(reply("Fine."))
    assert await ask(app, chat=CHAT_A, text="what tea do I like?") == "Fine."
    system = context_text(openai_server.last_request())
    assert "Ada prefers green tea" in system
    assert "\ufffd" in system and "likes sailing" in system
    assert len(system) < 60_000, "the huge MEMORY.md was not cut to its budget"
    stats = run_mnemobot(
        "memory", "stats", "--chat", "telegram:1001", "--json", BOT_WORKSPACE=str(workspace)
    )
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["skippedLines"] == 2


def test_memory_cli_pack_json_is_the_pack_the_bot_builds(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    run_chat("My favourite colour is teal\n", workspace, openai_server)
    now = run_mnemobot(
        "memory",
        "pack",
        "favourite colour",
        "--chat",
        "console:local",
        BOT_WORKSPACE=str(workspace),
    )
    # The request would carry that turn in the conversation: the pack leaves it out.
    assert now.stdout.startswith("(empty pack: the 3 matching items the conversation carries")
    result = run_mnemobot(
        "memory",
        "pack",
        "favourite colour",
        "--chat",
        "console:local",
        "--json",
        "--unconstrained",
        BOT_WORKSPACE=str(workspace),
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["rendered"].startswith("# Memory")
    assert "teal" in data["rendered"]
    item = data["items"][0]
    assert {"id", "layer", "type", "score", "tokens", "references"} <= set(item)
    assert data["diagnostics"]["candidatesPerLayer"]["EPISODIC"] >= 1
    bad = run_mnemobot("memory", "pack", "x", "--chat", "../etc", BOT_WORKSPACE=str(workspace))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


async def test_a_forgotten_fact_never_comes_back_in_any_form(
    app: App, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await ask(app, chat=CHAT_A, text="My favourite colour is teal.")
    openai_server.script(
        tool_call("memory", {"operation": "search", "query": "favourite colour"}), reply("ok")
    )
    await ask(app, chat=CHAT_A, text="what do you know about my colours?")
    found = tool_messages(openai_server.last_request())[-1]["content"]
    durable = next(line for line in found.splitlines() if "[semantic/preference]" in line)
    openai_server.script(
        tool_call("memory", {"operation": "forget", "id": durable.split()[0]}), reply("Done.")
    )
    await ask(app, chat=CHAT_A, text="please forget my favourite colour")
    openai_server.script(reply("I don't know."))
    await ask(app, chat=CHAT_A, text="what is my favourite colour?")
    assert "teal" not in context_text(openai_server.last_request())
    notes = "".join(p.read_text() for p in (workspace / "memory" / "telegram:1001").glob("*.md"))
    assert "teal" not in notes and "[forgotten]" in notes
    # The same words from before the forgetting (a replayed conversation) stay out; said
    # anew afterwards, on purpose, they are a new statement and are kept.
    config = app.assistant.config().memory
    for at in (time.time() - 3600, time.time() + 5):
        app.memory.record.record_turn(
            scope="telegram:1001",
            user_text="My favourite colour is teal.",
            assistant_text="Noted.",
            at=at,
            config=config,
            tz=UTC,
            speaker="Ada",
        )
        pack = app.memory.recall.build_pack(
            "telegram:1001", "favourite colour", now=at + 60, config=config, tz=UTC
        )
        kept = [p.item for p in pack.items if p.item.type.value == "PREFERENCE"]
        assert bool(kept) is (at > time.time()), pack.rendered
    # One maintenance run later, the forgotten text is gone from every file but the
    # statement made after the forgetting.
    app.memory.forget.erase_forgotten("telegram:1001")


def test_scopes_beyond_the_cache_reload_from_their_files(workspace: Path) -> None:
    from mnemobot.config.runtime import MemoryConfig
    from mnemobot.memory.services.workspace_memory import WorkspaceMemory

    memory = WorkspaceMemory.open(workspace, max_cached_scopes=2)
    config = MemoryConfig()
    for chat in range(4):
        memory.record.record_turn(
            scope=f"telegram:{chat}",
            user_text=f"I prefer tea number {chat}.",
            assistant_text="ok",
            at=1_700_000_000.0 + chat,
            config=config,
            tz=None,
        )
    pack = memory.recall.build_pack(
        "telegram:0", "tea", now=1_800_000_000.0, config=config, tz=None
    )
    assert "tea number 0" in pack.rendered and "tea number 1" not in pack.rendered
