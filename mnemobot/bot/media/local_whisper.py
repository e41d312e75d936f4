"""faster-whisper, run in a reader process (`transcribe_job`): the recording is decoded and
heard there, so a note that decodes to hours of audio, or a decoder that hangs on a
crafted file, costs that process (killed at its budget), never the bot's.

The model is loaded on the first note and kept while the process lives (one reader is
kept for speech: it uses every core it is given, two at once would only take turns).
"""

from __future__ import annotations

import io
import logging
import math
import time
from pathlib import Path
from typing import Any

import orjson

from mnemobot.bot.i18n import N_
from mnemobot.bot.media.reader_process import ReaderRefusal
from mnemobot.bot.media.speech_pieces import cut_window, pauses, piece_end

log = logging.getLogger(__name__)

_models: dict[tuple[str, str, int], Any] = {}
# faster-whisper decodes to 16 kHz mono.
SAMPLE_RATE = 16_000
# The shortest silence taken for a pause between words or sentences where a piece may end.
PAUSE_MS = 150


def _model(path: str | None, compute_type: str, threads: int) -> Any:
    if not path:
        raise ReaderRefusal(
            N_(
                "media.transcription.localModelPath is not set (a faster-whisper model "
                "folder, or a model name such as small)"
            )
        )
    folder = Path(path).expanduser()
    key = (str(folder), compute_type, threads)
    model = _models.get(key)
    if model is None:
        try:
            from faster_whisper import WhisperModel
        except ImportError:
            raise ReaderRefusal(
                N_("local speech to text needs faster-whisper: pip install 'mnemobot[voice]'")
            ) from None
        source = str(folder) if (folder / "model.bin").is_file() else _downloaded(path)
        model = WhisperModel(source, device="cpu", compute_type=compute_type, cpu_threads=threads)
        _models.clear()
        _models[key] = model
    return model


# Whisper's English-only models have 51,864 tokens; a multilingual one adds a language
# token (51,865; large-v3 51,866): faster-whisper tells them apart by that size too.
ENGLISH_ONLY_VOCABULARY = 51_864
# vocabulary.txt is about 500 KB; a folder's file larger than this is no Whisper vocabulary.
_MAX_VOCABULARY_BYTES = 4_000_000


def hears_english_only(folder: Path) -> bool:
    """Whether the CTranslate2 Whisper model in `folder` is an English-only one (`tiny.en`),
    by its vocabulary's size; False when that cannot be told."""
    for name in ("vocabulary.txt", "vocabulary.json"):
        path = folder / name
        try:
            if not path.is_file() or path.stat().st_size > _MAX_VOCABULARY_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if name.endswith(".txt"):
            size = len(data.splitlines())
        else:
            try:
                words = orjson.loads(data)
            except orjson.JSONDecodeError:
                continue
            size = len(words) if isinstance(words, list) else 0
        return size == ENGLISH_ONLY_VOCABULARY
    return False


def is_model_name(value: str) -> bool:
    """Whether localModelPath names one of faster-whisper's models (`small`, `base.en`)
    rather than a folder."""
    from faster_whisper import available_models

    return "/" not in value and value in available_models()


def _downloaded(name: str) -> str:
    """The folder of a model named by size: from the Hugging Face cache, downloaded there
    on first use (tiny 75 MB, base 145 MB, small 484 MB; an interrupted download goes on
    from where it stopped the next time)."""
    if not is_model_name(name):
        raise ReaderRefusal(
            N_(
                "no faster-whisper model in {folder} (media.transcription.localModelPath "
                "must name a folder with model.bin, or a model such as small)"
            ),
            folder=str(Path(name).expanduser()),
        )
    from faster_whisper import download_model

    try:
        return str(download_model(name))
    except Exception as exc:
        log.warning("faster-whisper model %s could not be downloaded: %s", name, exc)
        raise ReaderRefusal(
            N_(
                "the speech model {name} could not be downloaded ({error}); without the "
                "internet, set media.transcription.localModelPath to a model folder "
                "(docs/media.md)"
            ),
            name=repr(name),
            error=type(exc).__name__,
        ) from None


