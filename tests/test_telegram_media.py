"""Voice notes, photos, documents, forwards and the other kinds of Telegram message, end to
end: the real PTB Application against the fake Bot API (getFile, downloads), the fake model
server (/v1/audio/transcriptions, image parts) over HTTP, files in a temp workspace."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

import pytest

from mnemobot.bot.channels.telegram.config import TelegramTiming
from mnemobot.bot.media.document_reader import ReaderLimits
from mnemobot.bot.media.transcription import SpeechBudget
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import NOTHING_TO_RETRY
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Transcription,
    context_text,
    error,
    reply,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer, forward_origin_user
from mnemobot_tooling.voice_notes import silent_recording as recording
from tests.telegram_harness import StartBot, session_messages, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4242
SCOPE = f"telegram:{USER}"
GROUP = -100777


def memory_section(request: dict[str, object]) -> str:
    text = context_text(request)
    return text[text.find("# Memory") :] if "# Memory" in text else ""


def chat_requests(server: FakeOpenAIServer) -> list[dict[str, object]]:
    """The conversation's requests (not the one-line image descriptions)."""
    return [r for r in server.requests if "Describe this image" not in json.dumps(r)[:2000]]


async def one_by_one(telegram: TelegramServer, send: object) -> None:
    """Send, then wait until the bot has fetched it: each message comes in an update batch
    of its own, as a forwarded batch or an album often does (a webhook always)."""
    polls = len(telegram.calls("getUpdates"))
    send()  # type: ignore[operator]
    await telegram.wait_for_call_async("getUpdates", count=polls + 1)


def daily_notes(workspace: Path) -> str:
    folder = workspace / "memory" / SCOPE
    return "\n".join(p.read_text() for p in sorted(folder.rglob("*.md")))


