"""In a group the model knows who wrote each message; in a private chat nothing changes."""

from __future__ import annotations

from mnemobot.bot.schedule.tasks import TaskChat
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, hang, system_text, user_texts
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.schedule_harness import due_now
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

GROUP = -3001
ALEX, BORIS = 21, 22


async def test_each_members_message_reaches_the_model_under_their_name(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(allowed=f"{ALEX},{BORIS}")
    for count, (user, name, text) in enumerate(
        [(ALEX, "Alex", "my locker code is QX-7731"), (BORIS, "Boris", "what is my locker code?")],
        start=1,
    ):
        telegram.send_text(
            f"@mnemo_test_bot {text}",
            chat_id=GROUP,
            user_id=user,
            first_name=name,
            chat_type="supergroup",
        )
        await telegram.wait_for_messages_async(GROUP, count)

    asked = openai_server.requests[-1]
    # Each as written, under the writer's name (the newest with what its writer may do).
    assert [text.partition("\n\n[")[0] for text in user_texts(asked)] == [
        "Alex: my locker code is QX-7731",
        "Boris: what is my locker code?",
    ]
    assert "each user message starts with the name of who wrote it" in system_text(asked)

    # The same person in a private chat: their words as they wrote them.
    telegram.send_text("hello", chat_id=ALEX, first_name="Alex")
    await telegram.wait_for_messages_async(ALEX, 1)
    private = openai_server.requests[-1]
    assert user_texts(private) == ["hello"]
    assert "group chat" not in system_text(private)


async def test_a_scheduled_task_in_a_group_is_nobodys_message(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Alex set it, but nobody wrote the words the task's turn answers: they must not reach
    # the model as Alex speaking.
    bot = await start_bot(allowed=f"{ALEX},{BORIS}")
    assert bot.app.schedule is not None
    chat = TaskChat("telegram", str(GROUP), user_id=str(ALEX), user_name="Alex", is_group=True)
    task = due_now("t-plan", chat, "summarize the week's plans", kind="task")
    await bot.app.schedule.store.add(task, max_per_chat=25)
    bot.app.schedule.scheduler.wake()
    await telegram.wait_for_messages_async(GROUP, 1, timeout=15)
    [said] = user_texts(openai_server.requests[-1])
    assert said.startswith("[Scheduled task #1, set by Alex")


async def test_a_reply_another_member_stops_still_answers_its_writer(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Group replies are not streamed: when Boris stops the reply Alex is waiting for, Alex
    # is told under their message, in their language; Boris hears what /stop did. (Any
    # member may stop another's reply here: tests/test_group_permissions.py has who may.)
    await start_bot(allowed=f"{ALEX},{BORIS}", runtime={"permissions": {"stopOthers": "members"}})
    openai_server.script(hang())
    asked = telegram.send_text(
        "@mnemo_test_bot write a long story about a lighthouse keeper",
        chat_id=GROUP,
        user_id=ALEX,
        first_name="Alex",
        chat_type="supergroup",
        language_code="de",
    )
    await openai_server.wait_for_requests_async(1)
    telegram.send_text(
        "/stop", chat_id=GROUP, user_id=BORIS, first_name="Boris", chat_type="supergroup"
    )
    sent = await telegram.wait_for_messages_async(GROUP, 2)

    by_reply = {message["reply_to_message_id"]: message["plain_text"] for message in sent}
    assert by_reply[asked["message"]["message_id"]] == "⏹ Angehalten."
    assert "Stopped the reply in progress." in by_reply.values()
