"""Real voice notes for tests and benches: espeak-ng speaks a sentence to WAV, PyAV (which
faster-whisper installs) encodes it as OGG/Opus, mono, 48 kHz, the way Telegram sends a
voice note."""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
from pathlib import Path


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speak_wav(text: str, path: Path, *, words_per_minute: int = 160) -> None:
    subprocess.run(
        ["espeak-ng", "-s", str(words_per_minute), "-w", str(path), text],
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


def voice_note(text: str) -> tuple[bytes, float]:
    """`text` spoken as a Telegram voice note: (OGG/Opus bytes, seconds)."""
    with tempfile.TemporaryDirectory() as folder:
        wav = Path(folder) / "note.wav"
        speak_wav(text, wav)
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
