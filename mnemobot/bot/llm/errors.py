"""A failed call to an OpenAI-compatible server, classified for the pipeline.

Servers say "the context overflowed" each their own way: OpenAI `code ==
"context_length_exceeded"`, vLLM a 400 with "maximum context length" in the message,
llama.cpp `type == "exceed_context_size_error"`; inside a stream, as an error event.

What a server says goes into the log and `preferences/model-vision.json` as
`server_detail`: short, one line, and without the images a server may echo back.
"""

from __future__ import annotations

import re
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


# A data URL's base64 payload (`data:image/png;base64,...`), cut anywhere (a server
# echoes the start of its input): the user's image in a refusal of it. A backslash: JSON
# that escapes "/".
_DATA_URL_PAYLOAD = re.compile(r"(base64,)[A-Za-z0-9+/=\\]*", re.IGNORECASE)
# A run of base64 with no data URL before it: longer than any word or name a server
# writes (a 30-byte piece of a file is 40 characters already).
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/\\]{40,}={0,2}")
_SPACE = re.compile(r"\s+")
# Past this much of what a server said nothing more is read (a body echoing a request).
_MOST_READ = 100_000
DETAIL_CHARS = 300


def server_detail(message: str, limit: int = DETAIL_CHARS) -> str:
    """What a server said, fit for a log line: on one line, without the payload of a data
    URL or a long base64 run (an echoed image: "[base64]" in its place), at most `limit`
    characters."""
    text = _SPACE.sub(" ", message[:_MOST_READ]).strip()
    text = _DATA_URL_PAYLOAD.sub(r"\1[base64]", text)
    return _BASE64_RUN.sub("[base64]", text)[:limit]


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
                server_detail(message),
                context_window=window,
                prompt_tokens=prompt,
            )
        return LLMError(LLMFailureKind.UNAVAILABLE, f"the stream failed: {server_detail(message)}")
    if isinstance(exc, openai.APIStatusError):
        code, kind, message = _error_fields(exc)
        status = exc.status_code
        short = server_detail(message)
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
