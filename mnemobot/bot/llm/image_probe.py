"""Whether a model takes images at all, asked with one of our own.

A server answers an image it cannot read (a damaged file, random bytes named .jpg) with
the same HTTP 400 as a model that takes no images. Learning "no images" from the first
would turn images off for every chat on one stranger's file, so before a refusal is
learned the model is shown a small image that is surely sound: refused too, it takes
none; answered, the refused image was at fault.
"""

from __future__ import annotations

import base64
import struct
import zlib
from functools import cache
from typing import Any

from mnemobot.systems.core.llm import ChatRequest

PROBE_TIMEOUT_SECONDS = 60.0


def blank_png(width: int, height: int) -> bytes:
    """A white `width` x `height` RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff" * (3 * width) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@cache
def probe_image_url() -> str:
    # 32 px: large enough for every vision encoder's smallest patch grid.
    return "data:image/png;base64," + base64.b64encode(blank_png(32, 32)).decode()


def probe_request(model: str) -> ChatRequest:
    """One answer token about a blank image: sent whatever `llm.vision` says."""
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "What colour is this image? One word."},
        {"type": "image_url", "image_url": {"url": probe_image_url()}},
    ]
    return ChatRequest(
        messages=[{"role": "user", "content": content}],
        model=model,
        temperature=0.0,
        max_output_tokens=1,
        timeout_seconds=PROBE_TIMEOUT_SECONDS,
        vision="on",
        resend=False,
    )
