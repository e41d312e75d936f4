"""A fact the memory tool rewrites is the assistant's words at someone's request, dated
when it was rewritten, and the value it had stays, marked earlier: found live, the
rewrite read as what the person said (`Fact (said ...)`), the page cited their old
message as its source, and the old value was gone."""

from __future__ import annotations

import re
import time
from pathlib import Path

from mnemobot.bot.app import App, build_app
from mnemobot.memory.store.items import Layer
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, message_text, reply, tool_call
from tests.conftest import ask, make_settings
from tests.web_harness import SCOPE, StartPage, bot, start_page, visible_text

__all__ = ["bot", "start_page"]  # fixtures used by name below

ANNA = ChatRef("console", "kc", user_id="u1", user_name="Anna")


def durable_ids(app: App, text: str) -> list[str]:
    store = app.memory.scopes.store(SCOPE)
    return [
        item.id
        for item in store.items.values()
        if text in item.content and item.layer is not Layer.EPISODIC
    ]


async def test_a_rewritten_fact_is_the_assistants_at_whose_request_and_keeps_the_old_value(
    bot: App, start_page: StartPage, openai_server: FakeOpenAIServer
) -> None:
    await ask(bot, "I live in Lisbon", chat=ANNA)
    [lisbon] = durable_ids(bot, "Lisbon")
    openai_server.script(
        tool_call(
            "memory", {"operation": "update", "id": lisbon, "content": "Anna lives in Porto."}
        ),
        reply("Done."),
    )
    await ask(bot, "EDITFACT please fix where I live", chat=ANNA)
    answer = message_text(openai_server.requests[-1]["messages"][-1])
    assert answer.startswith("updated ") and "the value it had (now marked earlier)" in answer

    bot.assistant.reset_session(ANNA)
    await ask(bot, "Where do I live?", chat=ANNA)
    request = "\n".join(message_text(m) for m in openai_server.requests[-1]["messages"])
    (porto,) = [line for line in request.splitlines() if line.endswith(": Anna lives in Porto.")]
    assert "rewritten by the assistant at anna's request" in porto and "said" not in porto
    old = [line for line in request.splitlines() if line.startswith("- ") and "Lisbon" in line]
    assert old and all("earlier" in line for line in old), request

    # The page: the rewrite says whose request it was; Lisbon is its earlier value, with
    # the message it was said in.
    page = await start_page()
    facts = (await page.get(f"/chat/{SCOPE}/facts")).text
    [fact] = re.findall(r'<li class="fact">.*?</li>\s*</ol>\s*</details>', facts, re.S)
    current, history = fact.split('<details class="earlier"')
    assert "Anna lives in Porto." in current and "Lisbon" not in current
    assert "rewritten by the assistant at anna's request" in visible_text(current)
    assert "1 earlier value" in history and '<q dir="auto">Anna: I live in Lisbon' in history
    earlier = (await page.get(f"/chat/{SCOPE}/facts", kind="earlier")).text
    assert "I live in Lisbon" in earlier


async def test_in_a_group_a_rewrite_of_anothers_fact_stays_theirs_at_the_askers_request(
    bot: App, openai_server: FakeOpenAIServer
) -> None:
    boris = ChatRef("console", "g2", user_id="u2", user_name="Boris", is_group=True)
    anna = ChatRef("console", "g2", user_id="u1", user_name="Anna", is_group=True)
    await ask(bot, "I live in Riga", chat=boris)
    store = bot.memory.scopes.store("console:g2")
    [riga] = [i for i in store.items.values() if "Riga" in i.content and i.layer is Layer.SEMANTIC]
    openai_server.script(
        tool_call(
            "memory", {"operation": "update", "id": riga.id, "content": "Boris lives in Oslo."}
        ),
        reply("Done."),
    )
    await ask(bot, "EDITFACT Boris moved, fix his city", chat=anna)
    oslo = store.items[riga.id]
    # Still Boris's fact (his slot, his preferences' owner), rewritten at Anna's request.
    assert oslo.content == "Boris lives in Oslo." and "speaker:boris" in oslo.tags
    assert "speaker:anna" not in oslo.tags and "rewritten-by:anna" in oslo.tags
    assert "from:tool" in oslo.tags and "from:user" not in oslo.tags
    bot.assistant.reset_session(boris)
    await ask(bot, "Where do I live?", chat=boris)
    request = "\n".join(message_text(m) for m in openai_server.requests[-1]["messages"])
    (line,) = [line for line in request.splitlines() if line.endswith(": Boris lives in Oslo.")]
    assert "rewritten by the assistant at anna's request" in line, request


class HourlyClock:
    """A clock an hour further on at each turn: a rewrite comes well after what it
    rewrites, as it does in a chat."""

    def __init__(self) -> None:
        self.now = time.time() - 3 * 86_400

    def __call__(self) -> float:
        return self.now


