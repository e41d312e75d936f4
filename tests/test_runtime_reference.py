"""`mnemobot config docs`: every runtime-config key with its default, grouped, the most
changed first; the copy in docs/configuration.md; and how many keys there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemobot.bot.cli.main import main
from mnemobot.bot.runtime_sections import RUNTIME_SECTIONS
from mnemobot.config.runtime import with_sections
from mnemobot.config.runtime_reference import count_keys, reference_markdown

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
    out = capsys.readouterr().out
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in out.splitlines()
        if line.startswith("| `")
    }
    defaults = with_sections(RUNTIME_SECTIONS)().to_json_dict()
    # Keys of each entry of an object keyed by name (an MCP server) are listed once.
    named = {key for key in rows if ".<name>." in key}
    assert sorted(set(rows) - named) == sorted(leaf_keys(defaults))
    assert {"mcp.servers.<name>.command", "mcp.servers.<name>.confirmTools"} <= named
    assert "| `1800` |" in rows["memory.softPromptBudgetTokens"]
    assert "Chat model name; null means BOT_MODEL." in rows["llm.model"]
    assert '"chat" or "global"' in rows["memory.scope"]
    # What a person changes most comes first: the model, the assistant, memory.
    headings = [line for line in out.splitlines() if line.startswith("### ")]
    assert headings[:3] == ["### The model", "### The assistant", "### Memory"]
    assert out.index("`llm.model`") < out.index("`memory.scope`") < out.index("`files.shared`")


# A key of the file is a promise kept across versions, and every one is one more thing a
# newcomer reads: what someone running the bot changes is a setting, the rest a constant
# beside its code. The target is about 60 (15 of them an MCP server's); one more
# for permissions.stopOthers: who may stop another member's reply is a group's choice.
MOST_OPERATOR_KEYS = 66


def test_the_runtime_config_holds_few_keys() -> None:
    count = count_keys(with_sections(RUNTIME_SECTIONS))
    assert count <= MOST_OPERATOR_KEYS, (
        f"{count} runtime-config keys: keep a tuning constant beside its code, not in the file"
    )


def test_the_configuration_page_carries_the_generated_reference() -> None:
    page = CONFIGURATION_PAGE.read_text()
    section = page.split("## Runtime config reference\n", 1)[1].split("\n## ")[0]
    assert reference_markdown(with_sections(RUNTIME_SECTIONS)) in section, (
        "docs/configuration.md's runtime config reference is stale: paste "
        "`mnemobot config docs` into it"
    )
