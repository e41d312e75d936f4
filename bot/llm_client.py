"""The chat model on `openai.AsyncOpenAI`, with failures classified for the pipeline."""

from __future__ import annotations

import logging
from typing import Any

import openai
import orjson
from openai.types.chat import ChatCompletion

from memory.session import valid_unicode
from systems.llm import ChatRequest, ChatResponse, LLMError, LLMFailureKind, ToolCall

log = logging.getLogger(__name__)

# Markers of a context overflow in the error bodies of the servers we know (DESIGN §7).
_OVERFLOW_CODES = {"context_length_exceeded", "exceed_context_size_error"}
_OVERFLOW_PHRASES = (
    "maximum context length",
    "context length exceeded",
    "exceeds the available context size",
    "context window",
    "too many tokens",
    "prompt is too long",
)


def _error_fields(exc: openai.APIStatusError) -> tuple[str, str, str]:
    body: Any = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return "", "", str(exc.message or "")
    return (
        str(body.get("code") or ""),
        str(body.get("type") or ""),
        str(body.get("message") or exc.message or ""),
    )


def classify_openai_error(exc: Exception) -> LLMError:
    """Map an openai SDK exception to our failure kinds (OpenAI, vLLM and llama.cpp forms)."""
    if isinstance(exc, openai.APITimeoutError):
        # The aiohttp transport reports a refused connection as a connect timeout.
        if "Cannot connect to host" in str(exc.__cause__ or ""):
            return LLMError(LLMFailureKind.UNAVAILABLE, "could not connect to the model server")
        return LLMError(LLMFailureKind.TIMEOUT, "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(LLMFailureKind.UNAVAILABLE, "could not connect to the model server")
    if isinstance(exc, openai.APIStatusError):
        code, kind, message = _error_fields(exc)
        status = exc.status_code
        short = message[:300]
        lowered = message.lower()
        if (
            code in _OVERFLOW_CODES
            or kind in _OVERFLOW_CODES
            or any(p in lowered for p in _OVERFLOW_PHRASES)
            or status == 413
        ):
            return LLMError(LLMFailureKind.CONTEXT_OVERFLOW, short, status=status)
        if status == 429:
            return LLMError(LLMFailureKind.RATE_LIMITED, short, status=status)
        if status in (401, 403):
            return LLMError(LLMFailureKind.AUTH, short, status=status)
        if status >= 500:
            return LLMError(LLMFailureKind.UNAVAILABLE, f"server error {status}", status=status)
        return LLMError(LLMFailureKind.BAD_REQUEST, short, status=status)
    return LLMError(LLMFailureKind.UNAVAILABLE, type(exc).__name__)


class OpenAIChatModel:
    """ChatModel on the openai SDK; the SDK retries 429/5xx with backoff (`max_retries`)."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        max_retries: int = 2,
        timeout_seconds: float = 120,
    ) -> None:
        # Local servers (llama.cpp, Ollama, vLLM) accept any key; without one the SDK refuses
        # to start, so a placeholder lets the server itself decide.
        self.client = openai.AsyncOpenAI(
            api_key=api_key or "not-set",
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout_seconds,
            # The SDK's aiohttp transport: its default httpx stack was about 40% of the
            # bot's CPU per reply under load (cProfile of `mnemobot bench telegram`).
            http_client=openai.DefaultAioHttpClient(timeout=timeout_seconds),
        )

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_output_tokens,
        }
        if request.tools:
            body["tools"] = request.tools
        try:
            # `chat.completions.create` walks every message and tool schema against the
            # SDK's TypedDicts before sending (milliseconds per request, growing with the
            # history). Our messages are already plain API dicts, so they go out as JSON
            # bytes through the SDK's generic `post`: same client, auth, retries, errors and
            # typed response, without that walk.
            completion = await self.client.post(
                "/chat/completions",
                cast_to=ChatCompletion,
                content=orjson.dumps(body),
                options={"timeout": request.timeout_seconds},
            )
        except openai.OpenAIError as exc:
            error = classify_openai_error(exc)
            log.warning("LLM call failed: %s", error)
            raise error from None
        if not completion.choices:
            raise LLMError(LLMFailureKind.BAD_REQUEST, "the model returned no choices")
        choice = completion.choices[0]
        message = choice.message
        calls = [
            ToolCall(
                id=call.id,
                name=call.function.name,
                arguments=valid_unicode(call.function.arguments or ""),
            )
            for call in (message.tool_calls or [])
            if getattr(call, "function", None) is not None
        ]
        usage = completion.usage
        return ChatResponse(
            content=valid_unicode(message.content) if message.content is not None else None,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )

    async def list_models(self) -> list[str]:
        try:
            page = await self.client.models.list()
        except openai.OpenAIError as exc:
            raise classify_openai_error(exc) from None
        return [model.id for model in page.data]

    async def close(self) -> None:
        await self.client.close()
