"""Speech to text for voice notes, audio files and video notes.

Two backends (`media.transcription.backend`):

- "api": any OpenAI-compatible `/v1/audio/transcriptions` endpoint (OpenAI, Groq, a local
  whisper server), through the openai SDK; by default the chat model's own server.
- "local": faster-whisper in this process (`pip install 'mnemobot[voice]'`), from a
  CTranslate2 Whisper model folder the operator names; nothing is downloaded. The model is
  loaded once and runs in a worker thread, one transcription at a time (it uses every core
  it is given; two at once would only take turns on them).
"""

from __future__ import annotations

import asyncio
import io
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai

from mnemobot.config.runtime import TranscriptionConfig
from mnemobot.config.settings import Settings

log = logging.getLogger(__name__)

# Local servers accept any key; the SDK refuses to start without one.
PLACEHOLDER_KEY = "not-needed"


class TranscriptionError(Exception):
    """One line for the user: why the audio could not be turned into text."""


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    # Seconds of audio the backend heard (None when it does not say).
    duration: float | None = None


class Transcriber:
    """Turns audio bytes into text with the backend the runtime config names."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: dict[tuple[str | None, str], openai.AsyncOpenAI] = {}
        self._local_models: dict[tuple[str, str, int], Any] = {}
        self._local_lock = threading.Lock()
        self._local_running = asyncio.Lock()

    async def transcribe(
        self, audio: bytes, file_name: str, config: TranscriptionConfig
    ) -> Transcript:
        if config.backend == "off":
            raise TranscriptionError("speech to text is off (media.transcription.backend)")
        try:
            async with asyncio.timeout(config.timeout_seconds):
                if config.backend == "local":
                    async with self._local_running:
                        return await asyncio.to_thread(self._local, audio, config)
                return await self._api(audio, file_name, config)
        except TimeoutError:
            raise TranscriptionError(
                f"speech to text took longer than {config.timeout_seconds:g} s"
            ) from None

    # -- api -------------------------------------------------------------------------------------

    def _client(self, config: TranscriptionConfig) -> openai.AsyncOpenAI:
        base_url = config.base_url or self.settings.openai_base_url
        key = self.settings.bot_transcription_api_key
        if key is None and config.base_url is None and self.settings.openai_api_key is not None:
            # The chat model's own server: its key. Never sent to another host.
            key = self.settings.openai_api_key
        secret = key.get_secret_value() if key is not None else PLACEHOLDER_KEY
        cache_key = (base_url, secret)
        client = self._clients.get(cache_key)
        if client is None:
            client = openai.AsyncOpenAI(api_key=secret, base_url=base_url, max_retries=1)
            self._clients[cache_key] = client
        return client

    async def _api(self, audio: bytes, file_name: str, config: TranscriptionConfig) -> Transcript:
        extra: dict[str, Any] = {}
        if config.language:
            extra["language"] = config.language
        try:
            result = await self._client(config).audio.transcriptions.create(
                file=(file_name, audio),
                model=config.model,
                timeout=config.timeout_seconds,
                **extra,
            )
        except openai.APIStatusError as exc:
            # The server's own message says what is wrong (a model name, a key); the key
            # itself is never part of it.
            detail = _status_detail(exc)
            raise TranscriptionError(
                f"the speech-to-text server answered HTTP {exc.status_code}: {detail}"
            ) from None
        except openai.APIError as exc:
            raise TranscriptionError(
                f"the speech-to-text server could not be reached ({type(exc).__name__})"
            ) from None
        text = getattr(result, "text", None)
        if not isinstance(text, str):
            raise TranscriptionError("the speech-to-text server answered without text")
        duration = getattr(result, "duration", None)
        return Transcript(text.strip(), float(duration) if duration is not None else None)

    # -- local -----------------------------------------------------------------------------------

    def _local_model(self, config: TranscriptionConfig) -> Any:
        if not config.local_model_path:
            raise TranscriptionError(
                "media.transcription.localModelPath is not set (the folder of a "
                "faster-whisper model)"
            )
        folder = Path(config.local_model_path).expanduser()
        if not (folder / "model.bin").is_file():
            raise TranscriptionError(
                f"no faster-whisper model in {folder} (media.transcription.localModelPath "
                "must name a folder with model.bin)"
            )
        key = (str(folder), config.local_compute_type, config.local_threads)
        with self._local_lock:
            model = self._local_models.get(key)
            if model is None:
                try:
                    from faster_whisper import WhisperModel
                except ImportError:
                    raise TranscriptionError(
                        "local speech to text needs faster-whisper: pip install 'mnemobot[voice]'"
                    ) from None
                model = WhisperModel(
                    str(folder),
                    device="cpu",
                    compute_type=config.local_compute_type,
                    cpu_threads=config.local_threads,
                )
                self._local_models = {key: model}
            return model

    def _local(self, audio: bytes, config: TranscriptionConfig) -> Transcript:
        model = self._local_model(config)
        try:
            # vad_filter: without it silence comes back as "You", and a note longer than
            # 30 s can lose its first window.
            segments, info = model.transcribe(
                io.BytesIO(audio), language=config.language, vad_filter=True
            )
            text = " ".join(segment.text.strip() for segment in segments)
        except Exception as exc:
            # PyAV's errors for a file that is not audio, CTranslate2's for a bad model.
            log.info("local transcription failed: %s: %s", type(exc).__name__, exc)
            raise TranscriptionError(
                f"the recording could not be decoded ({type(exc).__name__})"
            ) from None
        return Transcript(text.strip(), float(info.duration))

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


def _status_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if isinstance(message, str):
            return message[:200]
    return str(exc.message)[:200]
