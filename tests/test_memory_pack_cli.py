"""`mnemobot memory pack` shows the pack the bot would send now: a small model's learned
window and memory's share of it applied, as the real request carried it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mnemobot.bot.app import build_app
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import ask, make_settings, run_mnemobot, write_runtime_config

SCOPE = "console:local"
QUERY = "what do you know about my green tea habits?"
CITIES = ["Lisbon", "Kyoto", "Oslo", "Quito", "Lagos", "Hanoi", "Perth", "Tunis", "Lima", "Riga"]


def fact_lines(pack: str) -> list[str]:
    return [line for line in pack.splitlines() if line.startswith("- ")]


def sent_pack(request: dict[str, object]) -> str:
    """The `# Memory` part of a request as the model got it (wherever the prompt put it):
    the heading, then `## ` sections of list lines."""
    text = "\n".join(
        str(message.get("content"))
        for message in request["messages"]  # type: ignore[attr-defined]
    )
    found = re.search(r"# Memory\n(?:\n## [^\n]*\n(?:(?:- |  )[^\n]*(?:\n|$))+)+", text)
    assert found, text
    return found.group(0).strip()


async def test_the_cli_pack_is_the_one_a_small_window_request_carried(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    memory = WorkspaceMemory.open(workspace)
    facts = [
        f"I drink green tea every morning when I am in {city} with friend {n}"
        for n, city in enumerate(CITIES * 4)
    ]
    memory.record.add_flushed_facts(SCOPE, facts, at=1_700_000_000.0, session_key=SCOPE)
    memory.close()
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    # A llama.cpp server run with a 2,048-token window: the bot learns it from /props.
    openai_server.context_window = 2048
    openai_server.window_reported_by = "llamacpp"
    app = build_app(make_settings(workspace, openai_server))
    try:
        await ask(app, QUERY)
    finally:
        await app.close()
    request_pack = sent_pack(openai_server.last_request())

    env = {"BOT_WORKSPACE": str(workspace), "OPENAI_BASE_URL": openai_server.base_url}
    shown = run_mnemobot("memory", "pack", QUERY, "--chat", SCOPE, **env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == request_pack
    assert "window 2,048 tokens (reported by the server" in shown.stderr
    assert "memory may take" in shown.stderr
    # The footer is words, not a Python dict of the pack's diagnostics.
    assert "{" not in shown.stderr and "'" not in shown.stderr
    assert re.search(
        r"candidates: \d+ episodic, \d+ semantic, \d+ procedural; dropped by budget: \d+;",
        shown.stderr,
    ), shown.stderr

    as_json = run_mnemobot("memory", "pack", QUERY, "--chat", SCOPE, "--json", **env)
    sent_items = json.loads(as_json.stdout)["items"]
    unconstrained = run_mnemobot(
        "memory", "pack", QUERY, "--chat", SCOPE, "--json", "--unconstrained", **env
    )
    all_items = json.loads(unconstrained.stdout)["items"]
    # The configured budgets alone would take many more facts than the window leaves room for.
    assert len(all_items) > len(sent_items) >= 1


async def test_the_cli_pack_takes_only_the_room_a_long_conversation_leaves(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # Memory yields to the conversation (it takes what the conversation leaves under the
    # compaction threshold): the CLI showed memory's whole share all the same.
    memory = WorkspaceMemory.open(workspace)
    facts = [
        f"I drink green tea every morning when I am in {city} with friend {n}"
        for n, city in enumerate(CITIES * 4)
    ]
    memory.record.add_flushed_facts(SCOPE, facts, at=1_700_000_000.0, session_key=SCOPE)
    memory.close()
    write_runtime_config(
        workspace, {"llm": {"maxRetries": 0}, "compaction": {"maxContextTokens": 2000}}
    )
    env = {"BOT_WORKSPACE": str(workspace), "OPENAI_BASE_URL": openai_server.base_url}
    paragraph = "we walked along the river and talked about the old mill and the bridge; " * 10
    app = build_app(make_settings(workspace, openai_server))
    try:
        await ask(app, f"first: {paragraph}")
        await ask(app, f"second: {paragraph}")
        # What the bot would send now for the question, then what it sends.
        shown = run_mnemobot("memory", "pack", QUERY, "--chat", SCOPE, **env)
        await ask(app, QUERY)
    finally:
        await app.close()
    assert shown.returncode == 0, shown.stderr
    # As many facts as the request carried (which of the equally good ones may differ).
    sent = sent_pack(openai_server.last_request())
    assert len(fact_lines(shown.stdout)) == len(fact_lines(sent)) >= 1
    # Without the conversation, memory takes more of its share.
    other = run_mnemobot("memory", "pack", QUERY, "--chat", SCOPE, "--unconstrained", **env)
    assert len(other.stdout) > len(shown.stdout)
