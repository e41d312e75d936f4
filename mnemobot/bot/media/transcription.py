"""Speech to text for voice notes, audio files and video notes.

Two backends (`media.transcription.backend`):

- "api": any OpenAI-compatible `/v1/audio/transcriptions` endpoint (OpenAI, Groq, a local
  whisper server), through the openai SDK; by default the chat model's own server.
- "local": faster-whisper (`pip install 'mnemobot[voice]'`), from a CTranslate2 Whisper
  model folder the operator names, or a model name downloaded on first use (in the reader,
  `local_whisper`). It runs in a reader process of
  its own (`local_whisper`, within its `SpeechBudget` and `LOCAL_MEMORY_MB`), which keeps the
  model loaded; one job at a time (it uses every core it is given; two at once would only
  take turns on them). A long note is heard in pieces of at most `PIECE_SECONDS`, each
  its own job, so a short note from another chat waits for one piece, not the whole note.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import Any

import openai

from mnemobot.bot.i18n import N_
from mnemobot.bot.media.bounded import Budget, OverBudget, ReaderFailed, ReaderPool, ReaderRefused
from mnemobot.bot.media.reader_process import ReaderRefusal
from mnemobot.bot.media.speech_pieces import PIECE_SECONDS, piece_language, prompt_tail
from mnemobot.config.runtime import TranscriptionConfig
from mnemobot.config.settings import Settings
from mnemobot.model.windows import endpoint_key

log = logging.getLogger(__name__)

# Local servers accept any key; the SDK refuses to start without one.
PLACEHOLDER_KEY = "not-needed"


@dataclass(frozen=True, slots=True)
class SpeechBudget:
    """Seconds one transcription may take before it fails (the file is kept): `seconds`,
    and `per_recorded_second` more for each second of a recording whose length is known,
    so a long note is heard rather than cut off at a fixed limit, up to `cap_seconds` (the
    whole note's time in the reader, however many pieces it is heard in; each piece also
    has what a recording of its length gets, so one stuck piece fails early). Measured on
    2 shared cores, tiny.en int8, local: a 4 s note in 1-4 s, a 76 s note in 51 s, a 268 s
    note in about 150 s (past 120 s); a larger model or a busier machine needs more."""

    seconds: float = 120.0
    per_recorded_second: float = 2.0
    # The whole note's time in the speech reader (a 20 MB note can hold over an hour);
    # each piece of it (`speech_pieces`) has its own share: what a piece of its length gets.
    cap_seconds: float = 900.0

    def for_recording(self, recording_seconds: float | None) -> float:
        """Whole seconds (the user may read them) a recording of `recording_seconds`
        (None: unknown) may take."""
        extra = self.per_recorded_second * max(recording_seconds or 0.0, 0.0)
        return float(math.ceil(min(self.seconds + extra, self.cap_seconds)))


DEFAULT_SPEECH_BUDGET = SpeechBudget()
# backend "local": CTranslate2's compute type ("int8" is fastest on a CPU) and threads for
# one transcription (0: CTranslate2 chooses).
LOCAL_COMPUTE_TYPE = "int8"
LOCAL_THREADS = 0
# backend "local": memory (address space) of the process that decodes and hears a
# recording. Measured: tiny.en peaks at about 1,500 MB; a larger model needs more.
LOCAL_MEMORY_MB = 6_000
# What a server without /audio/transcriptions answers (llama.cpp, llama-cpp-python and
# Ollama: 404), and what to do then.
NO_ENDPOINT_STATUSES = frozenset({404, 405, 501})
NO_ENDPOINT_HINT = (
    " (this server has no speech to text: pip install 'mnemobot[voice]' and set "
    "media.transcription.backend to local, or point media.transcription.baseUrl at a "
    "Whisper server; see docs/media.md)"
)


class TranscriptionError(ReaderRefusal):
    """One line for the user (see `ReaderRefusal`): why the audio could not be turned into
    text; `status`: the HTTP status the speech-to-text server answered with, if it answered.
    `permanent`: the recording itself cannot be decoded, so /retry would not help; every
    other failure (a server down or slow, a setting the operator can fix) may pass."""

    def __init__(
        self,
        message: str,
        /,
        *,
        status: int | None = None,
        permanent: bool = False,
        **values: object,
    ) -> None:
        super().__init__(message, permanent=permanent, **values)
        self.status = status


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    # Seconds of audio the backend heard (None when it does not say).
    duration: float | None = None
    # The local model hears English only (`tiny.en`): speech in another language comes
    # back as no words, or as English words nobody said. A server never tells.
    english_only: bool = False
    # The local model's mean log probability per token of what it heard (None: a server,
    # or no words). An English-only model hearing another language is far less sure.
    log_prob: float | None = None


class Transcriber:
    """Turns audio bytes into text with the backend the runtime config names."""

    def __init__(self, settings: Settings, budget: SpeechBudget = DEFAULT_SPEECH_BUDGET) -> None:
        self.settings = settings
        self.budget = budget
        self._clients: dict[tuple[str | None, str], openai.AsyncOpenAI] = {}
        # One reader for speech: it keeps the model loaded between notes.
        self.speech = ReaderPool("speech", lambda: 1, ("faster_whisper",))

    async def transcribe(
        self,
        audio: bytes,
        file_name: str,
        config: TranscriptionConfig,
        recording_seconds: float | None = None,
    ) -> Transcript:
        """`recording_seconds`: the length measured from the recording's packets (never
        the length its message claims), which buys a long note more time."""
        if config.backend == "off":
            raise TranscriptionError(N_("speech to text is off (media.transcription.backend)"))
        seconds = self.budget.for_recording(recording_seconds)
        if config.backend == "local":
            # Its time starts when the one speech reader takes it (the reader's own budget):
            # a note waiting behind another chat's piece has used none of it.
            piece_seconds = self.budget.for_recording(
                min(recording_seconds, PIECE_SECONDS) if recording_seconds is not None else None
            )
            return await self._local(audio, config, seconds, piece_seconds)
        try:
            async with asyncio.timeout(seconds):
                return await self._api(audio, file_name, config, seconds)
        except TimeoutError:
            log.warning(
                "speech to text failed: %s did not answer within %g s", self.server(config), seconds
            )
            raise TranscriptionError(
                N_("speech to text took longer than {seconds:g} s"), seconds=seconds
            ) from None

    # -- api -------------------------------------------------------------------------------------

    def endpoint(self, config: TranscriptionConfig) -> tuple[str | None, str]:
        """The server's base URL (None: OpenAI's) and the key it gets."""
        base_url = config.base_url or self.settings.openai_base_url
        key = self.settings.bot_transcription_api_key
        if key is None and config.base_url is None and self.settings.openai_api_key is not None:
            # The chat model's own server: its key. Never sent to another host.
            key = self.settings.openai_api_key
        return base_url, key.get_secret_value() if key is not None else PLACEHOLDER_KEY

    def server(self, config: TranscriptionConfig) -> str:
        """The server as the log and doctor name it: no credentials, no query."""
        return endpoint_key(str(self._client(config).base_url))

    def _client(self, config: TranscriptionConfig) -> openai.AsyncOpenAI:
        base_url, secret = self.endpoint(config)
        cache_key = (base_url, secret)
        client = self._clients.get(cache_key)
        if client is None:
            client = openai.AsyncOpenAI(api_key=secret, base_url=base_url, max_retries=1)
            self._clients[cache_key] = client
        return client

    async def _api(
        self, audio: bytes, file_name: str, config: TranscriptionConfig, seconds: float
    ) -> Transcript:
        extra: dict[str, Any] = {}
        if config.language:
            extra["language"] = config.language
        try:
            result = await self._client(config).audio.transcriptions.create(
                file=(file_name, audio),
                model=config.model,
                timeout=seconds,
                **extra,
            )
        except openai.APIStatusError as exc:
            # The server's own message says what is wrong (a model name, a key); the key
            # itself is never part of it. The user gets the line; the operator, who can fix
            # it, one in the log.
            detail = _status_detail(exc)
            log.warning(
                "speech to text failed: %s answered HTTP %d for model %s: %s%s",
                self.server(config),
                exc.status_code,
                config.model,
                detail,
                NO_ENDPOINT_HINT if exc.status_code in NO_ENDPOINT_STATUSES else "",
            )
            raise TranscriptionError(
                N_("the speech-to-text server answered HTTP {code}: {detail}"),
                status=exc.status_code,
                code=exc.status_code,
                detail=detail,
            ) from None
        except openai.APIError as exc:
            log.warning(
                "speech to text failed: %s could not be reached (%s)",
                self.server(config),
                type(exc).__name__,
            )
            raise TranscriptionError(
                N_("the speech-to-text server could not be reached ({error})"),
                error=type(exc).__name__,
            ) from None
        text = getattr(result, "text", None)
        if not isinstance(text, str):
            raise TranscriptionError(N_("the speech-to-text server answered without text"))
        return Transcript(text.strip(), _heard_seconds(result))

    # -- local -----------------------------------------------------------------------------------

    async def _local(
        self, audio: bytes, config: TranscriptionConfig, seconds: float, piece_seconds: float
    ) -> Transcript:
        """The note heard piece after piece (`speech_pieces`), each its own job in the one
        speech reader: another chat's note, waiting in line, goes between two pieces.
        `seconds`: the whole note's time in the reader; `piece_seconds`: one piece's."""
        params: dict[str, Any] = {
            "model_path": config.local_model_path,
            "compute_type": LOCAL_COMPUTE_TYPE,
            "threads": LOCAL_THREADS,
            "language": config.language,
            "piece_seconds": PIECE_SECONDS,
        }
        texts: list[str] = []
        tokens = 0
        log_prob_sum = 0.0
        start: float | None = 0.0
        used = 0.0
        heard: dict[str, Any] = {}
        while start is not None:
            # The last piece may have only what the note has left of its whole time.
            budget_seconds = min(piece_seconds, seconds - used)
            # The time told when it runs out: the piece's own, or the whole note's.
            told = piece_seconds if budget_seconds == piece_seconds else seconds
            piece = {**params, "start": start, "prompt": prompt_tail(" ".join(texts))}
            heard = await self._piece(piece, audio, budget_seconds, told)
            # One transcript, one language: the first one heard with confidence is kept (a
            # first piece of music or silence says little about the rest).
            params["language"] = piece_language(
                params["language"], heard.get("language"), heard.get("languageProbability")
            )
            texts.append(str(heard["text"]))
            tokens += int(heard.get("tokens") or 0)
            log_prob_sum += float(heard.get("logProbSum") or 0.0)
            used += float(heard.get("busy") or 0.0)
            end = heard.get("end")
            start = float(end) if end is not None and float(end) > start else None
            if start is not None and used >= seconds:
                raise TranscriptionError(
                    N_("speech to text took longer than {seconds:g} s"), seconds=seconds
                )
        text = " ".join(part for part in texts if part)
        return Transcript(
            text,
            float(heard["seconds"]),
            bool(heard.get("englishOnly")),
            log_prob_sum / tokens if tokens else None,
        )

    async def _piece(
        self, params: dict[str, Any], audio: bytes, budget_seconds: float, told: float
    ) -> dict[str, Any]:
        budget = Budget(budget_seconds, LOCAL_MEMORY_MB * 1_000_000)
        try:
            heard = await self.speech.run("transcribe", params, audio, budget)
        except ReaderRefused as exc:
            raise TranscriptionError(exc.message, permanent=exc.permanent, **exc.values) from None
        except OverBudget as exc:
            raise _over_budget(exc, told) from None
        except ReaderFailed as exc:
            log.info("local transcription failed: %s", exc)
            raise TranscriptionError(
                N_("the recording could not be decoded ({error})"), permanent=True, error=str(exc)
            ) from None
        except OSError as exc:
            # No speech reader could be started (or the bot is stopping): nothing about the note.
            log.warning("local transcription failed: %s", exc)
            raise TranscriptionError(
                N_("no speech reader could be started ({error})"), error=str(exc)
            ) from None
        return dict(heard)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
        await self.speech.close()


def _heard_seconds(result: Any) -> float | None:
    """How long the server found the audio: `duration` (verbose_json, Groq) or the usage
    OpenAI bills by (`usage.seconds`); the server decoded it, so unlike the sender's claim
    it can be shown."""
    duration = getattr(result, "duration", None)
    usage = getattr(result, "usage", None)
    if duration is None and getattr(usage, "type", None) == "duration":
        duration = getattr(usage, "seconds", None)
    try:
        return float(duration) if duration is not None else None
    except (TypeError, ValueError):
        return None


def _over_budget(exc: OverBudget, seconds: float) -> TranscriptionError:
    if exc.what == "time":
        return TranscriptionError(
            N_("speech to text took longer than {seconds:g} s"), seconds=seconds
        )
    if exc.what == "memory":
        return TranscriptionError(
            N_("speech to text needed more than {megabytes} MB"), megabytes=LOCAL_MEMORY_MB
        )
    return TranscriptionError(
        N_("speech to text stopped while decoding the recording (it may be damaged)"),
        permanent=True,
    )


def _status_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if isinstance(message, str):
            return message[:200]
    return str(exc.message)[:200]
