"""The pieces of MCP support that need no server: the config section, secrets, names, tool
sets in the registry, results as text, and confirmations."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

from mnemobot.bot.channels.telegram.confirm_buttons import HOW_TO_ANSWER as BUTTONS_HOW_TO_ANSWER
from mnemobot.bot.cli.logging_setup import configure_logging
from mnemobot.bot.i18n import TRANSLATED, words_for
from mnemobot.bot.mcp.config import McpServerConfig
from mnemobot.bot.mcp.secrets import MissingVariables, fill_server, hide_in_logs, literal_secrets
from mnemobot.bot.mcp.tool_adapter import (
    is_offered,
    needs_confirmation,
    prefixed_name,
    result_text,
)
from mnemobot.bot.runtime_sections import RUNTIME_SECTIONS
from mnemobot.bot.tools.clock_tool import datetime_tool
from mnemobot.bot.tools.confirmations import (
    HOW_TO_ANSWER,
    Answer,
    Confirmations,
    Press,
    answer_word,
)
from mnemobot.bot.tools.registry import ToolRegistry
from mnemobot.config.runtime import with_sections
from mnemobot.config.runtime_store import RuntimeConfigError, parse_runtime_config
from mnemobot.systems.core.context import ChatRef
from mnemobot.systems.core.tool_runner import AnyArguments, Tool, ToolError
from tests.conftest import turn_context

MODEL = with_sections(RUNTIME_SECTIONS)


def config_error(servers: dict[str, object]) -> str:
    with pytest.raises(RuntimeConfigError) as caught:
        parse_runtime_config(json.dumps({"mcp": {"servers": servers}}).encode(), MODEL)
    return str(caught.value)


def test_a_bad_server_entry_gets_one_line_saying_what_to_fix() -> None:
    assert config_error({"x": {"command": "a", "url": "http://h/mcp"}}) == (
        'mcp.servers.x: give either "command" (a stdio server) or "url" (streamable HTTP)'
    )
    assert config_error({"x": {}}).endswith(
        'give either "command" (a stdio server) or "url" (streamable HTTP)'
    )
    assert "the old SSE transport is not supported" in config_error(
        {"x": {"type": "sse", "url": "http://h/sse"}}
    )
    assert config_error({"x": {"url": "ftp://h"}}) == (
        "mcp.servers.x.url: must start with http:// or https://"
    )
    assert config_error({"x": {"url": "http://h/mcp", "env": {"A": "b"}}}).endswith(
        '"args", "env" and "cwd" are for a command; a URL takes "headers"'
    )
    assert "server name 'my server'" in config_error({"my server": {"command": "a"}})
    assert "is not a variable reference" in config_error(
        {"x": {"command": "a", "env": {"TOKEN": "${TOKEN"}}}
    )
    # The shape other MCP clients write is taken as it is.
    parsed = parse_runtime_config(
        json.dumps(
            {
                "mcp": {
                    "servers": {
                        "files": {"type": "stdio", "command": "npx", "args": ["-y", "srv"]},
                        "web": {"type": "http", "url": "https://example.com/mcp"},
                    }
                }
            }
        ).encode(),
        MODEL,
    )
    assert parsed.unknown_keys == ()


def test_secrets_come_from_the_environment_and_are_all_kept_for_redaction() -> None:
    server = McpServerConfig(
        url="https://example.com/mcp",
        headers={"Authorization": "Bearer ${CAL_TOKEN}", "X-Team": "blue-team-7"},
    )
    filled = fill_server(server, {"CAL_TOKEN": "tok-1234567890"})
    assert filled.headers == {"Authorization": "Bearer tok-1234567890", "X-Team": "blue-team-7"}
    assert {"Bearer tok-1234567890", "tok-1234567890", "blue-team-7"} <= set(filled.secrets)
    with pytest.raises(MissingVariables) as missing:
        fill_server(server, {})
    assert str(missing.value) == (
        "environment variable CAL_TOKEN not set; set it in the bot's environment or env file"
    )
    literal = McpServerConfig(
        command="srv", env={"API_KEY": "abc", "MODE": "fast", "TOKEN": "${T}"}
    )
    assert literal_secrets(literal) == ["API_KEY"]


def test_a_key_in_the_url_is_filled_in_encoded_redacted_and_warned_about_when_written() -> None:
    server = McpServerConfig(url="https://search.example.com/mcp?api_key=${SEARCH_KEY}&n=5")
    assert server.referenced_variables() == ["SEARCH_KEY"]
    filled = fill_server(server, {"SEARCH_KEY": "k3y+with/slash"})
    assert filled.url == "https://search.example.com/mcp?api_key=k3y%2Bwith%2Fslash&n=5"
    assert {"k3y+with/slash", "k3y%2Bwith%2Fslash"} <= set(filled.secrets)
    with pytest.raises(MissingVariables):
        fill_server(server, {})
    assert "is not a variable reference" in config_error({"x": {"url": "https://h/mcp?key=${KEY"}})
    assert literal_secrets(server) == []
    written = McpServerConfig(url="https://bob:hunter2hunter@h/mcp?apiKey=abc123&page=2")
    assert literal_secrets(written) == ["apiKey in the url", "the password in the url"]
    assert {"abc123", "hunter2hunter"} <= set(fill_server(written, {}).secrets)


def test_tool_names_are_prefixed_usable_and_filtered_by_the_server_entry() -> None:
    assert prefixed_name("cal", "list_events") == "mcp_cal_list_events"
    assert prefixed_name("cal", "events.list v2") == "mcp_cal_events_list_v2"
    long_a, long_b = prefixed_name("cal", "x" * 80 + "a"), prefixed_name("cal", "x" * 80 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b
    server = McpServerConfig(
        command="srv",
        allow_tools=["get_*", "delete_user"],
        deny_tools=["delete_*"],
        confirm_tools=["get_secret*"],
    )
    assert [n for n in ("get_a", "delete_user", "put_b") if is_offered(server, n)] == ["get_a"]
    assert needs_confirmation(server, "get_secrets") and not needs_confirmation(server, "get_a")
    assert needs_confirmation(McpServerConfig(command="s", confirm_tools=["*"]), "anything")


def mcp_tool(name: str, tool_set: str, answer: str = "ran") -> Tool:
    return Tool(
        name=name,
        description=f"the {name} tool",
        arguments=AnyArguments,
        handler=lambda arguments, ctx: f"{answer} {arguments.model_dump()}",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        tool_set=tool_set,
    )


async def test_a_tool_set_is_offered_and_run_only_in_turns_that_allow_it() -> None:
    registry = ToolRegistry([datetime_tool()])
    refused = registry.replace_set(
        "mcp:a", [mcp_tool("mcp_a_x", "mcp:a"), mcp_tool("datetime", "mcp:a")]
    )
    assert refused == ["datetime"]  # a built-in name stays the built-in's
    plain, allowed = turn_context(), turn_context()
    allowed.allowed_tool_sets = frozenset({"mcp:a"})
    assert [s["function"]["name"] for s in registry.schemas(plain)] == ["datetime"]
    names = [s["function"]["name"] for s in registry.schemas(allowed)]
    assert names == ["datetime", "mcp_a_x"]
    assert registry.schema_tokens(allowed) > registry.schema_tokens(plain)
    assert registry.schemas(allowed)[1]["function"]["parameters"]["properties"] == {
        "q": {"type": "string"}
    }
    assert await registry.run("mcp_a_x", '{"q": "hi"}', allowed) == "ran {'q': 'hi'}"
    with pytest.raises(ToolError, match="unknown tool 'mcp_a_x'; available tools: datetime"):
        await registry.run("mcp_a_x", "{}", plain)

    # A set is replaced as a whole (a server restarted with other tools), or withdrawn.
    registry.replace_set("mcp:a", [mcp_tool("mcp_a_y", "mcp:a")])
    assert [s["function"]["name"] for s in registry.schemas(allowed)] == ["datetime", "mcp_a_y"]
    registry.replace_set("mcp:a", [])
    assert registry.names == ["datetime"]
    assert registry.schemas(allowed) == registry.schemas(plain)


def test_results_of_every_shape_become_text() -> None:
    png = base64.b64encode(b"\x89PNG" + b"0" * 96).decode()
    result = CallToolResult(
        content=[
            TextContent(type="text", text="first"),
            ImageContent(type="image", data=png, mime_type="image/png"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///notes.txt", text="note body"),
            ),
        ]
    )
    assert result_text(result) == (
        "first\n[image (image/png, 100 bytes) - not shown: text only]\nnote body"
    )
    structured = CallToolResult(content=[], structured_content={"total": 3})
    assert result_text(structured) == '{"total":3}'


def test_yes_and_no_are_read_from_short_replies() -> None:
    assert [
        answer_word(t) for t in ("Yes!", " ok ", "go ahead.", "No", "cancel", "yes please")
    ] == [
        True,
        True,
        True,
        False,
        False,
        None,
    ]


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_words_each_language_is_told_to_answer_with_are_answers(language: str) -> None:
    words = words_for(language)
    # The yes and the no each line quotes, and the buttons' own words typed.
    lines = [words.gettext(BUTTONS_HOW_TO_ANSWER), words.gettext(HOW_TO_ANSWER)]
    for line in lines:
        quoted = re.findall(r"[«„“\"]([^»“”\"]+)[»“”\"]", line)
        assert [answer_word(word) for word in quoted] == [True, False], (language, line)
    assert answer_word(words.gettext("Run it")) is True
    assert answer_word(words.gettext("Cancel")) is False
    # English always works, whatever the reader's language; so does "¡Sí!" or "好。".
    assert [answer_word(t) for t in ("Yes", "no", "¡Sí!", "好。", "Нет.", "да?")] == [
        True,
        False,
        True,
        True,
        False,
        None,
    ]


async def test_only_the_asker_settles_a_confirmation_and_silence_is_a_no() -> None:
    confirmations = Confirmations()
    asked: list[str] = []

    async def notify(text: str) -> None:
        asked.append(text)

    ctx = turn_context()
    ctx.chat = ChatRef("telegram", "-5", user_id="1", is_group=True)
    ctx.notify = notify
    waiting = asyncio.create_task(confirmations.ask(ctx, "Run it?", 5))
    while not asked:
        await asyncio.sleep(0.01)
    assert asked == ['Run it?\nReply "yes" to go ahead or "no" to cancel.']
    other = ChatRef("telegram", "-5", user_id="2", is_group=True)
    assert confirmations.answer_text(other, "yes") is False
    assert confirmations.press("no-such-question", "1", True) is Press.CLOSED
    [question_id] = list(confirmations._pending)
    assert confirmations.press(question_id, "2", True) is Press.NOT_YOURS
    assert not waiting.done()
    assert confirmations.answer_text(ctx.chat, "yes") is True
    assert await waiting is Answer.YES
    assert confirmations.press(question_id, "1", True) is Press.CLOSED

    assert await confirmations.ask(ctx, "Again?", 0.05) is Answer.TIMEOUT
    ctx.notify = None
    assert await confirmations.ask(ctx, "Nobody to ask?", 5) is Answer.UNAVAILABLE


def test_secrets_handed_to_a_server_are_redacted_by_the_bots_log_handler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO", ["the-bot-token-123"])
    hide_in_logs(["server-secret-456", "short"])
    logging.getLogger("a.library").warning("header was Bearer server-secret-456, short")
    logged = capsys.readouterr().err
    assert "server-secret-456" not in logged and "Bearer [REDACTED], short" in logged
