"""Whether a model takes images at all, asked with one of our own.

A server answers an image it cannot read (a damaged file, random bytes named .jpg) with
the same HTTP 400 as a model that takes no images. Learning "no images" from the first
would turn images off for every chat on one stranger's file, so before a refusal is
learned the model is shown a small image that is surely sound: refused too, it takes
none; answered, the refused image was at fault.

One image is shown at a time per model: chats refused while it is out wait for its
verdict. One that gets none (a timeout, a 5xx) is not shown again for a while.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import struct
import zlib
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

from mnemobot.base.clock import Clock
from mnemobot.systems.core.llm import ChatRequest, LLMError, LLMFailureKind

log = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 60.0
# After a probe that got no verdict (it timed out, or a 5xx: a server busy or loading a
# model), images refused meanwhile go as a note without showing ours again: on a slow
# home server each showing costs the refused chat the probe's whole timeout. A quarter
# of an hour is longer than a model takes to load and short enough that a server back
# to normal is asked again soon; nothing is learned for good from it either way.
INCONCLUSIVE_PROBE_COOLDOWN_SECONDS = 15 * 60


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


def probe_request(refused: ChatRequest) -> ChatRequest:
    """One answer token about a blank image, to the model that `refused` an image and with
    its sampling (a server that refuses some temperature would refuse the probe for that,
    not for the image); sent whatever `llm.vision` says, within `refused`'s timeout."""
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "What colour is this image? One word."},
        {"type": "image_url", "image_url": {"url": probe_image_url()}},
    ]
    return ChatRequest(
        messages=[{"role": "user", "content": content}],
        model=refused.model,
        temperature=refused.temperature,
        max_output_tokens=1,
        timeout_seconds=min(PROBE_TIMEOUT_SECONDS, refused.timeout_seconds),
        vision="on",
        resend=False,
    )


class ImageProbes:
    """Whether each model takes images, by showing it ours (`probe_request`) through
    `send` (the client's completion, raising LLMError): once a run for a verdict, one at a
    time, and not again for INCONCLUSIVE_PROBE_COOLDOWN_SECONDS after one without."""

    def __init__(self, send: Callable[[ChatRequest], Awaitable[object]], clock: Clock) -> None:
        self._send = send
        self._clock = clock
        # Models shown our image this run, and whether they answered.
        self._verdicts: dict[str, bool] = {}
        # The showing under way per model (shared by every chat refused meanwhile), with
        # its timeout.
        self._under_way: dict[str, tuple[asyncio.Task[bool | None], float]] = {}
        # Per model, until when (`clock`) a probe that got no verdict is not repeated.
        self._quiet_until: dict[str, float] = {}

    async def takes_images(self, refused: ChatRequest) -> bool | None:
        """Whether the model of `refused` answers a sound image (False: it refuses that one
        too). None: no verdict (the probe timed out or the server failed, now or within
        the cooldown), and nothing is learned."""
        model = refused.model
        known = self._verdicts.get(model)
        if known is not None:
            return known
        if self._clock() < self._quiet_until.get(model, float("-inf")):
            return None
        under_way = self._under_way.get(model)
        if under_way is None:
            request = probe_request(refused)
            task = asyncio.create_task(self._probe(request), name=f"image-probe-{model}")
            under_way = self._under_way[model] = (task, request.timeout_seconds)
        else:
            log.debug("%s refused an image; waiting for the sound image already shown", model)
        task, timeout = under_way
        try:
            # Shielded: a chat that stops waiting (its turn stopped) leaves the probe to
            # the others, and its verdict to the next image.
            return await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            return None

    async def _probe(self, request: ChatRequest) -> bool | None:
        model = request.model
        verdict: bool | None = True
        try:
            await self._send(request)
        except LLMError as error:
            # Only a 400 says no to the image itself: a 5xx (a model loading, a proxy)
            # says nothing of it, and learning "no images" from one would be for good.
            verdict = False if error.kind is LLMFailureKind.BAD_REQUEST else None
        finally:
            self._under_way.pop(model, None)
        if verdict is None:
            self._quiet_until[model] = self._clock() + INCONCLUSIVE_PROBE_COOLDOWN_SECONDS
            log.info(
                "%s gave no verdict on a sound image; images it refuses in the next %d "
                "minutes go to it as a note, without asking again",
                model,
                INCONCLUSIVE_PROBE_COOLDOWN_SECONDS // 60,
            )
        else:
            self._verdicts[model] = verdict
        return verdict

    def close(self) -> None:
        for task, _ in self._under_way.values():
            task.cancel()
