"""What goes on the wire to an OpenAI-compatible chat server and what comes back: the
request's options and messages as every server takes them, credentials in the base URL
as a header, and a completion read into a `ChatResponse` (the visible answer, tool calls,
token counts). Pure functions; `client.OpenAIChatModel` sends and receives.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from openai.types.chat import ChatCompletion

from mnemobot.bot.llm.prompt_cache import prompt_cache_counts
from mnemobot.bot.llm.reasoning_text import visible_answer
from mnemobot.conversation.session import valid_unicode
from mnemobot.systems.core.llm import ChatRequest, ChatResponse, LLMError, LLMFailureKind, ToolCall


def split_credentials(base_url: str | None) -> tuple[str | None, str | None]:
    """(the URL without `user:password@`, the Basic Authorization value or None).

    The HTTP client refuses a URL with credentials next to an Authorization header, and
    the SDK always sends one; the credentials become that header instead.
    """
    if not base_url:
        return base_url, None
    parts = urlsplit(base_url)
    if parts.username is None and parts.password is None:
        return base_url, None
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    netloc = f"{host}:{parts.port}" if parts.port else host
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return urlunsplit(parts._replace(netloc=netloc)), f"Basic {token}"


def request_options(request: ChatRequest) -> Any:
    """The SDK's per-request options: the request's timeout, and no resending when the
    caller has a deadline of its own (`ChatRequest.resend`)."""
    options: dict[str, Any] = {"timeout": request.timeout_seconds}
    if not request.resend:
        options["max_retries"] = 0
    return options


def messages_on_the_wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as every server takes them: an assistant message that only calls tools
    has an empty `content`, not the null OpenAI answers it with (llama-cpp-python's server
    refuses a null one and its function-calling template a missing one, HTTP 500 both;
    OpenAI and the others take "")."""
    if all(m.get("content", "") is not None for m in messages):
        return messages
    return [{**m, "content": ""} if m.get("content", "") is None else m for m in messages]


def refuses_tool_choice(error: LLMError) -> bool:
    """A 400 about `tool_choice` itself (vLLM started without --enable-auto-tool-choice
    says '"auto" tool choice requires ...')."""
    detail = error.detail.lower()
    return error.kind is LLMFailureKind.BAD_REQUEST and (
        "tool_choice" in detail or "tool choice" in detail
    )


def is_event_stream(response: Any) -> bool:
    content_type = str(response.headers.get("content-type", ""))
    return content_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def response_from_completion(completion: object) -> ChatResponse:
    if not isinstance(completion, ChatCompletion):
        # The SDK hands back a body that is not JSON as a string: a proxy's error page,
        # or a URL that is not the model server's API.
        raise LLMError(
            LLMFailureKind.UNAVAILABLE,
            "the server's answer is not a chat completion (not JSON: a proxy's page, or "
            "OPENAI_BASE_URL does not point at the API)",
        )
    if not completion.choices:
        raise LLMError(LLMFailureKind.BAD_REQUEST, "the model returned no choices")
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCall(
            id=call.id,
            name=function.name,
            arguments=valid_unicode(function.arguments or ""),
        )
        for call in (message.tool_calls or [])
        # A custom tool call (free text, no function) is none of ours.
        if (function := getattr(call, "function", None)) is not None
    ]
    usage = completion.usage
    cache = prompt_cache_counts(completion)
    return ChatResponse(
        content=(
            visible_answer(valid_unicode(message.content)) if message.content is not None else None
        ),
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        prompt_tokens=usage.prompt_tokens if usage else cache.prompt,
        completion_tokens=usage.completion_tokens if usage else None,
        cached_prompt_tokens=cache.cached,
    )
