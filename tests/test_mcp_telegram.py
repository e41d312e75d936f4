"""MCP tools on Telegram: who is offered them where, confirmations by button or reply, /stop.

The real PTB client against the fake Bot API, the fake model server, and the SDK test
server started by the bot over stdio."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    tool_call,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.mcp_harness import (
    answer_with_tool_result,
    calls_logged,
    offered_tools,
    stdio_server,
    wait_ready,
    wait_until,
)
from tests.telegram_harness import RunningBot, StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

GROUP = -3001
ASKER, OTHER, STRANGER = 21, 22, 23


async def start(
    start_bot: StartBot, log: Path, *args: str, allowed: str = "21,22", **server: Any
) -> RunningBot:
    bot = await start_bot(
        allowed=allowed,
        runtime={"mcp": {"servers": {"mail": stdio_server(log, *args, **server)}}},
    )
    bot.app.mcp.start()
    await wait_ready(bot.app, "mail")
    return bot


async def texts(telegram: TelegramServer, chat: int, count: int) -> list[str]:
    sent = await telegram.wait_for_messages_async(chat, count, timeout=15)
    return [message["plain_text"] for message in sent]


async def test_in_a_group_only_the_asker_can_confirm_a_tool_by_button(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await start(start_bot, log, chats="all", confirmTools=["send_*"])
    openai_server.responder = answer_with_tool_result
    openai_server.script(
        tool_call("mcp_mail_send_mail", {"to": "ana@example.com", "subject": "Hi"})
    )
    telegram.send_text("@mnemo_test_bot mail Ana", chat_id=GROUP, user_id=ASKER, chat_type="group")

    [question] = await telegram.wait_for_messages_async(GROUP, 1, timeout=15)
    assert question["plain_text"].startswith(
        'Test, may I run send_mail (MCP server mail) with {"subject":"Hi","to":"ana@example.com"}?'
    )
    [[run_it, cancel]] = question["reply_markup"]["inline_keyboard"]
    assert (run_it["text"], cancel["text"]) == ("Run it", "Cancel")

    # Another member's press does not count: they are told so, and nothing runs.
    telegram.press_button(GROUP, question["message_id"], run_it["callback_data"], user_id=OTHER)
    other = await telegram.wait_for_call_async("answerCallbackQuery")
    assert other["params"]["text"] == "Only the person who asked can answer this."
    assert calls_logged(log) == []

    telegram.press_button(GROUP, question["message_id"], run_it["callback_data"], user_id=ASKER)
    answers = await texts(telegram, GROUP, 2)
    assert answers[1] == "Result: sent to ana@example.com"
    assert calls_logged(log) == ["send_mail ana@example.com Hi"]
    await wait_until(lambda: telegram.sent_messages(GROUP)[0]["edit_count"] == 1, 10, "an edit")
    edited = telegram.sent_messages(GROUP)[0]
    assert edited["plain_text"].endswith("Confirmed by Test.")
    assert edited["reply_markup"] is None
    # A press that comes late (a button seen before the edit) runs nothing twice.
    telegram.press_button(GROUP, question["message_id"], run_it["callback_data"], user_id=ASKER)
    late = await telegram.wait_for_call_async("answerCallbackQuery", count=3)
    assert late["params"]["text"] == "This question is no longer open."
    assert calls_logged(log) == ["send_mail ana@example.com Hi"]


async def test_an_anonymous_admins_question_is_answered_by_an_administrators_press(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """An administrator writing as the group has the group's id, and presses a button with
    their own account: any administrator's press answers it, a member's does not."""
    log = tmp_path / "calls.log"
    await start(start_bot, log, allowed=f"21,22,{GROUP}", chats="all", confirmTools=["send_*"])
    openai_server.responder = answer_with_tool_result
    openai_server.script(
        tool_call("mcp_mail_send_mail", {"to": "ana@example.com", "subject": "Hi"})
    )
    telegram.set_member_status(GROUP, ASKER, "administrator")
    telegram.send_as_chat("@mnemo_test_bot mail Ana", chat_id=GROUP, signature="Boss")

    [question] = await telegram.wait_for_messages_async(GROUP, 1, timeout=30)
    assert question["reply_markup"] is not None, question["plain_text"]
    [[run_it, _cancel]] = question["reply_markup"]["inline_keyboard"]
    telegram.press_button(GROUP, question["message_id"], run_it["callback_data"], user_id=OTHER)
    member = await telegram.wait_for_call_async("answerCallbackQuery")
    assert member["params"]["text"] == "Only the person who asked can answer this."
    assert calls_logged(log) == []

    telegram.press_button(GROUP, question["message_id"], run_it["callback_data"], user_id=ASKER)
    answers = await texts(telegram, GROUP, 2)
    assert answers[1] == "Result: sent to ana@example.com"
    assert calls_logged(log) == ["send_mail ana@example.com Hi"]
    asked = {c["params"]["user_id"] for c in telegram.calls("getChatMember")}
    assert asked == {OTHER, ASKER}


async def test_a_reply_confirms_or_refuses_in_a_private_chat(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await start(start_bot, log, confirmTools=["*"])
    openai_server.responder = answer_with_tool_result

    openai_server.script(tool_call("mcp_mail_add", {"a": 1, "b": 2}))
    telegram.send_text("add 1 and 2", chat_id=ASKER)
    await texts(telegram, ASKER, 1)
    telegram.send_text("no", chat_id=ASKER)
    refused = (await texts(telegram, ASKER, 2))[1]
    assert (
        refused == "Result: error: not run: the user said no. Do not run it again unless they ask"
    )

    openai_server.script(tool_call("mcp_mail_add", {"a": 1, "b": 2}))
    telegram.send_text("please add 1 and 2", chat_id=ASKER)
    await texts(telegram, ASKER, 3)
    telegram.send_text("Yes!", chat_id=ASKER)
    assert (await texts(telegram, ASKER, 4))[3] == "Result: 3"
    assert calls_logged(log) == ["add 1 2"]
    # The answers were answers, not messages of their own for the model.
    assert len(openai_server.requests) == 4


async def test_a_forwarded_no_is_a_message_to_read_not_the_answer(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await start(start_bot, log, confirmTools=["*"])
    openai_server.responder = answer_with_tool_result
    openai_server.script(tool_call("mcp_mail_add", {"a": 1, "b": 2}))
    telegram.send_text("add 1 and 2", chat_id=ASKER)
    await texts(telegram, ASKER, 1)
    # Someone else's "no", forwarded while the question is open, answers nothing.
    telegram.send_forward("no", chat_id=ASKER, author="Boris", date=1_700_000_000)
    telegram.send_text("yes", chat_id=ASKER)
    answers = await texts(telegram, ASKER, 3)
    assert answers[1] == "Result: 3", answers
    assert calls_logged(log) == ["add 1 2"]
    # The forward was read as a message of its own, after the turn.
    forwarded = [r for r in openai_server.requests if "Boris" in json.dumps(r["messages"])]
    assert forwarded, "the forward never reached the model"


async def test_a_russian_reader_is_asked_in_russian_and_answers_by_button_or_da(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await start(start_bot, log, confirmTools=["send_*"])
    openai_server.responder = answer_with_tool_result
    openai_server.script(
        tool_call("mcp_mail_send_mail", {"to": "ana@example.com", "subject": "Hi"})
    )
    telegram.send_text("напиши Ане", chat_id=ASKER, language_code="ru")

    [question] = await telegram.wait_for_messages_async(ASKER, 1, timeout=15)
    assert question["plain_text"] == (
        "Можно запустить send_mail (MCP-сервер mail) с параметрами "
        '{"subject":"Hi","to":"ana@example.com"}?\n'
        "Нажмите кнопку или ответьте «да» или «нет»."
    )
    [[run_it, cancel]] = question["reply_markup"]["inline_keyboard"]
    assert (run_it["text"], cancel["text"]) == ("Выполнить", "Отмена")

    telegram.press_button(
        ASKER,
        question["message_id"],
        run_it["callback_data"],
        user_id=ASKER,
        first_name="Анна",
        language_code="ru",
    )
    pressed = await telegram.wait_for_call_async("answerCallbackQuery")
    assert pressed["params"]["text"] == "Выполняю."
    assert (await texts(telegram, ASKER, 2))[1] == "Result: sent to ana@example.com"
    assert calls_logged(log) == ["send_mail ana@example.com Hi"]
    await wait_until(lambda: telegram.sent_messages(ASKER)[0]["edit_count"] == 1, 10, "an edit")
    assert telegram.sent_messages(ASKER)[0]["plain_text"] == (
        "Можно запустить send_mail (MCP-сервер mail) с параметрами "
        '{"subject":"Hi","to":"ana@example.com"}?\n'
        "Подтверждено: Анна."
    )

    # Typed in their language, "да" is a yes too.
    openai_server.script(tool_call("mcp_mail_send_mail", {"to": "bo@example.com", "subject": "Yo"}))
    telegram.send_text("и Бо тоже", chat_id=ASKER, language_code="ru")
    await texts(telegram, ASKER, 3)
    telegram.send_text("Да!", chat_id=ASKER, language_code="ru")
    assert (await texts(telegram, ASKER, 4))[3] == "Result: sent to bo@example.com"
    assert calls_logged(log) == ["send_mail ana@example.com Hi", "send_mail bo@example.com Yo"]
    # The answers were answers, not messages of their own for the model.
    assert len(openai_server.requests) == 4


async def test_in_a_group_a_german_member_reads_the_question_and_presses_in_german(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await start(start_bot, log, chats="all", confirmTools=["send_*"])
    openai_server.responder = answer_with_tool_result
    openai_server.script(
        tool_call("mcp_mail_send_mail", {"to": "ana@example.com", "subject": "Hi"})
    )
    telegram.send_text(
        "@mnemo_test_bot mail Ana",
        chat_id=GROUP,
        user_id=ASKER,
        chat_type="group",
        language_code="de",
    )

    [question] = await telegram.wait_for_messages_async(GROUP, 1, timeout=15)
    assert question["plain_text"] == (
        "Test, darf ich send_mail (MCP-Server mail) mit "
        '{"subject":"Hi","to":"ana@example.com"} ausführen?\n'
        "Drück eine Taste oder antworte „ja“ oder „nein“."
    )
    [[run_it, cancel]] = question["reply_markup"]["inline_keyboard"]
    assert (run_it["text"], cancel["text"]) == ("Ausführen", "Abbrechen")

    # A Spanish member's press does not count, and they are told so in Spanish.
    telegram.press_button(
        GROUP, question["message_id"], run_it["callback_data"], user_id=OTHER, language_code="es"
    )
    other = await telegram.wait_for_call_async("answerCallbackQuery")
    assert other["params"]["text"] == "Solo quien lo pidió puede responder."

    telegram.press_button(
        GROUP, question["message_id"], cancel["callback_data"], user_id=ASKER, language_code="de"
    )
    pressed = await telegram.wait_for_call_async("answerCallbackQuery", count=2)
    assert pressed["params"]["text"] == "Abgebrochen."
    await wait_until(lambda: telegram.sent_messages(GROUP)[0]["edit_count"] == 1, 10, "an edit")
    assert telegram.sent_messages(GROUP)[0]["plain_text"].endswith(
        "ausführen?\nAbgebrochen von Test."
    )
    refused = (await texts(telegram, GROUP, 2))[1]
    assert refused.startswith("Result: error: not run: the user said no")
    assert calls_logged(log) == []


@pytest.mark.slow
async def test_who_is_offered_a_servers_tools_and_where(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    bot = await start_bot(
        allowed="*",
        telegram_operators="24",
        runtime={
            "mcp": {
                "servers": {
                    "mail": stdio_server(log),
                    "shop": stdio_server(
                        log, chats="all", users="everyone", groupUse="admins", allowTools=["add"]
                    ),
                }
            }
        },
    )
    bot.app.mcp.start()
    await wait_ready(bot.app, "mail")
    await wait_ready(bot.app, "shop")
    telegram.set_member_status(GROUP, OTHER, "administrator")

    # TELEGRAM_ALLOWED_USERS=* serves everyone, but only named users get a server's tools
    # (unless it says users: "everyone").
    telegram.send_text("/tools", chat_id=STRANGER)
    telegram.send_text("hello", chat_id=STRANGER)
    stranger = await texts(telegram, STRANGER, 2)
    assert "mcp_mail" not in stranger[0] and "mcp_shop_add" in stranger[0]
    offered = [n for n in offered_tools(openai_server.requests[0]) if n.startswith("mcp_")]
    assert offered == ["mcp_shop_add"]

    telegram.send_text("/tools", chat_id=24)
    [operator] = await texts(telegram, 24, 1)
    assert "- mcp_mail_send_mail (MCP server mail): Send an e-mail." in operator
    assert "- mcp_shop_add (MCP server shop): Add two integers." in operator

    # In a group: "mail" is for private chats (the default); "shop" for its administrators,
    # named or not (users: "everyone"), as Telegram says.
    say = {"chat_id": GROUP, "chat_type": "group"}
    telegram.send_text("/tools", user_id=STRANGER, **say)
    telegram.send_text("/tools", user_id=OTHER, **say)
    member, admin = await texts(telegram, GROUP, 2)
    assert "mcp_" not in member
    assert "mcp_shop_add" in admin and "mcp_mail" not in admin


async def test_stop_cancels_a_running_tool_call_on_the_server(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    bot = await start(start_bot, log)
    openai_server.responder = answer_with_tool_result
    openai_server.script(tool_call("mcp_mail_slow", {"seconds": 60}))
    telegram.send_text("do the slow thing", chat_id=ASKER)
    await wait_until(lambda: calls_logged(log) == ["slow 60.0"], 15, "the call to start")

    telegram.send_text("/stop", chat_id=ASKER)
    [stopped] = await texts(telegram, ASKER, 1)
    assert stopped.startswith("Stopped the reply in progress.")
    await wait_until(lambda: "cancelled slow" in calls_logged(log), 10, "a server-side cancel")
    # The server is still up, and the next call works.
    openai_server.script(tool_call("mcp_mail_add", {"a": 4, "b": 4}))
    telegram.send_text("add 4 and 4", chat_id=ASKER)
    assert (await texts(telegram, ASKER, 2))[1] == "Result: 8"
    assert bot.app.mcp.supervisors["mail"].failures_in_a_row == 0


async def test_a_secret_a_server_repeats_in_a_result_reaches_no_chat_model_or_file(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "mail-token-5be0a7c3f1"
    monkeypatch.setenv("MAIL_TOKEN", secret)
    env = {"MCP_TEST_SECRET": "${MAIL_TOKEN}"}
    await start(start_bot, tmp_path / "calls.log", "--with-account", env=env)
    openai_server.responder = answer_with_tool_result
    openai_server.script(tool_call("mcp_mail_account", {}))
    with caplog.at_level(logging.DEBUG):
        telegram.send_text("which account do you send mail from?", chat_id=ASKER, user_id=ASKER)
        assert await texts(telegram, ASKER, 1) == [
            "Result: logged in as svc-mnemo with token [REDACTED]"
        ]
        scope = workspace / "memory" / f"telegram:{ASKER}"
        await wait_until(
            lambda: any("[REDACTED]" in note.read_text() for note in scope.glob("*.md")),
            10,
            "the daily note",
        )
    kept: dict[str, str] = {}
    for path in workspace.rglob("*"):
        if path.is_file():
            place = path.relative_to(workspace).parts[0]
            kept[place] = kept.get(place, "") + path.read_bytes().decode(errors="replace")
    # The redacted result is what the session, memory and the outbox hold.
    for place in ("sessions", "memory", "delivery"):
        assert "token [REDACTED]" in kept[place], place
    sent = json.dumps(openai_server.requests)
    assert "token [REDACTED]" in sent
    for seen in (sent, caplog.text, *kept.values()):
        assert secret not in seen
