"""Plugins installed as a distribution: their systems and tools run in a real turn."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemobot.bot.app import build_app
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    reply,
    system_text,
    tool_call,
    tool_messages,
    user_texts,
)
from tests.conftest import ask, make_settings, write_runtime_config

PLUGIN_CODE = '''
from pydantic import BaseModel

from mnemobot.plugin import Tool


class Banner:
    """New style: the class takes the Services."""

    name = "Banner"
    order = 25  # after ContextBuilding (20), before the ToolLoop (30)

    def __init__(self, services):
        self.services = services

    def enabled(self, ctx):
        return True

    async def process(self, ctx):
        ctx.system_prompt += (
            f"\\n\\nBanner plugin: model {self.services.chat_model()}, "
            f"workspace {self.services.paths.root.name}"
        )


class Legacy:
    name = "Legacy"
    order = 26

    def enabled(self, ctx):
        return True

    async def process(self, ctx):
        ctx.system_prompt += "\\n\\nLegacy plugin was here"


def legacy_system():
    """Old style: a zero-argument factory."""
    return Legacy()


def needs_two(services, other):
    return Legacy()


class ShoutArguments(BaseModel):
    text: str


def make_tools(services):
    def shout(arguments, ctx):
        name = services.config().assistant.name
        return f"{arguments.text.upper()}! (from {name} in {ctx.chat.key})"

    return [Tool("shout", "Repeat text loudly.", ShoutArguments, shout)]


async def async_tools(services):
    return []


CLASHING = Tool("datetime", "Another clock.", ShoutArguments, lambda arguments, ctx: "no")
'''

ENTRY_POINTS = """
[mnemobot.systems]
banner = echo_plugin:Banner
legacy = echo_plugin:legacy_system
bad_signature = echo_plugin:needs_two
missing = echo_plugin_missing:System

[mnemobot.tools]
shout = echo_plugin:make_tools
clash = echo_plugin:CLASHING
async_factory = echo_plugin:async_tools
"""


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A throwaway distribution on sys.path, the way pip would have laid it out."""
    site = tmp_path / "site"
    (site / "echo_plugin").mkdir(parents=True)
    (site / "echo_plugin" / "__init__.py").write_text(PLUGIN_CODE)
    dist_info = site / "echo_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("echo_plugin", None)


async def test_plugin_system_and_tool_run_in_a_turn_and_broken_plugins_are_skipped(
    installed_plugin: None,
    workspace: Path,
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}, "assistant": {"name": "Echo"}})
    with caplog.at_level(logging.INFO, logger="mnemobot.systems.core.plugins"):
        app = build_app(make_settings(workspace, openai_server))
    try:
        openai_server.script(tool_call("shout", {"text": "hello"}), reply("Done shouting."))
        answer = await ask(app, "Shout hello for me")
    finally:
        await app.close()

    assert answer == "Done shouting."
    first, second = [r for r in openai_server.requests if "Shout hello for me" in user_texts(r)]
    prompt = system_text(first)
    assert f"Banner plugin: model {app.settings.bot_model}, workspace workspace" in prompt
    assert "Legacy plugin was here" in prompt
    offered = [tool["function"]["name"] for tool in first["tools"]]
    assert "shout" in offered and offered.count("datetime") == 1
    assert [m["content"] for m in tool_messages(second)] == ["HELLO! (from Echo in console:local)"]
    skipped = {
        r.getMessage().split()[2]: r.getMessage()
        for r in caplog.records
        if r.getMessage().startswith("skipping plugin")
    }
    assert sorted(skipped) == ["async_factory", "bad_signature", "clash", "missing"]
    assert "No module named 'echo_plugin_missing'" in skipped["missing"]
    assert "already taken: datetime" in skipped["clash"]
    assert "must take one argument (the Services) or none" in skipped["bad_signature"]
    assert "the factory is async" in skipped["async_factory"]
    assert all("\n" not in line for line in skipped.values())


_SURFACE = """
import json, sys
import mnemobot.plugin as plugin

def documented(name):
    doc = (getattr(plugin, name).__doc__ or "").strip()
    # A dataclass without a docstring gets its signature as one.
    return bool(doc) and not doc.startswith(name + "(")

print(json.dumps({
    "bot": sorted(m for m in sys.modules if m.startswith("mnemobot.bot")),
    "names": plugin.__all__,
    "undocumented": [name for name in plugin.__all__ if not documented(name)],
}))
"""


def test_the_plugin_surface_loads_nothing_of_the_bot_and_documents_every_name() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SURFACE], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    surface = json.loads(result.stdout)
    assert surface["bot"] == []
    assert {"System", "TurnContext", "Services", "Tool", "ToolError", "ChatModel"} <= set(
        surface["names"]
    )
    assert surface["undocumented"] == []
