"""One door into memory: the memory tool, the compaction flush and a turn write by the
same rules (weights from the config, repeats merged, a newer value replaces the old),
off the event loop, dated by the bot's clock."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mnemobot.base.clock import from_iso
from mnemobot.bot.app import App, build_app
from mnemobot.bot.tuning import Tuning
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import Layer, MemoryItem
from mnemobot.memory.write.fact_items import TOOL_CONFIDENCE, TOOL_SALIENCE
from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot.systems.core.tool_runner import Tool
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    reply,
    system_text,
    tool_call,
    tool_calls,
    tool_messages,
    user_texts,
)
from tests.conftest import AppFactory, ask, make_settings, write_runtime_config
from tests.test_memory_off_loop import ScopeHolder

ADA = ChatRef("telegram", "1001", user_id="1001", user_name="Ada")
BOB = ChatRef("telegram", "2002", user_id="2002", user_name="Bob")
ADA_SCOPE = "telegram:1001"
# A past week, one minute between reads of the clock: nothing here is dated by the wall.
START = 1_600_000_000.0


@pytest.fixture
async def app(make_app: AppFactory) -> App:
    minutes = itertools.count(START, 60.0)
    return make_app(clock=lambda: next(minutes))


def durable(memory: WorkspaceMemory, scope: str, word: str) -> list[MemoryItem]:
    return [
        item
        for item in memory.scopes.store(scope).items.values()
        if item.layer is not Layer.EPISODIC and word in item.content
    ]


async def test_a_move_saved_with_the_memory_tool_replaces_the_old_home(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    await ask(app, chat=ADA, text="I live in Paris.")
    [paris] = durable(app.memory, ADA_SCOPE, "Paris")
    # The user's words state nothing: only the tool's fact can replace Paris.
    openai_server.script(
        tool_call("memory", {"operation": "add", "content": "I moved to Berlin", "kind": "fact"}),
        reply("Noted."),
    )
    await ask(app, chat=ADA, text="please keep my new home in mind")
    saved = tool_messages(openai_server.last_request())[-1]["content"]
    assert saved.startswith("saved ") and "it replaces (now marked earlier)" in saved
    assert paris.id in saved
    [berlin] = durable(app.memory, ADA_SCOPE, "Berlin")
    paris_now = app.memory.scopes.store(ADA_SCOPE).items[paris.id]
    assert paris_now.superseded_by == berlin.id and paris_now.valid_to is not None
    # Weighed as the tool's facts are, said by the chat's user, dated by the bot's clock.
    assert (berlin.confidence, berlin.salience) == (TOOL_CONFIDENCE, TOOL_SALIENCE)
    assert "speaker:ada" in berlin.tags and "from:tool" in berlin.tags
    assert START < berlin.created_at < START + 3600
    pack = app.memory.recall.build_pack(
        ADA_SCOPE, "where do I live?", now=START + 3600, config=MemoryConfig(), tz=UTC
    )
    lines = [
        line
        for line in pack.rendered.splitlines()
        if line.startswith("- ") and ("Paris" in line or "Berlin" in line)
    ]
    assert any("Berlin" in line and "earlier" not in line for line in lines), lines
    assert all("earlier" in line for line in lines if "Paris" in line), lines


async def test_a_fact_saved_again_in_other_words_is_one_fact(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    for wording in ("I really love hiking in the mountains", "I really love hiking in mountains!"):
        openai_server.script(
            tool_call("memory", {"operation": "add", "content": wording, "kind": "preference"}),
            reply("Noted."),
        )
        await ask(app, chat=ADA, text="remember what I like")
    [hiking] = durable(app.memory, ADA_SCOPE, "hiking")
    assert hiking.mentions == 2 and hiking.content == "I really love hiking in mountains!"


async def test_the_flush_of_a_compaction_keeps_facts_current(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(
        workspace,
        {"llm": {"maxRetries": 0}, "compaction": {"maxContextTokens": 1000, "keepLastMessages": 2}},
    )

    def model(request: dict[str, Any]) -> Step:
        if system_text(request).startswith("You keep an assistant's long-term memory"):
            return reply("- I moved to Berlin.\n- I really love hiking in the mountains!")
        if system_text(request).startswith("You compress a chat"):
            return reply("SUMMARY: notes")
        return reply(f"echo: {user_texts(request)[-1]}")

    openai_server.responder = model
    minutes = itertools.count(START, 60.0)
    app = build_app(
        make_settings(workspace, openai_server),
        clock=lambda: next(minutes),
        tuning=Tuning(background_quiet_seconds=0),
    )
    try:
        await ask(app, "I live in Paris.")
        await ask(app, "I really love hiking in the mountains.")
        for n in range(6):
            await ask(app, f"Long note {n}: " + "lorem ipsum dolor sit amet " * 30)
        # The flush follows the reply on this local (one-slot) server.
        assert app.maintenance is not None
        await app.maintenance.settled()
    finally:
        await app.close()
    memory = WorkspaceMemory.open(workspace)
    [berlin] = durable(memory, "console:local", "Berlin")
    assert berlin.source == "compaction"
    [paris] = durable(memory, "console:local", "Paris")
    assert paris.superseded_by == berlin.id
    # The person's own words stay as they were kept; the flush saying them again (with
    # an exclamation mark) adds nothing beside them.
    [hiking] = durable(memory, "console:local", "hiking")
    assert hiking.source != "compaction" and hiking.content.endswith("mountains.")


class HoldArguments(BaseModel):
    pass


async def test_the_memory_tool_waits_for_its_scope_off_the_event_loop(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    holders: list[ScopeHolder] = []

    def hold(arguments: HoldArguments, ctx: TurnContext) -> str:
        # Ada's scope gets busy (a cold load of a huge scope) right before her memory call.
        holders.append(ScopeHolder(app.memory, ctx.scope).__enter__())
        return "held"

    app.tools.register(Tool("hold", "hold the scope", HoldArguments, hold))

    def model(request: dict[str, Any]) -> Step:
        if user_texts(request)[-1] != "remember that I like tea":
            return reply(f"echo: {user_texts(request)[-1]}")
        if tool_messages(request):
            return reply("Noted.")
        saving = tool_call("memory", {"operation": "add", "content": "I like tea"})
        return tool_calls([tool_call("hold", {}), saving])

    await ask(app, chat=ADA, text="hello")  # Ada's scope is loaded, her pack is built
    openai_server.responder = model
    ada = asyncio.create_task(app.assistant.handle_text(ADA, "remember that I like tea"))
    while not holders:
        await asyncio.sleep(0.01)
    try:
        bob = await app.assistant.handle_text(BOB, "I like coffee")
        # Bob got his answer while Ada's memory call still waited for her scope.
        assert bob is not None and bob.reply == "echo: I like coffee"
        assert holders[0].holding and not ada.done()
    finally:
        holders[0].__exit__()
    done = await asyncio.wait_for(ada, 10)
    assert done is not None and done.reply == "Noted."
    assert durable(app.memory, ADA_SCOPE, "tea")


async def test_every_message_of_a_turn_is_dated_by_the_bots_clock(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(tool_call("datetime", {}), reply("It is 2020."))
    await ask(app, chat=ADA, text="what day is it?")
    messages = app.assistant.session(ADA).messages
    stamps = [from_iso(m["at"]) for m in messages if "at" in m]
    assert len(stamps) == 4 and all(START <= at < START + 3600 for at in stamps), stamps
    # The tool tells the bot's time too, not the wall's.
    assert "2020-09-13" in tool_messages(openai_server.last_request())[-1]["content"]
