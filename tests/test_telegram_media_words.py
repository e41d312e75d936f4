"""What the bot itself says about a voice note or a file comes in the sender's language
(Telegram's `language_code`), and says /retry only where reading the file again can help:
the real PTB Application against the fake Bot API and the fake model server, the files
read in the bot's real reader processes."""

from __future__ import annotations

import importlib.util
import io

import pytest
from pypdf import PdfWriter

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, error
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.voice_notes import silent_recording as recording
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4343
# Bytes a voice note may hold that no decoder reads (a damaged upload).
CORRUPT_NOTE = b"OggS\x00" + bytes(range(256)) * 4


def password_protected_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("larch-2291", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def test_a_russian_senders_locked_pdf_and_unheard_note_are_told_in_russian(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    await start_bot()
    telegram.send_document(
        chat_id=USER,
        file_name="lease.pdf",
        mime_type="application/pdf",
        content=password_protected_pdf(),
        language_code="ru",
    )
    # The line, and no turn: without a caption there is nothing to answer.
    [locked] = await telegram.wait_for_messages_async(USER, 1)
    assert locked["plain_text"].startswith("Я сохранил lease.pdf как received/")
    assert "но не смог его прочитать: PDF защищён паролем." in locked["plain_text"]

    # The speech server is down for a moment: trying the kept note again can help.
    openai_server.transcriber = lambda upload: error(503, "whisper is loading")
    telegram.send_voice(chat_id=USER, duration=3, content=recording(3), language_code="ru")
    failed = (await telegram.wait_for_messages_async(USER, 2))[1]
    line = failed["plain_text"]
    assert line.startswith("Не удалось распознать речь: голосовое сообщение (сервер распознав")
    assert "HTTP 503: whisper is loading" in line
    assert "/retry попробует ещё раз" in line
    assert "could not" not in line and "I " not in line


async def test_a_file_too_large_to_fetch_is_told_in_german_with_its_sizes(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    await start_bot()
    voice = telegram.store_file("voice", "oga", b"OggS")
    voice.update(duration=900, file_size=25_000_000, mime_type="audio/ogg")
    telegram.send_content({"voice": voice, "caption": "kurz"}, chat_id=USER)
    # send_content has no language: the sender's app is English, so is the line.
    english = (await telegram.wait_for_messages_async(USER, 2))[0]
    assert english["plain_text"].startswith("Your voice note is 25.0 MB;")
    assert english["plain_text"].endswith("so I could not fetch it. I read its caption.")

    telegram.send_voice(
        chat_id=USER,
        duration=900,
        content=b"OggS",
        caption="kurz",
        language_code="de-AT",
        extra={"voice": {**voice, "file_size": 25_000_000}},
    )
    german = (await telegram.wait_for_messages_async(USER, 4))[2]
    assert "deine Sprachnachricht hat 25.0 MB" in german["plain_text"]
    assert "Den Begleittext habe ich gelesen." in german["plain_text"]


@pytest.mark.skipif(
    importlib.util.find_spec("faster_whisper") is None,
    reason="the voice extra: pip install 'mnemobot[voice]'",
)
async def test_a_note_no_decoder_reads_is_not_offered_retry_and_needs_no_model(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # No model anywhere: the note is found undecodable before one would be loaded.
    runtime = {
        "media": {"transcription": {"backend": "local", "localModelPath": "/nonexistent/model"}}
    }
    await start_bot(runtime=runtime)
    telegram.send_voice(chat_id=USER, duration=5, content=CORRUPT_NOTE, language_code="ru")
    [russian] = await telegram.wait_for_messages_async(USER, 1, timeout=60)
    # One plain line: the decoder's error (PyAV's InvalidDataError) is the log's, not the
    # sender's.
    assert russian["plain_text"] == (
        "Не удалось прочитать запись (голосовое сообщение): возможно, файл повреждён. "
        "Отправьте его ещё раз или напишите текстом."
    )

    telegram.send_voice(chat_id=USER, duration=5, content=CORRUPT_NOTE)
    english = (await telegram.wait_for_messages_async(USER, 2, timeout=60))[1]
    assert english["plain_text"] == (
        "I could not decode your voice note; the recording may be damaged. Please send it "
        "again or type it."
    )
    assert openai_server.requests == []