def transcribe_job(params: dict[str, Any], data: bytes) -> dict[str, Any]:
    """One piece of a recording heard: the one that starts at `params["start"]` seconds
    (0: the first) and is at most `params["piece_seconds"]` long (absent: the whole
    recording), heard in `params["language"]` (None: detected) after `params["prompt"]`
    (the text before it). {"text", "seconds": the whole decoded audio's length,
    "language", "languageProbability": how sure faster-whisper was of it, "englishOnly":
    whether the model hears English only, "tokens" and "logProbSum": how many tokens it
    heard and the sum of their log probabilities, "end": where the next piece starts (None: this
    was the last), "busy": seconds this job took}."""
    began = time.monotonic()
    try:
        from faster_whisper.audio import decode_audio
    except ImportError:
        raise ReaderRefusal(
            N_("local speech to text needs faster-whisper: pip install 'mnemobot[voice]'")
        ) from None
    # Decoded before the model is loaded: a file that is no recording is told at once (and
    # told apart from a model that fails, which is no fault of the note's). Each piece
    # decodes the note again: Opus decodes at hundreds of times real time, and the
    # reader keeps nothing of one note for the next job, which may be another chat's.
    try:
        audio = decode_audio(io.BytesIO(data))
    except MemoryError:
        raise
    except Exception as exc:
        # PyAV's errors for a file that is not audio: hearing it again would do the same.
        raise ReaderRefusal(
            N_("the recording could not be decoded ({error})"),
            permanent=True,
            error=type(exc).__name__,
        ) from None
    model = _model(params.get("model_path"), str(params["compute_type"]), int(params["threads"]))
    total = len(audio) / SAMPLE_RATE
    start = float(params.get("start") or 0.0)
    piece = params.get("piece_seconds")
    window = cut_window(start, total, float(piece)) if piece else None
    end = _piece_end(audio, window) if window else None
    clip = audio[round(start * SAMPLE_RATE) : round(end * SAMPLE_RATE) if end else None]
    try:
        # vad_filter: without it silence comes back as "You", and a note longer than
        # 30 s can lose its first window.
        segments, info = model.transcribe(
            clip,
            language=params.get("language"),
            initial_prompt=params.get("prompt"),
            vad_filter=True,
        )
        heard = list(segments)
    except MemoryError:
        raise
    except Exception as exc:
        # CTranslate2's errors for a bad model: the operator's to fix, then /retry works.
        log.warning("faster-whisper failed: %s: %s", type(exc).__name__, exc)
        raise ReaderRefusal(
            N_("the speech model failed ({error})"), error=type(exc).__name__
        ) from None
    text = " ".join(segment.text.strip() for segment in heard)
    return {
        "text": text.strip(),
        "seconds": total,
        # Per token, summed: the pieces of one note are added up (`Transcript.log_prob`).
        "tokens": sum(len(segment.tokens) for segment in heard),
        "logProbSum": math.fsum(segment.avg_logprob * len(segment.tokens) for segment in heard),
        "language": info.language,
        # 1 when the language was given (or the model hears English only).
        "languageProbability": info.language_probability,
        # CTranslate2's own answer, whatever the folder or the model's name says.
        "englishOnly": not model.model.is_multilingual,
        "end": end,
        "busy": time.monotonic() - began,
    }


def _piece_end(audio: Any, window: tuple[float, float]) -> float:
    """Where a piece whose end lies in `window` ends: in a pause the voice-activity
    detector (the one faster-whisper filters silence with) finds there."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    low, high = window
    offset = round(low * SAMPLE_RATE)
    spans = get_speech_timestamps(
        audio[offset : round(high * SAMPLE_RATE)],
        VadOptions(min_silence_duration_ms=PAUSE_MS, speech_pad_ms=0),
    )
    speech = [
        ((offset + span["start"]) / SAMPLE_RATE, (offset + span["end"]) / SAMPLE_RATE)
        for span in spans
    ]
    return piece_end(window, pauses(speech, window))
