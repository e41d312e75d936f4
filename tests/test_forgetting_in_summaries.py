"""Forgetting a text that the conversation summary holds takes out its sentences, not the
summary: the rest of a long session's gist stays, in the session the model is sent and in
the files the erasure rewrites.

The redaction (`redact_forgotten`) is checked on its own against any text; then through the
bot: the fake Bot API and model over HTTP, the forget said to the bot (the memory tool),
made on the memory page (which erases the files at once), or waiting for its erasure.
"""

from __future__ import annotations

import json
import re
import textwrap
from datetime import UTC
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from mnemobot.bot.app import App
from mnemobot.bot.cli.web import host_of_app
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.bot.web.corrections import Corrections
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.notes.daily_notes import FORGOTTEN_MARK
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import normalize_content
from mnemobot.memory.upkeep.text_redaction import SUMMARY_PREFIX, redact_forgotten
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    reply,
    system_text,
    tool_call,
    tool_messages,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import AppFactory, ask
from tests.crash_points import run_to_crash
from tests.telegram_harness import StartBot, start_bot, telegram
from tests.test_forgetting_everywhere import copying_model
from tests.web_harness import files_with

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

CODE = "QX-7731-ZEBRA"
SAID = ("My locker code is QX-7731-ZEBRA.", "I am flying to Lisbon on Friday.", "I drink sencha.")
# What the summary holds besides the code, and must keep.
GIST = ("Lisbon", "sencha")
NOTE = "Long note {}: " + "lorem ipsum dolor sit amet " * 30
COMPACTING = {"compaction": {"maxContextTokens": 1000, "keepLastMessages": 2}}

# Maintenance's model calls go as soon as the server is free (the quiet spell has its own test).
NO_QUIET_SPELL = Tuning(background_quiet_seconds=0)


def summarizing_model(request: dict[str, Any]) -> Step:
    """A model whose summaries keep the previous one's lines and add one for each thing the
    user said, wrapped at 40 characters as models wrap (the code's sentence then runs over
    a line break); asked to forget the locker code, it calls the memory tool; else it
    copies what it is shown (`copying_model`)."""
    shown = user_texts(request)[-1] if user_texts(request) else ""
    if system_text(request).startswith("You compress a chat"):
        previous, _, conversation = shown.partition("CONVERSATION:\n")
        kept = previous.removeprefix("PREVIOUS SUMMARY:\n").strip()
        said = re.findall(r"^user(?: \([^)]*\))?: (.*)$", conversation, re.M)
        new = [
            textwrap.fill(f"- The user said: {text[:60]}", 40, break_on_hyphens=False)
            for text in said
        ]
        return reply("\n".join([kept, *new]).strip())
    if shown == "forget my locker code" and not tool_messages(request):
        return tool_call("memory", {"operation": "forget", "query": "locker code"})
    return copying_model(request)


def summary_in(request: dict[str, Any]) -> str:
    """The conversation summary a request carries (it closes the system prompt, after what
    memory recalled), lines joined as a reader of the words takes them."""
    summary = system_text(request).partition(SUMMARY_PREFIX)[2]
    assert summary, "no summary in the request"
    return summary.replace("\n", " ")


