"""A secret handed to an MCP server stays out of everything the bot shows, sends or keeps,
even when the server repeats it in its own errors: /status, the log, the model's requests
and the session file."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.mcp.config import McpTiming
from mnemobot.bot.mcp.supervisor import ServerState
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    tool_call,
)
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config
from tests.mcp_harness import answer_with_tool_result, stdio_server, wait_ready, wait_until

SECRET = "vault-token-7d41c0e9b2"


def everything_kept(workspace: Path) -> str:
    files = [path for path in workspace.rglob("*") if path.is_file()]
    return "\n".join(path.read_bytes().decode(errors="replace") for path in files)


def down(app: App, names: tuple[str, ...]) -> tuple[int, ...] | None:
    """While these servers wait for their next start (the vault refused): their failures."""
    supervisors = [app.mcp.supervisors[name] for name in names]
    if all(s.state is ServerState.RESTARTING and s.reason for s in supervisors) and (
        "cannot log in" in str(app.mcp.supervisors["vault"].reason)
    ):
        return tuple(s.failures_in_a_row for s in supervisors)
    return None


async def while_down(app: App, names: tuple[str, ...], look: Callable[[], Awaitable[str]]) -> str:
    """What `look` sees while these servers are down; a look that overlapped a start (on a
    busy machine) is taken again in a later pause."""
    for _ in range(5):
        await wait_until(lambda: down(app, names) is not None, 20, f"{names} down")
        before = down(app, names)
        seen = await look()
        if down(app, names) == before:
            return seen
    raise AssertionError(f"never looked while {names} were down")


async def test_a_secret_a_server_repeats_in_its_errors_is_never_shown_sent_or_kept(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VAULT_TOKEN", SECRET)
    refuse = tmp_path / "refuse-init"
    env = {"MCP_TEST_SECRET": "${VAULT_TOKEN}"}
    servers = {
        # Comes up, then after a crash its `initialize` fails naming the token.
        "vault": stdio_server(tmp_path / "calls.log", "--refuse-init-when", str(refuse), env=env),
        # Never comes up; says the token on stderr as it exits.
        "broken": stdio_server(tmp_path / "calls.log", "--exit-at-start", env=env),
    }
    # Pauses of 0.5 s, 1 s, 2 s...: the test looks while both are down, between starts.
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}, "mcp": {"servers": servers}})
    openai_server.responder = answer_with_tool_result
    with caplog.at_level(logging.DEBUG):
        app = build_app(
            make_settings(workspace, openai_server),
            tuning=Tuning(mcp=McpTiming(restart_first_seconds=0.5)),
        )
        app.start_background()
        try:
            await wait_ready(app, "vault")
            refuse.touch()
            openai_server.script(tool_call("mcp_vault_die", {}))
            await ask(app, "crash it")
            status = await while_down(
                app,
                ("vault", "broken"),
                lambda: app.commands.run(CONSOLE_CHAT, ParsedCommand("status", "")),
            )

            async def add() -> str:
                openai_server.script(tool_call("mcp_vault_add", {"a": 1, "b": 2}))
                return await ask(app, "add 1 and 2")

            answer = await while_down(app, ("vault",), add)
        finally:
            await app.close()

    assert "vault down (it answered: cannot log in with [REDACTED]), next start in" in status
    assert "broken down (it exited; its last words: fatal: cannot log in with [REDACTED])" in (
        status
    )
    refused = (
        "error: the MCP server vault is not available: it is down (it answered: cannot log "
        "in with [REDACTED]); next start in"
    )
    assert answer.startswith(f"Result: {refused}")
    sent = json.dumps(openai_server.requests)
    assert refused in sent
    kept = everything_kept(workspace)
    assert refused in kept
    assert "MCP server vault is down (it answered: cannot log in with [REDACTED])" in caplog.text
    for seen in (status, answer, sent, kept, caplog.text):
        assert SECRET not in seen
