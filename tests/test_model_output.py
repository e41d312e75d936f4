"""What a misbehaving model server sends is cleaned before it is kept, resent or shown."""

from __future__ import annotations

from mnemobot.bot.app import App
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call, tool_calls
from tests.conftest import CONSOLE_CHAT, ask


async def test_control_characters_never_reach_the_chat_or_the_session(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(reply("hello\x00 wor\x1bld\x07\r\nbye\x7f\tend"))
    answer = await ask(app, "say hi")
    assert answer == "hello world\nbye\tend"
    assert app.assistant.session(CONSOLE_CHAT).messages[-1]["content"] == answer


async def test_duplicate_tool_call_ids_are_made_unique_for_every_later_request(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    listing = {"operation": "list", "path": ""}
    openai_server.script(
        tool_calls([tool_call("files", listing, "call_1"), tool_call("files", listing, "call_1")]),
        reply("Listed twice."),
        tool_calls([tool_call("files", listing, "call_1")]),
        reply("Listed again."),
    )
    assert await ask(app, "list my files twice") == "Listed twice."
    assert await ask(app, "and once more") == "Listed again."

    last = openai_server.last_request()["messages"]
    ids = [call["id"] for m in last if m.get("tool_calls") for call in m["tool_calls"]]
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert len(ids) == 3 and len(set(ids)) == 3
    assert answered == ids