async def test_a_fact_rewritten_back_to_the_value_it_replaced_holds_again_as_said(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Found in a review: the rewrite back to the old words was refused ("another item
    holds that content": the old value kept as earlier)."""
    clock = HourlyClock()
    bot = build_app(make_settings(workspace, openai_server), clock=clock)
    try:
        await ask(bot, "I live in Lisbon", chat=ANNA)
        [lisbon] = durable_ids(bot, "Lisbon")
        said = bot.memory.scopes.store(SCOPE).items[lisbon].content
        openai_server.script(
            tool_call(
                "memory", {"operation": "update", "id": lisbon, "content": "Anna lives in Porto."}
            ),
            reply("Done."),
        )
        clock.now += 3600
        await ask(bot, "EDITFACT she moved", chat=ANNA)
        [porto] = durable_ids(bot, "Porto")
        openai_server.script(
            tool_call("memory", {"operation": "update", "id": porto, "content": said}),
            reply("Done."),
        )
        clock.now += 3600
        await ask(bot, "EDITFACT no, she still lives in Lisbon", chat=ANNA)
        answer = message_text(openai_server.requests[-1]["messages"][-1])
        assert answer.startswith("updated "), answer

        bot.assistant.reset_session(ANNA)
        clock.now += 3600
        await ask(bot, "Where do I live?", chat=ANNA)
    finally:
        await bot.close()
    request = "\n".join(message_text(m) for m in openai_server.requests[-1]["messages"])
    lines = [line for line in request.splitlines() if line.startswith("- ")]
    lisbon_lines = [line for line in lines if "I live in Lisbon" in line]
    porto_lines = [line for line in lines if "Porto" in line]
    # Lisbon holds, as Anna said it; Porto is the earlier value.
    assert lisbon_lines and not any("earlier" in line for line in lisbon_lines), request
    assert not any("rewritten" in line for line in lisbon_lines), request
    assert porto_lines and all("earlier" in line for line in porto_lines), request


async def test_a_value_rewritten_back_with_tags_stays_its_speakers(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """Found in a review: rewritten back with tags of the model's own, the value Boris said
    held again under those tags alone: whose it was and that he said it were gone, against
    the rule a rewrite keeps."""
    boris = ChatRef("console", "g3", user_id="u2", user_name="Boris", is_group=True)
    anna = ChatRef("console", "g3", user_id="u1", user_name="Anna", is_group=True)
    clock = HourlyClock()
    bot = build_app(make_settings(workspace, openai_server), clock=clock)
    try:
        await ask(bot, "I live in Riga", chat=boris)
        store = bot.memory.scopes.store("console:g3")
        [riga] = [
            i for i in store.items.values() if "Riga" in i.content and i.layer is Layer.SEMANTIC
        ]
        openai_server.script(
            tool_call(
                "memory", {"operation": "update", "id": riga.id, "content": "Boris lives in Oslo."}
            ),
            reply("Done."),
        )
        clock.now += 3600
        await ask(bot, "EDITFACT Boris moved, fix his city", chat=anna)
        openai_server.script(
            tool_call(
                "memory",
                {"operation": "update", "id": riga.id, "content": riga.content, "tags": ["home"]},
            ),
            reply("Done."),
        )
        clock.now += 3600
        await ask(bot, "EDITFACT no, he still lives in Riga", chat=anna)
        answer = message_text(openai_server.requests[-1]["messages"][-1])
        assert answer.startswith("updated "), answer
        [back] = [
            i
            for i in store.items.values()
            if i.content == riga.content and i.layer is Layer.SEMANTIC and not i.is_superseded
        ]
    finally:
        await bot.close()
    assert "home" in back.tags
    assert "speaker:boris" in back.tags and "from:user" in back.tags, back.tags


async def test_a_standing_preference_rewritten_with_tags_is_listed_where_requests_carry_it(
    bot: App, start_page: StartPage, openai_server: FakeOpenAIServer
) -> None:
    """Found in a review: rewritten with tags of the model's own, a standing preference lost
    its tag but not its place in every request; the page listed it with the facts."""
    await ask(bot, "From now on, always answer me in French.", chat=ANNA)
    [french] = durable_ids(bot, "French")
    openai_server.script(
        tool_call(
            "memory",
            {
                "operation": "update",
                "id": french,
                "content": "Always answer Anna in German.",
                "tags": ["language"],
            },
        ),
        reply("Done."),
    )
    await ask(bot, "EDITFACT german please", chat=ANNA)
    bot.assistant.reset_session(ANNA)
    await ask(bot, "hello there", chat=ANNA)
    request = "\n".join(message_text(m) for m in openai_server.requests[-1]["messages"])
    standing = request.split("# What people in this chat asked for themselves")[1]
    assert "Always answer Anna in German." in standing.split("\n[Time now")[0], request

    page = await start_page()
    listed = visible_text((await page.get(f"/chat/{SCOPE}/facts", kind="preferences")).text)
    facts = visible_text((await page.get(f"/chat/{SCOPE}/facts", kind="facts")).text)
    assert "answer Anna in German" in listed and "answer Anna in German" not in facts
