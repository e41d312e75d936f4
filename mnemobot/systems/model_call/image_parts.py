"""Images in a chat request, as OpenAI image parts (pure functions).

The session keeps text only (the image's description and the file's name); the images of
the current turn are added to its user message for each model call of the turn, and taken
out again, with a note in their place, for a model that takes no images.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnemobot.base.tokens import estimate_tokens
from mnemobot.systems.core.turn_media import ImageInput

# What one image costs a request, for the token estimate: OpenAI prices a detailed
# 1024x1024 image at 765 tokens; llama.cpp's and vLLM's vision models take 256-1,000.
IMAGE_TOKENS = 800
NO_VISION_NOTE = (
    "[An image was attached here, but the model in use cannot see images: answer from the "
    "text, and tell the user you could not look at the image itself.]"
)
UNREADABLE_IMAGE_NOTE = (
    "[An image was attached here, but the model's server refused it (a damaged file, not "
    "an image, or more or larger images than it takes at once): answer from the text, and "
    "tell the user the image could not be looked at.]"
)


def with_images(
    messages: list[dict[str, Any]], images: Sequence[ImageInput]
) -> list[dict[str, Any]]:
    """`messages` with `images` as parts of the last user message (a copy of that one)."""
    if not images:
        return messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        parts: list[dict[str, Any]] = [{"type": "text", "text": content_text(message)}]
        parts += [{"type": "image_url", "image_url": {"url": image.data_url}} for image in images]
        return [*messages[:index], {**message, "content": parts}, *messages[index + 1 :]]
    return messages


def has_images(messages: Sequence[dict[str, Any]]) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def without_images(
    messages: list[dict[str, Any]], note: str = NO_VISION_NOTE
) -> list[dict[str, Any]]:
    """Image parts replaced by `note`; each message's content plain text again."""
    out = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            out.append(message)
            continue
        texts = []
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image_url":
                texts.append(note)
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
        out.append({**message, "content": "\n\n".join(texts)})
    return out


def content_text(message: dict[str, Any]) -> str:
    """The text of a message whose content is a string or a list of parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def content_tokens(content: object) -> int:
    """Estimated tokens of a message's content: its text, and `IMAGE_TOKENS` an image."""
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                total += IMAGE_TOKENS
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                total += estimate_tokens(part["text"])
        return total
    return estimate_tokens(str(content or ""))
