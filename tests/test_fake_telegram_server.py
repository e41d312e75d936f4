"""The fake Bot API must behave like Telegram for the real python-telegram-bot client."""

from __future__ import annotations

import asyncio
import datetime as dtm
import json
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from telegram import Bot, BotCommand, Update
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    InvalidToken,
    NetworkError,
    RetryAfter,
)
from telegram.ext import (
    ApplicationBuilder,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from mnemobot_tooling.fakes.telegram_server import (
    CONFLICT_OTHER_POLLER,
    METHOD_NOT_FOUND,
    HtmlParseError,
    TelegramServer,
    parse_telegram_html,
)

CHAT = 4242


@pytest.fixture
def server() -> Iterator[TelegramServer]:
    with TelegramServer() as fake:
        yield fake


@pytest.fixture
async def bot(server: TelegramServer) -> AsyncIterator[Bot]:
    async with Bot(server.token, base_url=server.base_url) as client:
        yield client


def raw_call(
    url: str, body: bytes | None = None, content_type: str | None = None
) -> tuple[int, dict[str, Any]]:
    """A request outside PTB, for what PTB never sends (JSON bodies, unknown methods)."""
    request = urllib.request.Request(url, data=body, method="POST" if body else "GET")
    if content_type:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def test_get_me_reports_the_configured_bot(bot: Bot) -> None:
    me = await bot.get_me()

    assert me.id == 123456
    assert me.username == "mnemo_test_bot"
    assert me.is_bot


async def test_wrong_token_is_rejected_as_invalid_token(server: TelegramServer) -> None:
    stranger = Bot("999:WRONG", base_url=server.base_url)

    try:
        with pytest.raises(InvalidToken):
            await stranger.initialize()  # calls getMe, as a token check does
    finally:
        await stranger.shutdown()
    assert server.calls("getMe")[-1]["status"] == 401


async def test_html_message_round_trip(server: TelegramServer, bot: Bot) -> None:
    sent = await bot.send_message(
        CHAT, "<b>Hi</b> 😀 <i>you</i> &lt;3 &amp; <a href='https://x.org'>link</a>", "HTML"
    )

    assert sent.text == "Hi 😀 you <3 & link"
    # Offsets count UTF-16 units: the emoji takes two.
    assert [(e.type, e.offset, e.length) for e in sent.entities] == [
        ("bold", 0, 2),
        ("italic", 6, 3),
        ("text_link", 15, 4),
    ]
    [record] = server.sent_messages(CHAT)
    assert record["parse_mode"] == "HTML"
    assert record["text"].startswith("<b>Hi</b>")
    assert record["plain_text"] == sent.text
    assert record["message_id"] == sent.message_id


async def test_text_limit_is_4096_utf16_units(bot: Bot) -> None:
    await bot.send_message(CHAT, "a" * 4096)
    await bot.send_message(CHAT, "😀" * 2048)

    for too_long in ("a" * 4097, "😀" * 2049):
        with pytest.raises(BadRequest, match="Message is too long"):
            await bot.send_message(CHAT, too_long)


async def test_html_limit_counts_visible_text_not_markup(server: TelegramServer, bot: Bot) -> None:
    # 4103 characters of HTML, 4096 of text: accepted, as Telegram counts the text.
    sent = await bot.send_message(CHAT, "<b>" + "a" * 4096 + "</b>", "HTML")
    assert sent.text == "a" * 4096
    assert [(e.type, e.offset, e.length) for e in sent.entities] == [("bold", 0, 4096)]
    assert server.sent_messages(CHAT)[-1]["plain_text"] == "a" * 4096

    with pytest.raises(BadRequest, match="Message is too long"):
        await bot.send_message(CHAT, "<b>" + "a" * 4097 + "</b>", "HTML")
    assert len(server.sent_messages(CHAT)) == 1


async def test_blank_text_is_rejected(server: TelegramServer, bot: Bot) -> None:
    with pytest.raises(BadRequest, match="Message text is empty"):
        await bot.send_message(CHAT, "   ")
    assert server.sent_messages() == []


@pytest.mark.parametrize(
    ("html", "reason"),
    [
        ("<b>bold", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b><i>x</b></i>", 'expected "</i>", found "</b>"'),
        ("x</b>", "Unexpected end tag"),
        ("<foo>x</foo>", 'Unsupported start tag "foo"'),
        ("2 < 3", 'Unsupported start tag ""'),
        ("fish & chips", 'Unescaped "&"'),
        ('<span class="x">s</span>', 'must have class "tg-spoiler"'),
    ],
)
async def test_invalid_html_is_cant_parse_entities(
    server: TelegramServer, bot: Bot, html: str, reason: str
) -> None:
    with pytest.raises(BadRequest, match="Can't parse entities") as caught:
        await bot.send_message(CHAT, html, parse_mode="HTML")

    # PTB lower-cases the description after its first letter.
    assert reason.lower() in str(caught.value)
    assert server.sent_messages() == []


async def test_same_text_is_fine_without_parse_mode(bot: Bot) -> None:
    sent = await bot.send_message(CHAT, "2 < 3 & <b>")

    assert sent.text == "2 < 3 & <b>"


async def test_reject_html_when_predicate(server: TelegramServer, bot: Bot) -> None:
    server.reject_html_when(lambda text: "poison" in text)

    with pytest.raises(BadRequest, match="can't find end tag corresponding to start tag"):
        await bot.send_message(CHAT, "<b>poison</b>", parse_mode="HTML")
    await bot.send_message(CHAT, "poison")  # plain text is not parsed, so not rejected
    server.reject_html_when(None)
    await bot.send_message(CHAT, "<b>poison</b>", parse_mode="HTML")

    assert [r["parse_mode"] for r in server.sent_messages(CHAT)] == [None, "HTML"]


def test_html_parser_supports_telegram_tags() -> None:
    parsed = parse_telegram_html(
        '<pre><code class="language-python">x = 1</code></pre>'
        "<tg-spoiler>s</tg-spoiler><blockquote expandable>q</blockquote>"
        '<a href="tg://user?id=7">u</a>&#128512;&#x41;&quot;'
    )

    assert parsed.text == 'x = 1squ😀A"'
    assert parsed.entities == [
        {"type": "pre", "offset": 0, "length": 5, "language": "python"},
        {"type": "spoiler", "offset": 5, "length": 1},
        {"type": "expandable_blockquote", "offset": 6, "length": 1},
        {
            "type": "text_mention",
            "offset": 7,
            "length": 1,
            "user": {"id": 7, "is_bot": False, "first_name": ""},
        },
    ]
    with pytest.raises(HtmlParseError, match="byte offset 3"):
        parse_telegram_html("é <x>")


async def test_rate_limit_surfaces_as_retry_after_once(
    server: TelegramServer, bot: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # PTB 23's behaviour, without the warning
    server.fail_next("sendMessage", status=429, retry_after=3)

    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(CHAT, "first")
    await bot.send_message(CHAT, "second")

    assert caught.value.retry_after == dtm.timedelta(seconds=3)
    assert [r["text"] for r in server.sent_messages(CHAT)] == ["second"]
    assert server.calls("sendMessage")[0]["status"] == 429


async def test_long_poll_returns_update_pushed_during_the_poll(
    server: TelegramServer, bot: Bot
) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=10))
    await server.wait_for_call_async("getUpdates")
    assert not poll.done()

    server.send_text("hello there", chat_id=CHAT)
    updates = await poll

    assert [u.message.text for u in updates] == ["hello there"]
    assert updates[0].message.from_user.id == CHAT


async def test_offset_confirms_and_drops_older_updates(server: TelegramServer, bot: Bot) -> None:
    first, second, third = (server.send_text(t, chat_id=CHAT) for t in ("one", "two", "three"))

    assert [u.update_id for u in await bot.get_updates()] == [
        first["update_id"],
        second["update_id"],
        third["update_id"],
    ]
    # Not confirmed yet: asking again gives the same updates.
    assert len(await bot.get_updates(limit=2)) == 2
    remaining = await bot.get_updates(offset=second["update_id"])
    assert [u.message.text for u in remaining] == ["two", "three"]
    assert await bot.get_updates(offset=third["update_id"] + 1) == ()
    assert server.pending_updates() == []

    server.send_text("four", chat_id=CHAT)
    assert [u.message.text for u in await bot.get_updates()] == ["four"]


async def test_message_ids_increase_per_chat(server: TelegramServer, bot: Bot) -> None:
    incoming = server.send_text("hi", chat_id=1)
    reply = await bot.send_message(1, "hello")
    other_chat = server.send_text("hi", chat_id=2)
    later = server.send_text("again", chat_id=1)

    assert incoming["message"]["message_id"] == 1
    assert reply.message_id == 2
    assert other_chat["message"]["message_id"] == 1
    assert later["message"]["message_id"] == 3


async def test_group_command_and_mention_entities(server: TelegramServer, bot: Bot) -> None:
    server.send_text(
        "/start@mnemo_test_bot hi @mnemo_test_bot", chat_id=-100777, user_id=5,
        chat_type="supergroup", username="alice",
    )  # fmt: skip

    [update] = await bot.get_updates()

    message = update.message
    assert message.chat.type == "supergroup"
    assert message.from_user.username == "alice"
    assert message.parse_entities(["bot_command"]).popitem()[1] == "/start@mnemo_test_bot"
    assert message.parse_entities(["mention"]).popitem()[1] == "@mnemo_test_bot"


async def test_reply_to_bot_and_forum_thread(server: TelegramServer, bot: Bot) -> None:
    asked = server.send_text("q", chat_id=-100900, user_id=5, chat_type="supergroup", thread_id=7)
    answer = await bot.send_message(
        -100900,
        "answer",
        message_thread_id=7,
        reply_to_message_id=asked["message"]["message_id"],
    )
    follow_up = server.send_text(
        "thanks", chat_id=-100900, user_id=5, chat_type="supergroup", thread_id=7,
        reply_to_bot=True,
    )  # fmt: skip

    assert answer.reply_to_message.text == "q"
    assert answer.message_thread_id == 7
    [record] = server.sent_messages(-100900)
    assert record["message_thread_id"] == 7
    assert record["reply_to_message_id"] == asked["message"]["message_id"]
    replied = follow_up["message"]["reply_to_message"]
    assert (replied["message_id"], replied["text"]) == (answer.message_id, "answer")
    with pytest.raises(BadRequest, match="Message to be replied not found"):
        await bot.send_message(-100900, "x", reply_to_message_id=999)


async def test_second_poller_terminates_the_first(server: TelegramServer, bot: Bot) -> None:
    first = asyncio.create_task(bot.get_updates(timeout=10))
    await server.wait_for_call_async("getUpdates")

    async with Bot(server.token, base_url=server.base_url) as other_instance:
        assert await other_instance.get_updates(timeout=0) == ()

    with pytest.raises(Conflict) as caught:
        await first
    assert str(caught.value) == CONFLICT_OTHER_POLLER
    assert server.calls("getUpdates")[0]["status"] == 409


async def test_webhook_blocks_polling_until_deleted(server: TelegramServer, bot: Bot) -> None:
    server.send_text("queued", chat_id=CHAT)
    await bot.set_webhook("http://127.0.0.1:9/hook", secret_token="s3cret")

    with pytest.raises(Conflict, match="webhook is active"):
        await bot.get_updates()
    info = await bot.get_webhook_info()
    assert (info.url, info.pending_update_count) == ("http://127.0.0.1:9/hook", 1)
    assert server.webhook is not None
    assert server.webhook["secret_token"] == "s3cret"

    await bot.delete_webhook(drop_pending_updates=True)
    assert await bot.get_updates() == ()
    assert (await bot.get_webhook_info()).url == ""


async def test_build_update_is_not_queued(server: TelegramServer, bot: Bot) -> None:
    built = server.build_update("via webhook", chat_id=CHAT)
    pushed = server.send_text("via polling", chat_id=CHAT)

    update = Update.de_json(built, bot)
    assert update.message.text == "via webhook"
    assert pushed["update_id"] > built["update_id"]
    assert [u.message.text for u in await bot.get_updates()] == ["via polling"]


async def test_push_update_assigns_ids(server: TelegramServer, bot: Bot) -> None:
    raw = {"message": {"message_id": 50, "date": 0, "chat": {"id": 1, "type": "private"}}}

    first = server.push_update(raw)
    second = server.push_update({"update_id": first + 10, **raw})
    third = server.push_update(raw)

    assert (second, third) == (first + 10, first + 11)
    assert [u.update_id for u in await bot.get_updates()] == [first, second, third]


async def test_media_updates_and_file_download(
    server: TelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    server.send_photo(chat_id=CHAT, caption="look /here", content=b"PHOTO")
    server.send_voice(chat_id=CHAT, content=b"VOICE", duration=4)
    server.send_sticker(chat_id=CHAT, emoji="🔥")
    server.send_document(chat_id=CHAT, file_name="a.md", mime_type="text/markdown", content=b"#")

    async with Bot(
        server.token, base_url=server.base_url, base_file_url=server.base_file_url
    ) as bot:
        photo, voice, sticker, document = (u.message for u in await bot.get_updates())
        largest = await bot.get_file(photo.photo[-1].file_id)
        downloaded = await largest.download_as_bytearray()

    assert photo.caption == "look /here"
    assert photo.parse_entities(["bot_command"]) == {}  # only caption_entities carry it
    assert photo.parse_caption_entities(["bot_command"]).popitem()[1] == "/here"
    assert bytes(downloaded) == b"PHOTO"
    assert (voice.voice.duration, voice.voice.mime_type) == (dtm.timedelta(seconds=4), "audio/ogg")
    assert sticker.sticker.emoji == "🔥"
    assert document.document.file_name == "a.md"


async def test_edit_and_delete_messages(server: TelegramServer, bot: Bot) -> None:
    sent = await bot.send_message(CHAT, "draft")

    edited = await bot.edit_message_text("<b>final</b>", CHAT, sent.message_id, parse_mode="HTML")
    with pytest.raises(BadRequest, match="Message is not modified"):
        await bot.edit_message_text("<b>final</b>", CHAT, sent.message_id, parse_mode="HTML")
    [record] = server.sent_messages(CHAT)
    assert (edited.text, record["text"], record["edit_count"]) == ("final", "<b>final</b>", 1)

    assert await bot.delete_message(CHAT, sent.message_id)
    with pytest.raises(BadRequest, match="Message to delete not found"):
        await bot.delete_message(CHAT, sent.message_id)
    assert server.sent_messages(CHAT)[0]["deleted"]


async def test_commands_and_chat_actions(server: TelegramServer, bot: Bot) -> None:
    await bot.set_my_commands([BotCommand("new", "Start over"), BotCommand("status", "State")])
    await bot.send_chat_action(CHAT, "typing")

    assert [c.command for c in await bot.get_my_commands()] == ["new", "status"]
    assert server.commands == [
        {"command": "new", "description": "Start over"},
        {"command": "status", "description": "State"},
    ]
    assert server.chat_actions(CHAT) == ["typing"]
    with pytest.raises(BadRequest, match="Bot_command_invalid"):
        await bot.set_my_commands([BotCommand("/New", "bad name")])
    await bot.delete_my_commands()
    assert server.commands == []
    assert await bot.close()
    assert await bot.log_out()


def test_unknown_method_is_a_404_bot_api_error(server: TelegramServer) -> None:
    status, body = raw_call(f"{server.base_url}{server.token}/sendPigeon")

    assert status == 404
    assert body == {"ok": False, "error_code": 404, "description": METHOD_NOT_FOUND}


def test_json_and_multipart_bodies_are_accepted(server: TelegramServer) -> None:
    url = f"{server.base_url}{server.token}/sendMessage"
    json_body = json.dumps({"chat_id": CHAT, "text": "123", "parse_mode": "HTML"}).encode()
    multipart_body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="chat_id"\r\n\r\n4242\r\n'
        b'--XyZ\r\nContent-Disposition: form-data; name="text"\r\n\r\ntrue\r\n--XyZ--\r\n'
    )

    assert raw_call(url, json_body, "application/json")[0] == 200
    assert raw_call(url, multipart_body, "multipart/form-data; boundary=XyZ")[0] == 200
    # Text fields stay text even when they look like JSON numbers or booleans.
    assert [r["text"] for r in server.sent_messages(CHAT)] == ["123", "true"]


async def test_unreachable_server_is_a_network_error(server: TelegramServer, bot: Bot) -> None:
    server.set_unreachable(True)
    with pytest.raises(NetworkError):
        await bot.send_message(CHAT, "lost")
    server.set_unreachable(True, status=502)
    with pytest.raises(NetworkError, match="Bad Gateway"):
        await bot.send_message(CHAT, "lost too")
    server.set_unreachable(False)

    await bot.send_message(CHAT, "back")

    assert [r["text"] for r in server.sent_messages()] == ["back"]
    assert [c["status"] for c in server.calls("sendMessage")] == [0, 502, 200]


def test_wait_for_messages_reports_what_arrived(server: TelegramServer) -> None:
    url = f"{server.base_url}{server.token}/sendMessage"
    raw_call(url, json.dumps({"chat_id": CHAT, "text": "only one"}).encode(), "application/json")

    with pytest.raises(AssertionError, match="got 1: \\['only one'\\]"):
        server.wait_for_messages(CHAT, 2, timeout=0.2)


def test_stop_ends_a_long_poll_in_flight() -> None:
    server = TelegramServer().start()
    outcome: list[object] = []

    def poll() -> None:
        try:
            outcome.append(raw_call(f"{server.base_url}{server.token}/getUpdates?timeout=60"))
        except Exception as exc:  # a closed connection is a fine way to end
            outcome.append(exc)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    server.wait_for_call("getUpdates")
    base_url = server.base_url
    server.stop()
    poller.join(timeout=10)

    assert not poller.is_alive()
    assert outcome
    # A restart serves on the same address, so a bot configured with base_url keeps working.
    with server.start():
        assert server.base_url == base_url
        assert raw_call(f"{base_url}{server.token}/getMe")[0] == 200


async def test_application_polls_and_replies(server: TelegramServer) -> None:
    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await update.message.reply_text(f"echo: {update.message.text}", do_quote=True)

    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await update.message.reply_text("<b>welcome</b>", parse_mode="HTML")

    app = ApplicationBuilder().token(server.token).base_url(server.base_url).build()
    app.add_handler(CommandHandler("start", start))
    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))

    async with app:
        await app.updater.start_polling(poll_interval=0, timeout=1)
        await app.start()
        said = server.send_text("hello bot", chat_id=CHAT)
        [echoed] = await server.wait_for_messages_async(CHAT, 1)
        server.send_text("/start@mnemo_test_bot", chat_id=-300, user_id=8, chat_type="group")
        [welcome] = await server.wait_for_messages_async(-300, 1)
        await app.updater.stop()
        await app.stop()

    assert echoed["text"] == "echo: hello bot"
    assert echoed["reply_to_message_id"] == said["message"]["message_id"]
    assert (welcome["plain_text"], welcome["parse_mode"]) == ("welcome", "HTML")
    assert welcome["message"]["chat"]["type"] == "group"
    # The updater's last call confirmed everything it handled.
    assert server.pending_updates() == []
    assert server.calls("getUpdates")[-1]["params"]["offset"] > said["update_id"]


async def test_chat_member_roles_and_group_upgrade(server: TelegramServer, bot: Bot) -> None:
    server.send_text("hi", chat_id=-300, user_id=5, chat_type="group")
    server.set_member_status(-300, 6, "administrator")
    assert (await bot.get_chat_member(-300, 5)).status == "member"
    assert (await bot.get_chat_member(-300, 6)).status == "administrator"
    assert (await bot.get_chat_member(-300, 7)).status == "left"

    server.upgrade_group(-300, -1000300, user_id=6)
    old, new = [u["message"] for u in server.pending_updates()[-2:]]
    assert old["chat"]["id"] == -300 and old["migrate_to_chat_id"] == -1000300
    assert new["chat"]["type"] == "supergroup" and new["migrate_from_chat_id"] == -300
    with pytest.raises(ChatMigrated) as moved:
        await bot.send_message(-300, "still there?")
    assert moved.value.new_chat_id == -1000300
    assert (await bot.get_chat_member(-1000300, 6)).status == "administrator"
    await bot.send_message(-1000300, "here")
