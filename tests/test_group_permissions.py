"""In a group, what one member may do to everyone's memory is decided by permissions."""

from __future__ import annotations

import io
import threading
import zipfile
from pathlib import Path

from mnemobot.bot.app import App
from mnemobot.bot.schedule.tasks import TaskChat
from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    gated,
    hang,
    reply,
    tool_call,
    tool_messages,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.schedule_harness import due_now
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

GROUP = -2001
MEMBER, ADMIN, OTHER_ADMIN, OPERATOR = 11, 12, 14, 13
# A plain member whose question the others' /stop meets.
WRITER = 15


def say(telegram: TelegramServer, text: str, user: int) -> None:
    telegram.send_text(text, chat_id=GROUP, user_id=user, chat_type="group")


async def next_answer(telegram: TelegramServer, seen: int) -> str:
    sent = await telegram.wait_for_messages_async(GROUP, seen + 1, timeout=15)
    return sent[seen]["plain_text"]


async def test_group_export_and_forget_me_follow_roles_and_the_asker(
    start_bot: StartBot, telegram: TelegramServer, workspace: Path
) -> None:
    await start_bot(allowed="11,12,14", telegram_operators="13")
    telegram.set_member_status(GROUP, ADMIN, "administrator")
    telegram.set_member_status(GROUP, OTHER_ADMIN, "creator")
    say(telegram, "@mnemo_test_bot our launch code word is marmalade", MEMBER)
    await telegram.wait_for_messages_async(GROUP, 1)

    say(telegram, "/export", MEMBER)
    refused = await next_answer(telegram, 1)
    say(telegram, "/forget_me", MEMBER)
    refused_forget = await next_answer(telegram, 2)
    assert telegram.documents(GROUP) == []
    assert "only this group's administrators and the bot's operator" in refused
    assert "/export" in refused and "permissions.export" in refused
    assert "/forget_me" in refused_forget and "permissions.forgetMe" in refused_forget

    say(telegram, "/export", ADMIN)
    say(telegram, "/export", ADMIN)
    say(telegram, "/export", OPERATOR)  # the operator needs no group role
    await telegram.wait_for_documents_async(GROUP, 3, timeout=15)
    # Telegram was asked once about the admin: the answer is cached.
    asked = [c["params"]["user_id"] for c in telegram.calls("getChatMember")]
    assert asked.count(ADMIN) == 1

    # A confirmation counts only from the member who asked.
    say(telegram, "/forget_me", ADMIN)
    asked_text = await next_answer(telegram, 3)
    say(telegram, "/forget_me confirm", MEMBER)
    refused_confirm = await next_answer(telegram, 4)
    say(telegram, "/forget_me confirm", OTHER_ADMIN)
    new_ask = await next_answer(telegram, 5)
    assert "for all its members" in asked_text
    assert "permissions.forgetMe" in refused_confirm
    assert "/forget_me confirm within" in new_ask
    assert (workspace / "memory" / f"telegram:{GROUP}").is_dir()
    say(telegram, "/forget_me confirm", ADMIN)
    erased = await next_answer(telegram, 6)
    assert erased.startswith("Erased.")
    assert not (workspace / "memory" / f"telegram:{GROUP}").exists()


