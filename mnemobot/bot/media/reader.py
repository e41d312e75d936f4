"""What channels use to read what people send besides text: speech to text, and a
one-line description of an image by the chat model (kept in the conversation and memory,
so "what was on the screenshot I sent on Monday" can be found later)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from mnemobot.bot.media.transcription import Transcriber, Transcript
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.settings import Settings
from mnemobot.systems.llm import ChatModel, ChatRequest, LLMError

log = logging.getLogger(__name__)

DESCRIBE_PROMPT = (
    "Describe this image in one line of at most 25 words: what it shows, and any text in "
    "it that matters. Only the line, nothing else."
)


class MediaReader:
    def __init__(
        self, settings: Settings, llm: ChatModel, chat_model: Callable[[RuntimeConfig], str]
    ) -> None:
        self.transcriber = Transcriber(settings)
        self.llm = llm
        self.chat_model = chat_model

    async def transcribe(self, audio: bytes, file_name: str, config: RuntimeConfig) -> Transcript:
        return await self.transcriber.transcribe(audio, file_name, config.media.transcription)

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
            max_output_tokens=config.media.image_description_max_tokens,
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
        await self.transcriber.close()
