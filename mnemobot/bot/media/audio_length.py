"""How long a recording really is, from its packets (a reader process's job).

Telegram passes on the length the sender's app claims (`duration`), and a crafted message
can claim anything (`[voice 596523:14:07]`). What is shown comes from the file instead:
the sum of its audio packets' durations (each Opus packet says its own length in its first
byte; the container's own "duration" header is a claim like any other), decoding a
packet only when its container does not say. Needs PyAV (the `voice` extra); without it
the length is unknown and not shown.
"""

from __future__ import annotations

import io
from typing import Any


def audio_seconds_job(params: dict[str, Any], data: bytes) -> float | None:
    """Seconds of sound in `data`, None when it holds none that can be read."""
    try:
        import av
    except ImportError:
        return None
    try:
        container = av.open(io.BytesIO(data), mode="r")
    except av.FFmpegError:
        return None
    with container:
        streams = container.streams.audio or container.streams.video
        if not streams:
            return None
        stream = streams[0]
        seconds = 0.0
        for packet in container.demux(stream):
            if packet.size == 0:
                continue  # the end-of-stream marker
            if packet.duration and packet.time_base:
                seconds += float(packet.duration * packet.time_base)
            elif stream.type == "audio":
                seconds += sum(
                    frame.samples / frame.sample_rate
                    for frame in packet.decode()
                    if isinstance(frame, av.AudioFrame)
                )
        return seconds or None