async def test_global_memory_export_and_erase_are_for_the_operator_only(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot(
        allowed="11,12", telegram_operators="13", runtime={"memory": {"scope": "global"}}
    )
    telegram.set_member_status(GROUP, ADMIN, "creator")
    telegram.send_text("My bank PIN hint is cormorant.", chat_id=MEMBER)
    await telegram.wait_for_messages_async(MEMBER, 1)

    say(telegram, "/export", ADMIN)
    export_refused = await next_answer(telegram, 0)
    say(telegram, "/forget_me", ADMIN)
    forget_refused = await next_answer(telegram, 1)
    assert telegram.documents(GROUP) == []
    for answer in (export_refused, forget_refused):
        assert "All chats share one memory here" in answer and "operator" in answer
    assert (workspace / "memory" / "global").is_dir()

    # Not even the operator's export goes to a group: it holds every chat's memory.
    say(telegram, "/export", OPERATOR)
    assert "in a private chat" in await next_answer(telegram, 2)
    telegram.send_text("/export", chat_id=OPERATOR)
    [document] = await telegram.wait_for_documents_async(OPERATOR, 1, timeout=15)
    with zipfile.ZipFile(io.BytesIO(document["data"])) as archive:
        assert any(b"cormorant" in archive.read(name) for name in archive.namelist())


async def test_status_names_the_model_server_to_the_operator_only(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(allowed="11", telegram_operators="13")
    port = str(openai_server.port)
    say(telegram, "/status", MEMBER)
    member_status = await next_answer(telegram, 0)
    say(telegram, "/status", OPERATOR)
    operator_status = await next_answer(telegram, 1)
    assert port not in member_status and "127.0.0.1" not in member_status
    assert member_status.startswith("Model: ")
    assert f"127.0.0.1:{port}" in operator_status


async def test_a_refused_command_speaks_the_members_language(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    # A Russian member of a group read "/compact" refused in English, amid Russian answers.
    await start_bot(allowed="11", telegram_operators="13")
    telegram.send_text(
        "/compact", chat_id=GROUP, user_id=MEMBER, chat_type="group", language_code="ru"
    )
    compact_refused = await next_answer(telegram, 0)
    telegram.send_text(
        "/reminders cancel 1", chat_id=GROUP, user_id=MEMBER, chat_type="group", language_code="de"
    )
    cancel_refused = await next_answer(telegram, 1)
    assert compact_refused.startswith("В этой группе /compact могут использовать только")
    assert "(permissions.compact)" in compact_refused
    assert cancel_refused.startswith("In dieser Gruppe dürfen nur")
    assert "(permissions.schedule)" in cancel_refused


def items_holding(app: App, text: str) -> list[str]:
    store = app.memory.scopes.store(f"telegram:{GROUP}")
    return [item.content for item in store.items.values() if text in item.content]


async def test_a_members_tools_add_but_cannot_erase_or_rewrite_the_groups_memory(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    bot = await start_bot(allowed="11,12", telegram_operators="13")
    telegram.set_member_status(GROUP, ADMIN, "administrator")
    folder = workspace / "files" / f"telegram:{GROUP}"
    notes = workspace / "memory" / f"telegram:{GROUP}" / "MEMORY.md"
    openai_server.script(
        tool_call("memory", {"operation": "add", "content": "The fridge code is 4471"}),
        tool_call("memory", {"operation": "write_file", "content": "Fridge code: 4471"}),
        tool_call("files", {"operation": "write", "path": "codes.txt", "content": "4471"}),
        reply("Saved."),
    )
    say(telegram, "@mnemo_test_bot keep the fridge code 4471 everywhere", ADMIN)
    assert await next_answer(telegram, 0) == "Saved."
    admin_request = openai_server.requests[-1]

    openai_server.script(
        tool_call("memory", {"operation": "forget", "query": "fridge code"}),
        tool_call("memory", {"operation": "write_file", "content": "nothing to see"}),
        tool_call("files", {"operation": "write", "path": "codes.txt", "content": "0000"}),
        tool_call("files", {"operation": "write", "path": "mine.txt", "content": "my list"}),
        tool_call("memory", {"operation": "add", "content": "Milk goes on the top shelf"}),
        reply("Done."),
    )
    say(telegram, "@mnemo_test_bot forget the fridge code", MEMBER)
    await next_answer(telegram, 1)
    results = [m["content"] for m in tool_messages(openai_server.requests[-1])][-5:]

    # Erasing and rewriting were refused, each with a reason the model can pass on ...
    for refused in results[:3]:
        assert refused.startswith("error: refused, nothing changed"), refused
        assert "permissions.editMemory" in refused
    assert items_holding(bot.app, "4471")
    assert notes.read_text() == "Fridge code: 4471\n" or "4471" in notes.read_text()
    assert (folder / "codes.txt").read_text() == "4471"
    # ... adding was not: a new file and a new fact are everyone's.
    assert (folder / "mine.txt").read_text() == "my list"
    assert items_holding(bot.app, "top shelf")
    # The model was told beforehand what each speaker may do.
    member_note = user_texts(openai_server.requests[-1])[-1]
    assert "Test may add to this chat's memory and files, but may not erase" in member_note
    assert "may not" not in user_texts(admin_request)[-1]

    # The group's administrator may.
    openai_server.script(
        tool_call("files", {"operation": "write", "path": "codes.txt", "content": "9000"}),
        tool_call("memory", {"operation": "forget", "query": "fridge code"}),
        reply("Changed."),
    )
    say(telegram, "@mnemo_test_bot the fridge code changed, forget the old one", ADMIN)
    await next_answer(telegram, 2)
    results = [m["content"] for m in tool_messages(openai_server.requests[-1])][-2:]
    assert not any(result.startswith("error") for result in results), results
    assert (folder / "codes.txt").read_text() == "9000"
    assert not items_holding(bot.app, "4471")


async def test_an_anonymous_admin_is_the_groups_admin_and_a_channel_is_not(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    # An anonymous admin has no user id of their own: the group's id lets them in.
    await start_bot(allowed=f"11,{GROUP}")
    say(telegram, "@mnemo_test_bot our launch code word is marmalade", MEMBER)
    await telegram.wait_for_messages_async(GROUP, 1)

    telegram.send_as_chat("/export", chat_id=GROUP, signature="Boss")
    [document] = await telegram.wait_for_documents_async(GROUP, 1, timeout=15)
    with zipfile.ZipFile(io.BytesIO(document["data"])) as archive:
        assert any(b"marmalade" in archive.read(name) for name in archive.namelist())
    # Telegram cannot say who they are: it was asked about the member only.
    assert {c["params"]["user_id"] for c in telegram.calls("getChatMember")} == {MEMBER}

    # Writing as a channel: not an administrator of the group, and let in only by name.
    channel = -1009
    telegram.send_as_chat("/export", chat_id=GROUP, channel_id=channel)
    refused = await next_answer(telegram, 1)
    assert f"adds {channel} to TELEGRAM_ALLOWED_USERS" in refused, refused


async def test_a_channel_let_in_is_served_as_a_member(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(allowed="*")
    telegram.send_as_chat("@mnemo_test_bot hello from the channel", chat_id=GROUP, channel_id=-1009)
    assert (await next_answer(telegram, 0)).startswith("echo: ")
    assert "Test Channel: hello from the channel" in user_texts(openai_server.requests[-1])[-1]
    telegram.send_as_chat("/export", chat_id=GROUP, channel_id=-1009)
    assert "permissions.export" in await next_answer(telegram, 1)
    assert telegram.documents(GROUP) == []


async def test_a_groups_export_holds_its_memory_only_and_names_no_path(
    start_bot: StartBot, telegram: TelegramServer, workspace: Path
) -> None:
    bot = await start_bot(
        allowed="11,12", telegram_operators="13", tuning=Tuning(background_quiet_seconds=0)
    )
    telegram.set_member_status(GROUP, ADMIN, "administrator")
    say(telegram, "@mnemo_test_bot our launch code word is marmalade", MEMBER)
    await telegram.wait_for_messages_async(GROUP, 1)
    # A maintenance run leaves its lock and its record beside the memory.
    assert bot.app.maintenance is not None
    await bot.app.maintenance.maintain(f"telegram:{GROUP}")
    scope = workspace / "memory" / f"telegram:{GROUP}"
    internal = {p.name for p in scope.rglob(".*")}
    assert {".maintenance.lock", ".maintenance_last.json"} <= internal

    say(telegram, "/export", ADMIN)
    [document] = await telegram.wait_for_documents_async(GROUP, 1, timeout=15)
    with zipfile.ZipFile(io.BytesIO(document["data"])) as archive:
        names = archive.namelist()
    assert any(name.endswith(".md") for name in names)
    assert not [n for n in names if Path(n).name.startswith(".") or n.endswith(".lock")], names
    caption = document["caption"]
    assert caption.startswith("Your memory of this chat: memory-")
    assert str(workspace) not in caption and "workspace" not in caption


async def test_a_member_stops_the_replies_to_their_own_messages_and_an_admin_anyones(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(allowed=f"{MEMBER},{ADMIN},{WRITER}", telegram_operators=str(OPERATOR))
    telegram.set_member_status(GROUP, ADMIN, "administrator")
    story_written = threading.Event()
    openai_server.script(gated(story_written, reply("The keeper lit the lamp every night.")))
    asked = telegram.send_text(
        "@mnemo_test_bot tell me a lighthouse story",
        chat_id=GROUP,
        user_id=WRITER,
        chat_type="group",
    )
    await openai_server.wait_for_requests_async(1)
    # The member's own message, queued behind the story, is theirs to drop; the writer's
    # queued one is not.
    say(telegram, "@mnemo_test_bot and one about a storm", MEMBER)
    say(telegram, "@mnemo_test_bot and one about gulls", WRITER)
    say(telegram, "/stop", MEMBER)
    refused = await next_answer(telegram, 0)
    assert refused == (
        "Dropped 1 queued message. In this group only this group's administrators and the "
        "bot's operator may stop a reply to another member's message; everyone may stop the "
        "replies to their own (permissions.stopOthers)."
    )
    telegram.send_text(
        "/stop", chat_id=GROUP, user_id=MEMBER, chat_type="group", language_code="ru"
    )
    refused_in_russian = await next_answer(telegram, 1)
    assert refused_in_russian.startswith("В этой группе останавливать ответ на сообщение")
    assert refused_in_russian.endswith("(permissions.stopOthers).")

    openai_server.script(reply("The gulls kept the keeper company."))
    story_written.set()
    sent = await telegram.wait_for_messages_async(GROUP, 4, timeout=15)
    # The story went on untouched and whole, to its writer; then the writer's next turn.
    assert sent[2]["plain_text"] == "The keeper lit the lamp every night."
    assert sent[2]["reply_to_message_id"] == asked["message"]["message_id"]
    assert sent[3]["plain_text"] == "The gulls kept the keeper company."
    newest = user_texts(openai_server.requests[1])[-1]
    assert "gulls" in newest and "storm" not in newest

    # A member stops the reply to their own message.
    openai_server.script(hang())
    say(telegram, "@mnemo_test_bot a story about a lighthouse cat", MEMBER)
    await openai_server.wait_for_requests_async(3)
    say(telegram, "/stop", MEMBER)
    assert await next_answer(telegram, 4) == "Stopped the reply in progress."

    # An administrator stops anyone's, and the writer is told under their message.
    openai_server.script(hang())
    asked = telegram.send_text(
        "@mnemo_test_bot a story about a lighthouse dog",
        chat_id=GROUP,
        user_id=WRITER,
        chat_type="group",
    )
    await openai_server.wait_for_requests_async(4)
    say(telegram, "/stop", ADMIN)
    sent = await telegram.wait_for_messages_async(GROUP, 7, timeout=15)
    by_reply = {m["reply_to_message_id"]: m["plain_text"] for m in sent[5:]}
    assert by_reply[asked["message"]["message_id"]] == "⏹ Stopped."
    assert "Stopped the reply in progress." in by_reply.values()


async def test_an_admins_stop_reaches_the_turn_that_started_while_telegram_was_asked(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """What waited when /stop came is stopped even if its turn began while Telegram was
    asked whether the sender administers the group; a message sent after /stop is not."""
    await start_bot(allowed=f"{MEMBER},{ADMIN},{WRITER}")
    telegram.set_member_status(GROUP, ADMIN, "administrator")
    # Both members have talked before: Telegram was asked about them then.
    openai_server.script(reply("Hello."), reply("Hello."))
    say(telegram, "@mnemo_test_bot hello", MEMBER)
    say(telegram, "@mnemo_test_bot hello", WRITER)
    await telegram.wait_for_messages_async(GROUP, 2, timeout=15)
    asking = threading.Event()
    telegram.hold("getChatMember", asking)
    story_written, storm_written = threading.Event(), threading.Event()
    openai_server.script(
        gated(story_written, reply("The keeper lit the lamp every night.")),
        gated(storm_written, reply("The storm broke at dawn.")),
        reply("Gulls nest on the cliffs."),
    )
    say(telegram, "@mnemo_test_bot tell me a lighthouse story", WRITER)
    await openai_server.wait_for_requests_async(3)
    storm = telegram.send_text(
        "@mnemo_test_bot and one about a storm", chat_id=GROUP, user_id=MEMBER, chat_type="group"
    )
    say(telegram, "/stop", ADMIN)
    await telegram.wait_for_call_async("getChatMember")
    # The story ends and the member's waiting message gets its turn meanwhile.
    story_written.set()
    await openai_server.wait_for_requests_async(4)
    gulls = telegram.send_text(
        "@mnemo_test_bot and one about gulls", chat_id=GROUP, user_id=MEMBER, chat_type="group"
    )
    asking.set()
    try:
        sent = await telegram.wait_for_messages_async(GROUP, 6, timeout=15)
    finally:
        storm_written.set()
    by_reply = {m["reply_to_message_id"]: m["plain_text"] for m in sent}
    assert by_reply[storm["message"]["message_id"]] == "⏹ Stopped."
    assert "Stopped the reply in progress." in by_reply.values()
    assert "The storm broke at dawn." not in by_reply.values()
    assert by_reply[gulls["message"]["message_id"]] == "Gulls nest on the cliffs."


async def test_with_stop_others_for_members_any_member_stops_any_reply(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(
        allowed=f"{MEMBER},{WRITER}", runtime={"permissions": {"stopOthers": "members"}}
    )
    openai_server.script(hang())
    say(telegram, "@mnemo_test_bot tell me a lighthouse story", WRITER)
    await openai_server.wait_for_requests_async(1)
    say(telegram, "/stop", MEMBER)
    sent = await telegram.wait_for_messages_async(GROUP, 2, timeout=15)
    assert "Stopped the reply in progress." in [m["plain_text"] for m in sent]
    # Nobody needed to ask Telegram whether the member administers the group.
    assert [c for c in telegram.calls("getChatMember") if c["params"]["user_id"] == MEMBER] == []


async def test_a_scheduled_tasks_turn_is_its_setters_to_stop(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # The task's turn acts with the rights of the member who set it: theirs to stop, and
    # another member's /stop of it needs permissions.stopOthers.
    bot = await start_bot(allowed=f"{MEMBER},{WRITER}")
    assert bot.app.schedule is not None
    planned = threading.Event()
    openai_server.script(gated(planned, reply("This week: the lighthouse repaint.")))
    chat = TaskChat("telegram", str(GROUP), user_id=str(WRITER), user_name="Wren", is_group=True)
    await bot.app.schedule.store.add(
        due_now("t-plan", chat, "summarize the week's plans", kind="task"), max_per_chat=25
    )
    bot.app.schedule.scheduler.wake()
    await openai_server.wait_for_requests_async(1)
    say(telegram, "/stop", MEMBER)
    refused = await next_answer(telegram, 0)
    assert refused.endswith("(permissions.stopOthers).")
    say(telegram, "/stop", WRITER)
    assert await next_answer(telegram, 1) == "Stopped the reply in progress."
    planned.set()
    openai_server.script(reply("Noted."))
    say(telegram, "@mnemo_test_bot thanks", WRITER)
    sent = await telegram.wait_for_messages_async(GROUP, 3, timeout=15)
    assert [m["plain_text"] for m in sent][2:] == ["Noted."]


async def test_what_a_member_has_the_assistant_note_about_another_says_whose_words_it_was(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """Found live: Boris had the memory tool add "Anna lives in Rome now", and Anna's next
    request showed it as the assistant's own knowledge beside her "I live in Paris"."""
    await start_bot(allowed="11,15")
    telegram.send_text(
        "@mnemo_test_bot I live in Paris",
        chat_id=GROUP,
        user_id=MEMBER,
        chat_type="group",
        first_name="Anna",
    )
    await telegram.wait_for_messages_async(GROUP, 1)
    openai_server.script(
        tool_call("memory", {"operation": "add", "content": "Anna lives in Rome now"}),
        reply("Noted."),
    )
    telegram.send_text(
        "@mnemo_test_bot note that Anna lives in Rome now",
        chat_id=GROUP,
        user_id=WRITER,
        chat_type="group",
        first_name="Boris",
    )
    await telegram.wait_for_messages_async(GROUP, 2)
    # A new conversation: what was said is memory now, not the session's messages.
    telegram.send_text("/new", chat_id=GROUP, user_id=MEMBER, chat_type="group", first_name="Anna")
    await telegram.wait_for_messages_async(GROUP, 3)
    telegram.send_text(
        "@mnemo_test_bot where do I live? Paris or Rome?",
        chat_id=GROUP,
        user_id=MEMBER,
        chat_type="group",
        first_name="Anna",
    )
    await telegram.wait_for_messages_async(GROUP, 4)
    memory = openai_server.requests[-1]["messages"][-1]["content"]
    (line,) = [line for line in memory.splitlines() if line.endswith("): Anna lives in Rome now")]
    assert "noted by the assistant from what boris said" in line, memory
