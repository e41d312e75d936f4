"""`mnemobot config docs`: every runtime-config key with its default, and the copy in
docs/configuration.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemobot.bot.app import RUNTIME_SECTIONS
from mnemobot.bot.cli.main import main
from mnemobot.config.runtime import with_sections
from mnemobot.config.runtime_reference import reference_markdown

CONFIGURATION_PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def leaf_keys(data: dict[str, object], prefix: str = "") -> list[str]:
    keys = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            keys += leaf_keys(value, f"{prefix}{key}.")
        else:
            keys.append(f"{prefix}{key}")
    return keys


def test_config_docs_lists_every_key_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "docs"]) == 0
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in capsys.readouterr().out.splitlines()[2:]
    }
    defaults = with_sections(RUNTIME_SECTIONS)().to_json_dict()
    # Keys of each entry of an object keyed by name (an MCP server) are listed once.
    named = {key for key in rows if ".<name>." in key}
    assert sorted(set(rows) - named) == sorted(leaf_keys(defaults))
    assert {"mcp.servers.<name>.command", "mcp.servers.<name>.confirmTools"} <= named
    assert "| `1800` |" in rows["memory.softPromptBudgetTokens"]
    assert "Chat model name; null means BOT_MODEL." in rows["llm.model"]
    assert '"chat" or "global"' in rows["memory.scope"]


def test_the_configuration_page_carries_the_generated_reference() -> None:
    page = CONFIGURATION_PAGE.read_text()
    section = page.split("## Runtime config reference\n", 1)[1].split("\n## ")[0]
    assert reference_markdown(with_sections(RUNTIME_SECTIONS)) in section, (
        "docs/configuration.md's runtime config reference is stale: paste "
        "`mnemobot config docs` into it"
    )
