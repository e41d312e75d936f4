"""A failed call to an OpenAI-compatible server, classified for the pipeline.

Servers say "the context overflowed" each their own way: OpenAI `code ==
"context_length_exceeded"`, vLLM a 400 with "maximum context length" in the message,
llama.cpp `type == "exceed_context_size_error"`; inside a stream, as an error event.
"""

from __future__ import annotations

from typing import Any

import openai

from mnemobot.bot.llm.window_reports import overflow_figures
from mnemobot.systems.core.llm import LLMError, LLMFailureKind

# Markers of a context overflow in the error bodies of the servers we know.
_OVERFLOW_CODES = {"context_length_exceeded", "exceed_context_size_error"}
_OVERFLOW_PHRASES = (
    "maximum context length",
    "context length exceeded",
    "exceeds the available context size",
    "context window",
    "too many tokens",
    "prompt is too long",
    "longer than the model's context length",
    "`max_new_tokens` must be <=",
)


def _error_body(exc: openai.APIStatusError) -> dict[str, Any]:
    body: Any = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    return body if isinstance(body, dict) else {}


def _error_fields(exc: openai.APIStatusError) -> tuple[str, str, str]:
    body = _error_body(exc)
    if not body:
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
    if isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIStatusError):
        # An error event inside a stream (HTTP 200): its body is the error object.
        body = exc.body if isinstance(exc.body, dict) else {}
        code = str(body.get("code") or "")
        message = str(body.get("message") or exc.message or "")
        if code in _OVERFLOW_CODES or any(p in message.lower() for p in _OVERFLOW_PHRASES):
            window, prompt = overflow_figures(message, body)
            return LLMError(
                LLMFailureKind.CONTEXT_OVERFLOW,
                message[:300],
                context_window=window,
                prompt_tokens=prompt,
            )
        return LLMError(LLMFailureKind.UNAVAILABLE, f"the stream failed: {message[:300]}")
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
            window, prompt = overflow_figures(message, _error_body(exc))
            return LLMError(
                LLMFailureKind.CONTEXT_OVERFLOW,
                short,
                status=status,
                context_window=window,
                prompt_tokens=prompt,
            )
        if status == 429:
            return LLMError(LLMFailureKind.RATE_LIMITED, short, status=status)
        if status in (401, 403):
            return LLMError(LLMFailureKind.AUTH, short, status=status)
        if status >= 500:
            return LLMError(LLMFailureKind.UNAVAILABLE, f"server error {status}", status=status)
        return LLMError(LLMFailureKind.BAD_REQUEST, short, status=status)
    return LLMError(LLMFailureKind.UNAVAILABLE, type(exc).__name__)