def chat_requests(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    """The requests of the conversation itself (they offer the tools), oldest first."""
    return [r for r in server.requests if r.get("tools")]


def summary_of(workspace: Path, key: str) -> str:
    messages = json.loads((workspace / "sessions" / f"{key}.json").read_text())["messages"]
    first = str(messages[0]["content"])
    return first if first.startswith(SUMMARY_PREFIX) else ""


def assert_gist_without_code(text: str) -> None:
    assert all(kept in text for kept in GIST), text
    assert CODE not in text and "QX-7731" not in text, text


async def summarized_chat(telegram: TelegramServer, workspace: Path, chat: int) -> None:
    """A Telegram chat that said the code and the rest, then talked on until compaction
    summarized it all (`summarizing_model`)."""
    sent = 0
    for text in SAID:
        telegram.send_text(text, chat_id=chat)
        sent += 1
        await telegram.wait_for_messages_async(chat, sent, timeout=15)
    for n in range(12):
        summary = summary_of(workspace, f"telegram:{chat}")
        if CODE in summary and all(kept in summary for kept in GIST):
            return
        telegram.send_text(NOTE.format(n), chat_id=chat)
        sent += 1
        await telegram.wait_for_messages_async(chat, sent, timeout=15)
    summary = summary_of(workspace, f"telegram:{chat}")
    raise AssertionError(f"no summary holding all that was said: {summary!r}")


async def test_forgetting_a_code_the_summary_holds_keeps_the_rest_of_the_summary(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.responder = summarizing_model
    bot = await start_bot(runtime=COMPACTING, tuning=NO_QUIET_SPELL)
    chat, key = 5301, "telegram:5301"
    await summarized_chat(telegram, workspace, chat)
    assert CODE in summary_in(chat_requests(openai_server)[-1])

    telegram.send_text("forget my locker code", chat_id=chat)
    await telegram.wait_for_messages_async(chat, len(telegram.sent_messages(chat)) + 1, 15)

    # The answer after the tool's: the summary's sentence holding it taken out of the
    # conversation, the rest left.
    [after_tool] = [r for r in chat_requests(openai_server) if tool_messages(r)][-1:]
    assert user_texts(after_tool)[-1] == "forget my locker code"
    assert_gist_without_code(summary_in(after_tool))
    assert_gist_without_code(summary_of(workspace, key))
    assert FORGOTTEN_MARK in summary_of(workspace, key)

    telegram.send_text("What do you know about my plans?", chat_id=chat)
    await telegram.wait_for_messages_async(chat, len(telegram.sent_messages(chat)) + 1, 15)
    following = chat_requests(openai_server)[-1]
    assert user_texts(following)[-1] == "What do you know about my plans?"
    assert "QX-7731" not in json.dumps(following)
    assert_gist_without_code(summary_in(following))

    assert bot.app.maintenance is not None
    await bot.app.maintenance.maintain(key)
    assert files_with(workspace, "QX-7731") == []
    assert_gist_without_code(summary_of(workspace, key))


async def test_the_erasure_of_a_page_forget_rewrites_only_the_summary_lines_holding_it(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """Forgotten on the memory page, the text is erased from the session file at once (no
    turn took it out first): its summary keeps the rest, and so does the next request."""
    openai_server.responder = summarizing_model
    bot = await start_bot(runtime=COMPACTING, tuning=NO_QUIET_SPELL)
    chat, key = 5302, "telegram:5302"
    await summarized_chat(telegram, workspace, chat)
    config = bot.app.runtime.current()
    [(turn, _)] = bot.app.memory.recall.search(
        key, "locker code", config=config.memory, tz=config.assistant.tzinfo()
    )[:1]

    forgotten = await Corrections(host_of_app(bot.app, str), read_only=False).forget(
        key, turn.id, "t"
    )

    assert any("erase forgotten: erased" in line for line in forgotten.erasure), forgotten
    assert files_with(workspace, "QX-7731") == []
    assert_gist_without_code(summary_of(workspace, key))
    telegram.send_text("What do you know about my plans?", chat_id=chat)
    await telegram.wait_for_messages_async(chat, len(telegram.sent_messages(chat)) + 1, 15)
    following = chat_requests(openai_server)[-1]
    assert "QX-7731" not in json.dumps(following)
    assert_gist_without_code(summary_in(following))


CHAT = ChatRef("console", "sum", user_id="u1")
SCOPE = "console:sum"
BIKE = "5512-KT-88"


async def test_a_text_waiting_for_its_erasure_is_kept_out_of_the_summary_sentence_by_sentence(
    make_app: AppFactory, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """Forgotten while its erasure waits (the session untouched): the turn's own redaction
    of the session, and a compaction before it, leave out only the summary's sentences."""
    openai_server.responder = summarizing_model
    app: App = make_app()
    for text in (*SAID, f"My bike lock code is {BIKE}.", "ok", "ok then"):
        await ask(app, text, chat=CHAT)
    await app.commands.run(CHAT, ParsedCommand("compact", "2"))
    assert CODE in summary_of(workspace, SCOPE).replace("\n", " ")
    memory = app.memory

    assert memory.forget.forget_matching(SCOPE, "locker code").items
    await ask(app, "What do you know about my plans?", chat=CHAT)
    following = chat_requests(openai_server)[-1]
    assert "QX-7731" not in json.dumps(following)
    assert_gist_without_code(summary_in(following))
    assert BIKE in summary_in(following)

    # Forgotten, then compacted before any turn: the previous summary the summary call is
    # shown leaves it out, and so does the summary written.
    assert memory.forget.forget_matching(SCOPE, "bike lock").items
    before = len(openai_server.requests)
    await app.commands.run(CHAT, ParsedCommand("compact", "1"))
    [summary_call] = [
        r
        for r in openai_server.requests[before:]
        if system_text(r).startswith("You compress a chat")
    ]
    shown = user_texts(summary_call)[-1]
    assert shown.startswith("PREVIOUS SUMMARY:")
    assert_gist_without_code(shown)
    assert BIKE not in json.dumps(summary_call)
    assert_gist_without_code(summary_of(workspace, SCOPE))
    assert BIKE not in summary_of(workspace, SCOPE)


# The redaction on its own. Lines that cannot hold a forgotten text (letters a-e only) and
# forgotten texts that cannot hold them (q, x, z, digits and dashes).
UNRELATED = st.from_regex(r"(- |SUMMARY: )?[a-e][a-e .!?]{0,30}", fullmatch=True)
NEEDLE = st.from_regex(r"[qxz0-9][qxz0-9 -]{2,14}[qxz0-9]", fullmatch=True).map(normalize_content)


@st.composite
def summaries(draw: st.DrawFn) -> tuple[str, list[str], set[int]]:
    """A summary, the forgotten texts in it, and which of its lines hold none."""
    needles = draw(st.lists(NEEDLE, min_size=1, max_size=3))
    lines = [SUMMARY_PREFIX]
    unrelated = {0}
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            lines.append(draw(UNRELATED))
            unrelated.add(len(lines) - 1)
            continue
        needle = draw(st.sampled_from(needles))
        written = "".join(c.upper() if draw(st.booleans()) else c for c in needle)
        if " " in written and draw(st.booleans()):  # running over a line break
            cut = draw(st.sampled_from([i for i, c in enumerate(written) if c == " "]))
            written = written[:cut] + draw(st.sampled_from(["\n", " \n  ", "\n\t"])) + written[cut:]
        before, after = draw(UNRELATED), draw(UNRELATED)
        lines += f"{before} {written}. {after}".split("\n")
    return "\n".join(lines), needles, unrelated


@given(summaries())
@example(
    (f"{SUMMARY_PREFIX}\nabc. The code is qx\n 77. dd\n- ab", ["qx 77"], {0, 3}),
)
def test_a_summary_loses_every_forgotten_text_and_nothing_else(
    case: tuple[str, list[str], set[int]],
) -> None:
    text, needles, unrelated = case
    redacted = redact_forgotten(text, needles)
    folded = normalize_content(redacted)
    assert not any(needle in folded for needle in needles), redacted
    lines, kept = text.split("\n"), redacted.split("\n")
    assert len(kept) == len(lines)
    assert all(kept[i] == lines[i] for i in unrelated), redacted
    assert redact_forgotten(redacted, needles) == redacted


@given(st.text(max_size=300), st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4))
@example(f"{SUMMARY_PREFIX}\nİstanbul code qx-9 here. fine", ["i̇stanbul code qx-9"])
@example(f"{SUMMARY_PREFIX}\nthe word is forgotten. ok", ["forgotten"])
def test_no_forgotten_text_survives_any_text(body: str, raw_needles: list[str]) -> None:
    needles = [n for n in map(normalize_content, raw_needles) if n]
    for text in (body, f"{SUMMARY_PREFIX}\n{body}"):
        redacted = redact_forgotten(text, needles)
        folded = normalize_content(redacted)
        # Only the mark itself may hold one ("forgotten"): then nothing else is left.
        survivors = [needle for needle in needles if needle in folded]
        assert not survivors or redacted == FORGOTTEN_MARK, (redacted, survivors)


def test_any_other_message_holding_a_forgotten_text_is_replaced_whole() -> None:
    text = "My locker code is QX-7731-ZEBRA.\nAnd I drink sencha."
    assert redact_forgotten(text, ["qx-7731-zebra"]) == FORGOTTEN_MARK
    assert redact_forgotten(text, ["lisbon"]) == text


ERASE_AND_DIE = """
import sys
from pathlib import Path
from mnemobot.memory.services.workspace_memory import WorkspaceMemory

memory = WorkspaceMemory.open(Path(sys.argv[1]))
arm(inside="sessions")
memory.forget.erase_forgotten(sys.argv[2])
"""


def test_a_crash_while_erasing_leaves_the_summary_old_or_new_and_the_next_run_ends_it(
    tmp_path: Path,
) -> None:
    """The forgotten text runs over a line break of the summary: the session file (JSON)
    shows it only once its strings are read."""
    scope = "telegram:5303"
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    summary = (
        f"{SUMMARY_PREFIX}\nSESSION INTENT: a trip to Lisbon.\n"
        "SUMMARY: The user said the spare key is under\nthe blue flowerpot. They drink sencha.\n"
        "NEXT STEPS: none"
    )
    messages = [{"role": "system", "content": summary}, {"role": "user", "content": "hi"}]
    path = sessions / f"{scope}.json"
    path.write_text(json.dumps({"id": scope, "messages": messages}, indent=2))
    memory = WorkspaceMemory.open(tmp_path)
    memory.record.record_turn(
        scope=scope,
        user_text="The spare key is under the blue flowerpot",
        assistant_text="Noted.",
        at=1_800_000_000,
        config=MemoryConfig(),
        tz=UTC,
    )
    [turn] = [i for i in memory.scopes.store(scope).items.values() if "flowerpot" in i.content][:1]
    memory.forget.forget(scope, turn.id)
    memory.close()
    old = path.read_text()

    for point in ("mid-write", "before-replace"):
        run_to_crash(ERASE_AND_DIE, point, str(tmp_path), scope)
        assert path.read_text() == old  # the old file whole, the text still to erase
    run_to_crash(ERASE_AND_DIE, "after-replace", str(tmp_path), scope)
    first = json.loads(path.read_text())["messages"][0]["content"]
    assert first == (
        f"{SUMMARY_PREFIX}\nSESSION INTENT: a trip to Lisbon.\n"
        f"SUMMARY: {FORGOTTEN_MARK}\n{FORGOTTEN_MARK} They drink sencha.\nNEXT STEPS: none"
    )

    memory = WorkspaceMemory.open(tmp_path)
    assert memory.forget.scopes_to_erase() == [scope]  # the crash left it pending
    report = memory.forget.erase_forgotten(scope)
    memory.close()
    assert not report.busy and files_with(tmp_path, "flowerpot") == []
    assert json.loads(path.read_text())["messages"][0]["content"] == first
