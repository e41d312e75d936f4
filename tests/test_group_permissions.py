"""In a group, what one member may do to everyone's memory is decided by permissions."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

GROUP = -2001
MEMBER, ADMIN, OTHER_ADMIN, OPERATOR = 11, 12, 14, 13


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
