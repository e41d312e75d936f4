"""`mnemobot doctor` starts each configured MCP server, lists its tools, and says which
failed and why, without a secret in any line."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import run_mnemobot, write_runtime_config
from tests.mcp_harness import http_server, stdio_server

SECRET = "doctor-secret-5b7e0c2a91"


@pytest.mark.slow
def test_doctor_lists_each_servers_tools_and_why_one_failed(
    workspace: Path, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    servers = {
        "shop": stdio_server(
            log,
            allowTools=["add", "send_mail", "delete_everything"],
            denyTools=["delete_*"],
            confirmTools=["send_mail"],
            env={"MCP_TEST_SECRET": "${SHOP_KEY}", "API_KEY": "written-in-the-file"},
        ),
        "vault": stdio_server(log, "--exit-at-start", env={"MCP_TEST_SECRET": "${SHOP_KEY}"}),
        "missing": stdio_server(log, env={"TOKEN": "${NOT_SET_ANYWHERE}"}),
        "off": {**stdio_server(log), "enabled": False},
    }
    write_runtime_config(workspace, {"mcp": {"servers": servers}})
    before = json.loads((workspace / "preferences" / "runtime-config.json").read_text())

    result = run_mnemobot(
        "doctor",
        BOT_WORKSPACE=str(workspace),
        OPENAI_BASE_URL=openai_server.base_url,
        TELEGRAM_ALLOWED_USERS="42",
        SHOP_KEY=SECRET,
    )

    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    lines = [line for line in result.stdout.splitlines() if " mcp " in f" {line[5:]}"]
    assert lines[0].startswith("...  mcp shop: starting `")
    assert "and listing its tools (up to 30 s)" in lines[0]
    assert (
        "offers 2 tool(s) as mcp_shop_<tool> (e.g. mcp_shop_add): add, send_mail (asks to "
        "confirm); not offered (allowTools, denyTools): lookup_order, big, "
    ) in lines[1]
    assert lines[1].endswith(", delete_everything")
    assert lines[1].startswith("ok   mcp shop: `")
    assert lines[2] == (
        "WARN mcp shop: API_KEY written into the config file; put the secret in the "
        'environment or env file and write "${NAME}" instead'
    )
    assert lines[4] == (
        "FAIL mcp vault: it exited; its last words: fatal: cannot log in with [REDACTED]"
    )
    assert lines[6] == (
        "FAIL mcp missing: environment variable NOT_SET_ANYWHERE not set; set it in the "
        "bot's environment or env file"
    )
    assert lines[7] == "ok   mcp off: disabled (enabled: false)"
    assert SECRET not in output and "Traceback" not in output
    assert calls_logged_nothing(log)
    assert json.loads((workspace / "preferences" / "runtime-config.json").read_text()) == before


def calls_logged_nothing(log: Path) -> bool:
    return not log.exists() or log.read_text() == ""


URL_KEY = "doctor-url-key+8e1f/44"


@pytest.mark.slow
def test_doctor_lists_a_remote_servers_tools_and_warns_of_a_key_written_in_its_url(
    workspace: Path, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    with http_server(log, MCP_TEST_URL_KEY=URL_KEY) as server:
        servers = {
            "search": {"url": f"{server.url}?api_key=${{SEARCH_KEY}}", "allowTools": ["add"]},
            "pasted": {"url": f"{server.url}?api_key={quote(URL_KEY, safe='')}"},
        }
        write_runtime_config(workspace, {"mcp": {"servers": servers}})
        result = run_mnemobot(
            "doctor",
            BOT_WORKSPACE=str(workspace),
            OPENAI_BASE_URL=openai_server.base_url,
            TELEGRAM_ALLOWED_USERS="42",
            SEARCH_KEY=URL_KEY,
        )

    output = result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if " mcp " in f" {line[5:]}"]
    where = f"http://127.0.0.1:{server.port}"
    assert lines[0] == (
        f"...  mcp search: connecting to {where} and listing its tools (up to 30 s)"
    )
    assert lines[1].startswith(
        f"ok   mcp search: {where} offers 1 tool(s) as mcp_search_<tool> (e.g. "
        "mcp_search_add): add; not offered (allowTools, denyTools): lookup_order, "
    )
    assert lines[3].startswith(f"ok   mcp pasted: {where} offers 12 tool(s)")
    assert lines[4] == (
        "WARN mcp pasted: api_key in the url written into the config file; put the secret "
        'in the environment or env file and write "${NAME}" instead'
    )
    assert len(lines) == 5, output
    assert URL_KEY not in output and quote(URL_KEY, safe="") not in output