async def test_a_voice_note_becomes_the_turn_and_is_remembered(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    said = recording(4, "Please remember that my locker code is 4711.")
    telegram.send_voice(chat_id=USER, duration=4, content=said)
    [answer] = await telegram.wait_for_messages_async(USER, 1)

    [upload] = openai_server.transcriptions
    assert upload.audio == said
    assert upload.fields["model"] == "whisper-1"
    # The chat model's own server, with its own key.
    assert upload.headers["authorization"] == "Bearer test-key"
    heard = "[voice 0:04] Please remember that my locker code is 4711."
    assert user_texts(openai_server.last_request()) == [heard]
    assert answer["plain_text"] == f"echo: {heard}"
    assert session_messages(workspace, SCOPE)[0]["content"] == heard
    assert "locker code is 4711" in daily_notes(workspace)
    # Memory keeps what was said, not how the bot heard it: the items are tagged instead.
    # (The echo model's answer repeats the label: those are its words.)
    [turn] = [line for line in daily_notes(workspace).splitlines() if "4711" in line]
    assert "User: Please remember that my locker code is 4711. | Assistant: " in turn
    items = [i for i in memory_items(workspace) if "4711" in str(i["content"])]
    users = [str(i["content"]).split("\nAssistant:")[0] for i in items]
    assert users and all(u.startswith("Test: Please remember that") for u in users), users
    assert all("voice" in i["tags"] for i in items)
    kept = list((workspace / "files" / SCOPE / "received").glob("voice-*.ogg"))
    assert [p.read_bytes() for p in kept] == [said]

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("what is my locker code?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 3)
    assert "4711" in memory_section(openai_server.last_request())


async def test_a_fact_said_in_a_voice_note_is_remembered_without_its_label(
    start_bot: StartBot, telegram: TelegramServer, workspace: Path
) -> None:
    await start_bot()
    said = recording(5, "Please remember that my favourite colour is green.")
    telegram.send_voice(chat_id=USER, duration=5, content=said)
    await telegram.wait_for_messages_async(USER, 1)
    facts = [i for i in memory_items(workspace) if i["layer"] == "SEMANTIC"]
    assert [i["content"] for i in facts] == [
        "Test: Please remember that my favourite colour is green."
    ]


async def test_a_voice_notes_length_is_its_own_never_only_the_claimed_one(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    # Telegram passes on what the sender's app claims: here 2**31 - 1 seconds.
    claimed = 2**31 - 1
    telegram.send_voice(chat_id=USER, duration=claimed, content=recording(3, "call me back"))
    await telegram.wait_for_messages_async(USER, 1)
    # Not audio at all: its length cannot be known, so none is shown.
    telegram.send_voice(chat_id=USER, duration=claimed, content=b"OggS\x00SPEECH:hi again")
    await telegram.wait_for_messages_async(USER, 2)

    said = [user_texts(r)[-1] for r in openai_server.requests]
    assert said == ["[voice 0:03] call me back", "[voice] hi again"]


async def test_audio_files_and_video_notes_are_transcribed_too(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    audio = telegram.store_file("music", "mp3", recording(5, "call the bank at nine", "mp3"))
    audio.update(duration=5, mime_type="audio/mpeg", file_name="memo.mp3")
    telegram.send_content({"audio": audio}, chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    circle = telegram.store_file("video_notes", "mp4", recording(7, "hello from the park", "mp4"))
    circle.update(duration=7, length=240)
    note_id = telegram.send_content({"video_note": circle}, chat_id=USER)["message"]["message_id"]
    await telegram.wait_for_messages_async(USER, 2)

    said = [user_texts(r)[-1] for r in openai_server.requests]
    assert said == [
        "[audio file 0:05] call the bank at nine",
        "[video note 0:07] hello from the park",
    ]
    names = ["1-memo.mp3", f"video-note-{note_id}.mp4"]
    assert [u.file_name for u in openai_server.transcriptions] == names
    assert sorted(p.name for p in (workspace / "files" / SCOPE / "received").iterdir()) == names


async def test_a_voice_note_over_20_mb_gets_one_line_and_no_download(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    voice = telegram.store_file("voice", "oga", b"OggS")
    voice.update(duration=900, file_size=25_000_000, mime_type="audio/ogg")
    telegram.send_content({"voice": voice}, chat_id=USER)
    [answer] = await telegram.wait_for_messages_async(USER, 1)

    assert "25.0 MB" in answer["plain_text"]
    assert "up to 20.0 MB" in answer["plain_text"]
    assert telegram.calls("getFile") == []
    assert openai_server.requests == [] and openai_server.transcriptions == []


async def test_a_failed_transcription_keeps_the_file_and_sending_again_works(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    openai_server.transcriber = lambda upload: error(503, "whisper is loading")
    said = recording(3, "buy oat milk")
    telegram.send_voice(chat_id=USER, duration=3, content=said)
    [failed] = await telegram.wait_for_messages_async(USER, 1)

    assert "could not transcribe" in failed["plain_text"]
    assert "whisper is loading" in failed["plain_text"]
    assert "Traceback" not in failed["plain_text"]
    [kept] = (workspace / "files" / SCOPE / "received").glob("voice-*.ogg")
    assert kept.read_bytes() == said
    assert kept.name in failed["plain_text"]
    # No turn: the model was never asked about a message nobody could read.
    assert openai_server.requests == []

    openai_server.transcriber = lambda upload: "buy oat milk"
    telegram.send_voice(chat_id=USER, duration=3, content=said)
    sent = await telegram.wait_for_messages_async(USER, 2)
    assert sent[1]["plain_text"] == "echo: [voice 0:03] buy oat milk"
    # Sent again and heard: /retry would only answer the same words twice.
    telegram.send_text("/retry", chat_id=USER)
    after = await telegram.wait_for_messages_async(USER, 3)
    assert after[2]["plain_text"] == NOTHING_TO_RETRY


async def test_a_server_without_speech_to_text_is_one_warning_line_for_the_operator(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # llama.cpp's server: no /v1/audio/transcriptions, a 404 with its own body.
    openai_server.transcriber = lambda upload: error(404, "File Not Found")
    await start_bot()
    with caplog.at_level(logging.INFO):
        telegram.send_voice(chat_id=USER, duration=3, content=recording(3, "buy oat milk"))
        [failed] = await telegram.wait_for_messages_async(USER, 1)
    assert "HTTP 404" in failed["plain_text"] and "/retry" in failed["plain_text"]
    about_it = [r for r in caplog.records if "speech to text" in r.getMessage()]
    [line] = about_it
    assert line.levelno == logging.WARNING
    message = line.getMessage()
    assert f"{openai_server.base_url} answered HTTP 404 for model whisper-1" in message
    assert "media.transcription.backend to local" in message
    assert "test-key" not in message


async def test_retry_reads_the_kept_note_again_once_transcription_works(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    telegram.send_text("/retry", chat_id=USER)
    [nothing] = await telegram.wait_for_messages_async(USER, 1)
    assert nothing["plain_text"] == NOTHING_TO_RETRY
    # Nothing was ever sent: the answer does not say that files were read (found live).
    assert "was read" not in nothing["plain_text"]

    openai_server.transcriber = lambda upload: error(503, "whisper is loading")
    said = recording(3, "buy oat milk")
    telegram.send_voice(chat_id=USER, duration=3, content=said)
    failed = await telegram.wait_for_messages_async(USER, 2)
    assert "/retry" in failed[1]["plain_text"]
    openai_server.transcriber = lambda upload: "buy oat milk"
    telegram.send_text("/retry", chat_id=USER)
    sent = await telegram.wait_for_messages_async(USER, 3)

    assert sent[2]["plain_text"] == "echo: [voice 0:03] buy oat milk"
    # Read from the kept file, not fetched again.
    assert len(telegram.calls("getFile")) == 1
    assert openai_server.transcriptions[-1].audio == said
    assert session_messages(workspace, SCOPE)[0]["content"] == "[voice 0:03] buy oat milk"
    assert "buy oat milk" in daily_notes(workspace)
    telegram.send_text("/retry", chat_id=USER)
    again = await telegram.wait_for_messages_async(USER, 4)
    assert again[3]["plain_text"] == NOTHING_TO_RETRY


async def test_retry_after_a_restart_reads_the_note_that_failed_before_it(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    bot = await start_bot()
    openai_server.transcriber = lambda upload: error(503, "whisper is loading")
    said = recording(4, "the plumber comes on friday")
    telegram.send_voice(chat_id=USER, duration=4, content=said)
    [failed] = await telegram.wait_for_messages_async(USER, 1)
    assert "/retry" in failed["plain_text"]

    # The bot is updated and restarted before the user gets round to /retry.
    await bot.shutdown()
    await start_bot()
    openai_server.transcriber = lambda upload: "the plumber comes on friday"
    telegram.send_text("/retry", chat_id=USER)
    sent = await telegram.wait_for_messages_async(USER, 2)

    assert sent[1]["plain_text"] == "echo: [voice 0:04] the plumber comes on friday"
    assert len(telegram.calls("getFile")) == 1  # read from the kept file
    assert openai_server.transcriptions[-1].audio == said
    telegram.send_text("/retry", chat_id=USER)
    again = await telegram.wait_for_messages_async(USER, 3)
    assert again[2]["plain_text"] == NOTHING_TO_RETRY


async def test_in_a_group_retry_reads_only_the_senders_own_note(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(allowed="41,42")
    openai_server.transcriber = lambda upload: error(503, "whisper is loading")
    telegram.send_voice(
        chat_id=GROUP,
        user_id=41,
        chat_type="supergroup",
        reply_to_bot=True,
        duration=3,
        content=recording(3, "a"),
    )
    await telegram.wait_for_messages_async(GROUP, 1)
    openai_server.transcriber = lambda upload: "my own words"
    telegram.send_text("/retry", chat_id=GROUP, user_id=42, chat_type="supergroup")
    sent = await telegram.wait_for_messages_async(GROUP, 2)
    assert sent[1]["plain_text"] == NOTHING_TO_RETRY
    telegram.send_text("/retry", chat_id=GROUP, user_id=41, chat_type="supergroup")
    sent = await telegram.wait_for_messages_async(GROUP, 3)
    assert "my own words" in sent[2]["plain_text"]


async def test_after_forget_me_there_is_nothing_to_retry(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    openai_server.transcriber = lambda upload: error(503, "whisper is loading")
    telegram.send_voice(chat_id=USER, duration=3, content=recording(3, "my PIN is 0000"))
    await telegram.wait_for_messages_async(USER, 1)
    telegram.send_text("/forget_me", chat_id=USER)
    telegram.send_text("/forget_me confirm", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 3)
    openai_server.transcriber = lambda upload: "my PIN is 0000"
    telegram.send_text("/retry", chat_id=USER)
    sent = await telegram.wait_for_messages_async(USER, 4)

    # The erased note is not fetched from Telegram again.
    assert sent[3]["plain_text"] == NOTHING_TO_RETRY
    assert len(telegram.calls("getFile")) == 1


async def test_a_file_telegram_will_not_hand_over_gets_one_line_and_the_caption_is_answered(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    telegram.fail_next("getFile", status=400, description="Bad Request: file is too big")
    telegram.send_voice(chat_id=USER, caption="listen to this", content=b"OggS")
    sent = await telegram.wait_for_messages_async(USER, 2)

    texts = [m["plain_text"] for m in sent]
    assert any("could not fetch your voice note" in t for t in texts)
    assert telegram.token not in "\n".join(texts)
    assert user_texts(openai_server.last_request()) == [
        "[voice note, could not be fetched] listen to this"
    ]


async def test_a_long_note_heard_as_a_few_words_says_what_was_heard(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    telegram.send_voice(chat_id=USER, duration=60, content=recording(60, "thank you"))
    [answer] = await telegram.wait_for_messages_async(USER, 1)
    assert 'I only heard: "thank you"' in answer["plain_text"]


# Speech to text may take 1 s, and 1 s more per recorded second: scaled down from the
# bot's own 120 s + 2 s per second, which a 4-minute note needs on a small machine.
SHORT_SPEECH_BUDGET = Tuning(speech=SpeechBudget(seconds=1.0, per_recorded_second=1.0))


async def test_a_long_note_gets_time_to_be_heard_in_proportion_to_its_length(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(tuning=SHORT_SPEECH_BUDGET)

    def slow_hearing(upload: Transcription) -> str:
        time.sleep(3)  # the speech server's own pace, past the 1 s base
        return "the whole plan"

    openai_server.transcriber = slow_hearing
    telegram.send_voice(chat_id=USER, duration=8, content=recording(8, "the whole plan"))
    [heard] = await telegram.wait_for_messages_async(USER, 1, timeout=30)
    assert heard["plain_text"] == "echo: [voice 0:08] the whole plan"

    # A short note claiming to be long is given the time its recording needs, not its claim.
    telegram.send_voice(chat_id=USER, duration=600, content=recording(1))
    sent = await telegram.wait_for_messages_async(USER, 2, timeout=30)
    assert "could not transcribe" in sent[1]["plain_text"]
    # 1 s and 1 s per recorded second, rounded up: 2 or 3 s, never the claimed 601.
    limit = re.search(r"took longer than (\d+) s", sent[1]["plain_text"])
    assert limit is not None and int(limit.group(1)) in (2, 3)


async def test_a_separate_speech_server_gets_its_own_key_and_never_the_chat_key(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    with FakeOpenAIServer() as speech:
        speech.required_api_key = "speech-key"
        runtime = {
            "media": {
                "transcription": {
                    "baseUrl": speech.base_url,
                    "model": "whisper-large-v3",
                    "language": "de",
                }
            }
        }
        await start_bot(runtime=runtime, bot_transcription_api_key="speech-key")
        telegram.send_voice(chat_id=USER, content=recording(2, "Guten Morgen"))
        [answer] = await telegram.wait_for_messages_async(USER, 1)
        [upload] = speech.transcriptions
    assert upload.fields == {"model": "whisper-large-v3", "language": "de"}
    assert answer["plain_text"] == "echo: [voice 0:02] Guten Morgen"
    assert openai_server.transcriptions == []


async def test_a_photo_goes_to_the_model_as_an_image_and_memory_keeps_its_description(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    def answer(request: dict[str, object]) -> object:
        from mnemobot_tooling.fakes.openai_server import reply

        if "Describe this image" in json.dumps(request):
            return reply("A whiteboard listing the sprint goals: ship the billing page.")
        return reply("Nice board.")

    openai_server.responder = answer  # type: ignore[assignment]
    await start_bot()
    picture = b"\xff\xd8\xff\xe0fake-jpeg"
    telegram.send_photo(chat_id=USER, caption="our plan", content=picture)
    [sent] = await telegram.wait_for_messages_async(USER, 1)
    assert sent["plain_text"] == "Nice board."

    [turn] = chat_requests(openai_server)
    parts = turn["messages"][-1]["content"]  # type: ignore[index]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert "whiteboard listing the sprint goals" in parts[0]["text"]
    assert parts[0]["text"].endswith("our plan")
    [kept] = (workspace / "files" / SCOPE / "received").glob("photo-*.jpg")
    assert kept.read_bytes() == picture
    # The session keeps text only: the image is not sent again with later turns.
    assert isinstance(session_messages(workspace, SCOPE)[0]["content"], str)

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("what were the sprint goals on the whiteboard?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 3)
    last = openai_server.last_request()
    assert "billing page" in memory_section(last)
    assert all(isinstance(m["content"], str) for m in last["messages"])


async def test_a_model_without_vision_gets_the_caption_and_a_note_and_is_learned(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.accepts_images = False
    await start_bot()
    telegram.send_photo(chat_id=USER, caption="is this mould?")
    [first] = await telegram.wait_for_messages_async(USER, 1)
    assert first["plain_text"].startswith("echo: ")
    assert "is this mould?" in first["plain_text"]
    assert "cannot see images" in first["plain_text"]
    learned = json.loads((workspace / "preferences" / "model-vision.json").read_text())
    assert [entry["images"] for entry in learned.values()] == [False]

    refused = sum(1 for r in openai_server.recorded_requests if r.rejected)
    telegram.send_photo(chat_id=USER, caption="and this one?")
    await telegram.wait_for_messages_async(USER, 2)
    # Learned: the second photo is not offered as an image again.
    assert sum(1 for r in openai_server.recorded_requests if r.rejected) == refused


async def test_a_file_that_is_no_image_turns_images_off_for_no_one(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # Found live: random bytes sent as scan.jpg got the server's 400 for an image it
    # cannot decode, which was learned as "this model takes no images", for every chat.
    openai_server.decodes_images = True
    await start_bot()
    telegram.send_document(
        chat_id=USER,
        file_name="scan.jpg",
        mime_type="image/jpeg",
        content=bytes(range(256)) * 8,
        caption="what does this scan say?",
    )
    [first] = await telegram.wait_for_messages_async(USER, 1)
    assert "what does this scan say?" in first["plain_text"]
    assert "could not be looked at" in first["plain_text"]
    assert "cannot see images" not in first["plain_text"]
    learned = workspace / "preferences" / "model-vision.json"
    assert not learned.exists() or False not in [
        entry.get("images") for entry in json.loads(learned.read_text()).values()
    ]

    other = USER + 1
    telegram.send_photo(chat_id=other, caption="is this mould?", content=b"\xff\xd8\xff\xe0jpeg")
    [answer] = await telegram.wait_for_messages_async(other, 1)
    assert "cannot see images" not in answer["plain_text"]
    parts = openai_server.last_request()["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]


async def test_a_server_error_on_the_sound_image_learns_nothing(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # A 503 (a model loading) says nothing of images: learned as "no images", one bad file
    # and one blip would have turned them off for good.
    from mnemobot_tooling.fakes.openai_server import error, reply

    def answer(request: dict[str, object]) -> object:
        if "What colour is this image" in json.dumps(request):
            return error(503, "model is loading")
        return reply("Answered.")

    openai_server.decodes_images = True
    openai_server.responder = answer  # type: ignore[assignment]
    await start_bot()
    telegram.send_document(
        chat_id=USER, file_name="scan.jpg", mime_type="image/jpeg", content=bytes(256) * 8
    )
    await telegram.wait_for_messages_async(USER, 1)
    learned = workspace / "preferences" / "model-vision.json"
    assert not learned.exists() or False not in [
        entry.get("images") for entry in json.loads(learned.read_text()).values()
    ]
    other = USER + 1
    telegram.send_photo(chat_id=other, caption="is this mould?", content=b"\xff\xd8\xff\xe0jpeg")
    await telegram.wait_for_messages_async(other, 1)
    parts = openai_server.last_request()["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]


async def test_a_text_document_is_kept_read_and_found_later_by_its_words(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    openai_server.script(reply("Kept it."))  # not an echo of the long head: one message
    # Past the 4,000 characters the model gets with the message.
    filler = "\n\n".join(f"Clause {n}. The tenant keeps the flat tidy." for n in range(1, 120))
    lease = f"{filler}\n\nClause 120. The notice period is three months, in writing.\n"
    telegram.send_document(
        chat_id=USER, file_name="lease.txt", content=lease.encode(), caption="my lease"
    )
    await telegram.wait_for_messages_async(USER, 1)

    [text] = user_texts(openai_server.last_request())
    assert text.startswith("my lease\n[document received/")
    assert "read the rest in received/" in text
    assert "notice period" not in text  # beyond the head: the files tool reads it
    folder = workspace / "files" / SCOPE / "received"
    [saved] = folder.glob("*-lease.txt")
    assert saved.read_text() == lease
    assert (folder / f"{saved.name}.txt").read_text() == lease

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("what notice period does my lease say?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 3)
    assert "three months" in memory_section(openai_server.last_request())


async def test_a_pdf_is_read_within_its_page_limit_and_remembered(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    from mnemobot_tooling.sample_pdf import pdf_with_pages

    await start_bot(tuning=Tuning(reader=ReaderLimits(max_pages=3)))
    pages = [
        "Residential lease\nBetween the landlord and the tenant.",
        "Section 4. Termination\nThe notice period is three months, given in writing.",
        "Section 5. Rent\nThe rent is due on the first day of each month.",
        "Section 9. Pets\nA parrot may be kept on the balcony.",
    ]
    telegram.send_document(
        chat_id=USER,
        file_name="lease.pdf",
        mime_type="application/pdf",
        content=pdf_with_pages(pages),
    )
    sent = await telegram.wait_for_messages_async(USER, 2)

    said = "\n".join(m["plain_text"] for m in sent)
    assert "lease.pdf is long: I read its first 3 of 4 pages;" in said
    [text] = user_texts(openai_server.last_request())
    assert text.startswith("[document received/")
    assert "4 pages" in text and "Residential lease" in text
    [kept] = (workspace / "files" / SCOPE / "received").glob("*-lease.pdf.txt")
    assert "notice period is three months" in kept.read_text()
    assert "parrot" not in kept.read_text()

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("what notice period does my lease say?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 4)
    assert "three months" in memory_section(openai_server.last_request())


async def test_a_one_page_pdf_is_one_page(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    from mnemobot_tooling.sample_pdf import pdf_with_pages

    await start_bot()
    telegram.send_document(
        chat_id=USER,
        file_name="note.pdf",
        mime_type="application/pdf",
        content=pdf_with_pages(["Pick up the dry cleaning on Friday."]),
    )
    await telegram.wait_for_messages_async(USER, 1)
    [text] = user_texts(openai_server.last_request())
    assert "note.pdf, 1 page, " in text and "1 pages" not in text


async def test_an_unreadable_file_gets_one_line_saying_what_was_kept(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    telegram.send_document(
        chat_id=USER, file_name="scan.pdf", mime_type="application/pdf", content=b"%PDF-1.4 junk"
    )
    [answer] = await telegram.wait_for_messages_async(USER, 1)
    assert "could not read it" in answer["plain_text"]
    assert "scan.pdf" in answer["plain_text"]
    assert list((workspace / "files" / SCOPE / "received").glob("*-scan.pdf"))


async def test_thirty_forwarded_notes_are_one_turn_and_one_reply(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(timing=TelegramTiming(burst_seconds=1.0))
    day = int(time.time()) - 3 * 86_400
    notes = [f"Note {n}: item {n}" for n in range(30)]
    notes[17] = "Note 17: the wifi password at the cabin is larch-2291"
    for note in notes:
        await one_by_one(
            telegram,
            lambda note=note: telegram.send_forward(note, chat_id=USER, author="Alice", date=day),
        )
    [answer] = await telegram.wait_for_messages_async(USER, 1)

    assert len(telegram.sent_messages(USER)) == 1
    assert len(openai_server.requests) == 1
    [text] = user_texts(openai_server.last_request())
    assert text.count("[forwarded from Alice, ") == 30
    assert "Note 0: item 0" in text and "Note 29: item 29" in text
    assert answer["plain_text"].startswith("echo: [forwarded from Alice")

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("what is the wifi password at the cabin?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 3)
    assert "larch-2291" in memory_section(openai_server.last_request())


async def test_other_kinds_get_a_short_rendering_never_only_text(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    telegram.send_sticker(chat_id=USER, emoji="😀")
    [first] = await telegram.wait_for_messages_async(USER, 1)
    assert first["plain_text"] == "echo: [sticker 😀]"
    kinds = [
        {"location": {"latitude": 52.52, "longitude": 13.405}},
        {
            "venue": {
                "location": {"latitude": 52.5163, "longitude": 13.3777},
                "title": "Brandenburg Gate",
                "address": "Pariser Platz",
            }
        },
        {"contact": {"phone_number": "+49 30 1234", "first_name": "Bob"}},
        {
            "poll": {
                "id": "1",
                "question": "Lunch?",
                "options": [
                    {"persistent_id": "p1", "text": "Pizza", "voter_count": 0},
                    {"persistent_id": "p2", "text": "Sushi", "voter_count": 0},
                ],
                "total_voter_count": 0,
                "is_closed": False,
                "is_anonymous": True,
                "type": "regular",
                "allows_multiple_answers": False,
                "allows_revoting": False,
                "members_only": False,
            }
        },
        {"dice": {"emoji": "🎲", "value": 4}},
    ]
    for content in kinds:
        telegram.send_content(content, chat_id=USER)
        await telegram.wait_for_messages_async(USER, len(telegram.sent_messages(USER)) + 1)
    texts = [m["plain_text"] for m in telegram.sent_messages(USER)]
    assert not any("only read text" in t for t in texts)
    said = "\n".join(texts)
    assert "[location 52.52000, 13.40500]" in said
    assert "[venue Brandenburg Gate, Pariser Platz (52.51630, 13.37770)]" in said
    assert "[contact Bob, +49 30 1234]" in said
    assert '[poll "Lunch?": Pizza / Sushi]' in said
    assert "[dice 🎲 4]" in said


def memory_items(workspace: Path) -> list[dict[str, object]]:
    items: dict[str, dict[str, object]] = {}
    for path in sorted((workspace / "memory" / SCOPE).rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                item = json.loads(line)
                if "id" in item:
                    items[str(item["id"])] = item
    return list(items.values())


async def test_a_forward_is_its_authors_words_and_never_moves_the_user(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    telegram.send_text("I live in Berlin.", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    written = int(time.time()) - 5 * 86_400
    telegram.send_forward("I live in Paris.", chat_id=USER, author="Alice", date=written)
    await telegram.wait_for_messages_async(USER, 2)

    [text] = user_texts(openai_server.last_request())[-1:]
    assert text.startswith("[forwarded from Alice, ")
    facts = [i for i in memory_items(workspace) if i.get("layer") == "SEMANTIC"]
    berlin = [i for i in facts if "Berlin" in str(i["content"])]
    paris = [i for i in facts if "Paris" in str(i["content"])]
    # The user's home stays Berlin, current; Paris is Alice's, dated when she wrote it.
    assert berlin and all("validTo" not in i and "supersededBy" not in i for i in berlin)
    assert "speaker:test" in berlin[0]["tags"]
    assert paris and all("speaker:alice" in i["tags"] for i in paris)
    assert all(str(i["createdAt"]) < str(berlin[0]["createdAt"]) for i in paris)
    # The daily note says whose words they were, not an empty "User:".
    assert "User: [forwarded from Alice] I live in Paris. | Assistant:" in daily_notes(workspace)

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("where do I live?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 4)
    memory = memory_section(openai_server.last_request())
    assert "I live in Berlin" in memory


def current_facts(workspace: Path, word: str) -> list[dict[str, object]]:
    return [
        i
        for i in memory_items(workspace)
        if i.get("layer") == "SEMANTIC"
        and word in str(i["content"])
        and "validTo" not in i
        and "supersededBy" not in i
    ]


@pytest.mark.slow
async def test_a_forwarded_voice_note_or_photo_is_its_authors_words_never_the_users(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    def answer(request: dict[str, object]) -> object:
        from mnemobot_tooling.fakes.openai_server import echo_responder, reply

        if "Describe this image" in json.dumps(request):
            return reply("A postcard saying: I moved to Lisbon last spring.")
        return echo_responder(request)

    openai_server.responder = answer  # type: ignore[assignment]
    await start_bot()
    telegram.send_text("I live in Berlin.", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    written = int(time.time()) - 5 * 86_400
    alice = {"forward_origin": forward_origin_user("Alice", written)}
    telegram.send_voice(
        chat_id=USER, duration=3, content=recording(3, "I live in Paris."), extra=alice
    )
    # A forward waits out the burst window, the first file a reader's start.
    await telegram.wait_for_messages_async(USER, 2, timeout=15)
    bob = {"forward_origin": forward_origin_user("Bob", written, 778)}
    telegram.send_voice(
        chat_id=USER,
        duration=4,
        content=recording(4, "My locker code is 9182."),
        caption="gym",
        extra=bob,
    )
    await telegram.wait_for_messages_async(USER, 3, timeout=15)
    telegram.send_photo(chat_id=USER, content=b"\xff\xd8postcard", extra=alice)
    await telegram.wait_for_messages_async(USER, 4, timeout=15)

    said = [user_texts(r)[-1] for r in chat_requests(openai_server)]
    assert said[1].startswith("[forwarded from Alice, ") and said[1].endswith(
        "] [voice 0:03] I live in Paris."
    )
    # Nothing the user said moved: Berlin is their home, current, and theirs alone.
    [berlin] = current_facts(workspace, "Berlin")
    assert "speaker:test" in berlin["tags"]
    items = memory_items(workspace)
    for word, speaker in (("Paris", "alice"), ("9182", "bob"), ("Lisbon", "alice")):
        facts = [i for i in items if i.get("layer") == "SEMANTIC" and word in str(i["content"])]
        theirs = [i for i in items if str(i["content"]).startswith(f"{speaker.title()}: ")]
        # Said by the author, at the date they said it; nothing of it as the user's words.
        assert any(word in str(i["content"]) for i in theirs), word
        assert all(f"speaker:{speaker}" in i["tags"] for i in facts), word
        assert all(str(i["createdAt"]) < str(berlin["createdAt"]) for i in theirs), word
        assert not any(
            word in str(i["content"]) for i in items if str(i["content"]).startswith("Test: ")
        ), word
    # The caption of Bob's note is kept with what he said, not instead of it.
    assert any(str(i["content"]) == "Bob: My locker code is 9182.\ngym" for i in items)

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("where do I live?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 6)
    assert "I live in Berlin" in memory_section(openai_server.last_request())


async def test_an_album_is_one_turn_with_every_photo(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot(runtime={"media": {"describeImages": False}})
    for n in range(3):
        await one_by_one(
            telegram,
            lambda n=n: telegram.send_photo(
                chat_id=USER,
                caption="our holiday" if n == 0 else None,
                content=f"jpeg-{n}".encode(),
                extra={"media_group_id": "album-1"},
            ),
        )
    await telegram.wait_for_messages_async(USER, 1)

    assert len(telegram.sent_messages(USER)) == 1
    [turn] = openai_server.requests
    parts = turn["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url", "image_url"]
    assert parts[0]["text"].count("[photo received/photo-") == 3


async def test_an_edit_before_its_turn_replaces_it_and_after_updates_memory(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    from threading import Event

    from mnemobot_tooling.fakes.openai_server import gated, reply

    await start_bot()
    # Answered, then corrected: memory must not keep the old code as current.
    first = telegram.send_text("My locker code is 1234.", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    telegram.edit_message(first, "My locker code is 5678.")
    # Held in its lane behind a slow turn, then edited before it ran.
    release = Event()
    openai_server.script(gated(release, reply("ok")))
    telegram.send_text("a slow question", chat_id=USER)
    await openai_server.wait_for_requests_async(2)
    waiting = telegram.send_text("Remind me to call Sam.", chat_id=USER)
    await one_by_one(telegram, lambda: telegram.edit_message(waiting, "Remind me to call Kim."))
    release.set()
    await telegram.wait_for_messages_async(USER, 3)

    said = [user_texts(r)[-1] for r in openai_server.requests]
    assert "Remind me to call Kim." in said and "Remind me to call Sam." not in said
    # The edit of an answered message is no new turn and gets no reply.
    assert len(telegram.sent_messages(USER)) == 3
    contents = [m["content"] for m in session_messages(workspace, SCOPE)]
    assert "My locker code is 5678." in contents
    assert "My locker code is 1234." not in contents

    current = [
        str(i["content"])
        for i in memory_items(workspace)
        if "validTo" not in i and "supersededBy" not in i
    ]
    assert any("5678" in c for c in current)
    assert not any("1234" in c for c in current)
    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("what is my locker code?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 5)
    assert "5678" in memory_section(openai_server.last_request())


def current_contents(workspace: Path) -> list[str]:
    return [
        str(i["content"])
        for i in memory_items(workspace)
        if "validTo" not in i and "supersededBy" not in i
    ]


async def test_editing_a_caption_keeps_what_was_heard_beside_it(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    note = telegram.send_voice(
        chat_id=USER, duration=4, content=recording(4, "My locker code is 4711."), caption="note"
    )
    await telegram.wait_for_messages_async(USER, 1)
    telegram.edit_message(note, "note to self")
    # Waits in the lane behind the edit.
    telegram.send_text("what is my locker code?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 2)

    first = session_messages(workspace, SCOPE)[0]
    assert first["content"] == "[voice 0:04] My locker code is 4711.\nnote to self"
    assert len(telegram.sent_messages(USER)) == 2  # the edit got no reply
    current = current_contents(workspace)
    assert any("4711" in c and c.endswith("note to self") for c in current)
    # The old wording is earlier, not current.
    assert not any(c.endswith("\nnote") for c in current)
    assert "4711" in memory_section(openai_server.last_request())


async def test_editing_one_message_of_an_album_keeps_the_others(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    import base64

    from mnemobot_tooling.fakes.openai_server import echo_responder, reply

    beach = base64.b64encode(b"jpeg-beach").decode()

    def answer(request: dict[str, object]) -> object:
        said = json.dumps(request)
        if "Describe this image" in said:
            return reply("A beach at sunset." if beach in said else "A mountain hut in snow.")
        return echo_responder(request)

    openai_server.responder = answer  # type: ignore[assignment]
    await start_bot()
    sent = []
    for n, content in enumerate((b"jpeg-beach", b"jpeg-hut")):
        await one_by_one(
            telegram,
            lambda n=n, content=content: sent.append(
                telegram.send_photo(
                    chat_id=USER,
                    caption="our holiday" if n == 0 else None,
                    content=content,
                    extra={"media_group_id": "album-2"},
                )
            ),
        )
    await telegram.wait_for_messages_async(USER, 1)
    telegram.edit_message(sent[0], "our holiday in Crete")
    telegram.send_text("where were we on holiday?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 2)

    [album, *_] = session_messages(workspace, SCOPE)
    assert album["content"].count("[photo received/photo-") == 2
    assert "A beach at sunset.] our holiday in Crete" in album["content"]
    assert "A mountain hut in snow." in album["content"]
    current = current_contents(workspace)
    assert any("Crete" in c and "mountain hut" in c for c in current)
    assert not any("our holiday" in c and "Crete" not in c for c in current)
    assert "Crete" in memory_section(openai_server.last_request())


async def test_in_a_shared_files_folder_each_chat_keeps_its_own_received_files(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # Found live: Telegram numbers messages per chat, so two chats' message 1 was one
    # received file in the shared folder: one user's report replaced another's.
    await start_bot(runtime={"files": {"shared": True}})
    other = USER + 1
    for chat, words in ((USER, b"oleg's quarterly numbers"), (other, b"ivan's holiday plan")):
        telegram.send_document(chat_id=chat, file_name="report.txt", content=words)
        await telegram.wait_for_messages_async(chat, 1)
    received = workspace / "files" / "shared" / "received"
    assert (received / f"telegram_{USER}" / "1-report.txt").read_bytes() == (
        b"oleg's quarterly numbers"
    )
    assert (received / f"telegram_{other}" / "1-report.txt").read_bytes() == (
        b"ivan's holiday plan"
    )
    # Each chat's own is what its model read.
    assert "ivan's holiday plan" in str(openai_server.last_request()["messages"][-1])
    # Erasing a chat takes its received files, and leaves the folder everyone shares.
    telegram.send_text("/forget_me", chat_id=USER)
    [*_, asked] = await telegram.wait_for_messages_async(USER, 2)
    # The warning does not promise to erase files the chat does not own alone.
    assert asked["plain_text"].endswith(
        "The files folder every chat shares stays as it is; the files sent to this chat go."
    )
    telegram.send_text("/forget_me confirm", chat_id=USER)
    [*_, erased] = await telegram.wait_for_messages_async(USER, 3)
    assert erased["plain_text"].endswith("The files folder every chat shares was left as it is.")
    assert not (received / f"telegram_{USER}").exists()
    assert (received / f"telegram_{other}" / "1-report.txt").exists()
