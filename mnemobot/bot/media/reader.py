"""What channels use to read what people send besides text: speech to text, documents'
text, a recording's real length, and a one-line description of an image by the chat model
(kept in the conversation and memory, so "what was on the screenshot I sent on Monday" can
be found later).

Everything that parses a file someone sent runs in reader processes within a budget
(`bounded`): documents and lengths in `readers` (`ReaderLimits.processes` at once), local
speech to text in its own. Images are not decoded by the bot at all: their bytes go to the
model as they are.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path

from mnemobot.bot.media.bounded import Budget, OverBudget, ReaderFailed, ReaderPool, ReaderRefused
from mnemobot.bot.media.document_reader import (
    DEFAULT_READER_LIMITS,
    MEGABYTE,
    DocumentReader,
    ReaderLimits,
)
from mnemobot.bot.media.document_text import DocumentExtract
from mnemobot.bot.media.transcription import (
    DEFAULT_SPEECH_BUDGET,
    SpeechBudget,
    Transcriber,
    Transcript,
)
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.settings import Settings
from mnemobot.systems.core.llm import ChatModel, ChatRequest, LLMError

log = logging.getLogger(__name__)

DESCRIBE_PROMPT = (
    "Describe this image in one line of at most 25 words: what it shows, and any text in "
    "it that matters. Only the line, nothing else."
)


# A voice note never waits long behind documents being read: with every reader busy its
# length is not measured (the speech server's, or none, is shown).
MEASURE_WAIT_SECONDS = 1.0
# Most tokens of an image's one-line description (the prompt asks for 25 words).
DESCRIPTION_MAX_TOKENS = 120


class MediaReader:
    def __init__(
        self,
        settings: Settings,
        llm: ChatModel,
        chat_model: Callable[[RuntimeConfig], str],
        limits: ReaderLimits = DEFAULT_READER_LIMITS,
        speech: SpeechBudget = DEFAULT_SPEECH_BUDGET,
    ) -> None:
        self.transcriber = Transcriber(settings, speech)
        self.llm = llm
        self.chat_model = chat_model
        self.limits = limits
        self.readers = ReaderPool("document", lambda: limits.processes, ("pypdf", "av"))
        self.documents = DocumentReader(self.readers, limits)
        # Looked up once: without PyAV a recording's length cannot be known.
        self._measures = importlib.util.find_spec("av") is not None

    def prewarm(self, config: RuntimeConfig) -> None:
        """A reader process started ahead of a file that is on its way (inside the loop)."""
        self.readers.prewarm()

    async def transcribe(
        self,
        audio: bytes,
        file_name: str,
        config: RuntimeConfig,
        recording_seconds: float | None = None,
    ) -> Transcript:
        return await self.transcriber.transcribe(
            audio, file_name, config.media.transcription, recording_seconds
        )

    async def read_document(
        self, data: bytes, kept: Path | None, name: str, mime: str | None, config: RuntimeConfig
    ) -> DocumentExtract:
        """Raises UnreadableDocument with the line for the user (see `DocumentReader`)."""
        return await self.documents.read(data, kept, name, mime)

    async def audio_seconds(self, data: bytes, config: RuntimeConfig) -> float | None:
        """How long the recording is, from its packets; None when that cannot be known."""
        if not self._measures:
            return None
        budget = Budget(self.limits.seconds, self.limits.memory_mb * MEGABYTE)
        try:
            seconds = await self.readers.run(
                "audio_seconds", {}, data, budget, wait_seconds=MEASURE_WAIT_SECONDS
            )
        except (OverBudget, ReaderFailed, ReaderRefused, OSError) as exc:
            log.info("the length of a recording is unknown: %s", exc)
            return None
        return float(seconds) if isinstance(seconds, (int, float)) else None

    async def describe_image(
        self, data_url: str, caption: str, config: RuntimeConfig
    ) -> str | None:
        """One line about the image, or None (no vision, descriptions off, a failure)."""
        if not config.media.describe_images or config.llm.vision == "off":
            return None
        text = DESCRIBE_PROMPT + (f"\nIts caption: {caption}" if caption else "")
        request = ChatRequest(
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "image_url", "image_url": {"url": data_url}},
                    ],
                }
            ],
            model=self.chat_model(config),
            temperature=0.0,
            max_output_tokens=DESCRIPTION_MAX_TOKENS,
            timeout_seconds=config.llm.request_timeout_seconds,
            vision=config.llm.vision,
            require_images=True,
        )
        try:
            response = await self.llm.complete(request)
        except LLMError as exc:
            log.info("no image description: %s", exc.kind.value)
            return None
        line = " ".join((response.content or "").split())
        return line[:300] or None

    async def close(self) -> None:
        await self.readers.close()
        await self.transcriber.close()
