"""A fake OpenAI-compatible chat server on 127.0.0.1, for tests and for trying the bot by hand.

Why a real server: openai 3.x talks through ``httpx2``, which respx does not intercept.
A stdlib ``ThreadingHTTPServer`` in a daemon thread works the same from sync
tests, async tests and subprocesses (``mnemobot chat`` with ``OPENAI_BASE_URL`` pointing here).

Usage::

    from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call, user_texts

    with FakeOpenAIServer() as server:
        server.script(tool_call("remember", {"fact": "likes tea"}), reply("Noted."))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...  # run the code under test against client / OPENAI_BASE_URL=server.base_url
        assert user_texts(server.last_request()) == ["I like tea"]

How a chat request is answered, in this order:

1. invalid JSON body -> 400; wrong ``Authorization`` while ``required_api_key`` is set -> 401;
   a broken message sequence while ``validate_messages`` is on -> 400, the way OpenAI answers
   (a ``tool`` message with no matching ``tool_calls`` and the reverse);
2. ``max_request_chars`` set and :func:`request_chars` of the body above it -> the context
   overflow error of ``overflow_form`` (see :func:`overflow`); likewise ``context_window``
   set and the request's tokens (:func:`request_tokens`, plus ``max_tokens`` except in the
   ``"llamacpp"`` form, which counts the prompt only, as llama.cpp does) above it;
3. otherwise the next scripted step (``server.script(...)``) or, when the script is empty,
   ``server.responder(body)``; the default responder answers ``"echo: <last user text>"``.

Every chat request that parsed as JSON is recorded (rejected ones too, marked as such) before
it is answered, so a test can inspect it even when the client gave up waiting.

Steps are small frozen dataclasses made by the factory functions :func:`reply`,
:func:`tool_call`, :func:`tool_calls`, :func:`error`, :func:`overflow`, :func:`delay`,
:func:`hang`, :func:`gated`, :func:`disconnect` and :func:`cut_stream`. Each one works for
both plain and ``stream=True`` requests.

Streaming (``stream=True``): server-sent events in OpenAI's order (role, text word by word,
tool-call deltas with arguments in fragments, finish, usage when ``stream_options`` asks,
``[DONE]``). ``tokens_per_second`` paces them the way a real model writes (a plain
answer comes after as long as its streamed tokens would take) (a word or an
argument fragment is a token); ``streams = False`` answers stream requests with a plain
JSON completion, as a server that cannot stream does; ``usage_in_streams = False`` sends
no usage in a stream whatever ``stream_options`` asks, and ``empty_stream_on_overflow``
answers a streamed request that overflows with an empty 200 event stream and drops the
connection, as llama-cpp-python's server does. ``first_token_times()`` says when each
streamed answer's first token went out.

Prompt caching: each answer says how much of its prompt the server could take from its cache,
the way a server that keeps the previous request's work does (llama.cpp, one slot): the
characters the request's prompt (:func:`prompt_chars_for_cache`) shares as a beginning with
the previous request's, over 4. ``cache_report`` says how: ``"openai"`` (default,
``usage.prompt_tokens_details.cached_tokens``), ``"llamacpp"`` (``timings.cache_n`` and
``prompt_n``, as llama.cpp's own server reports) or None (not at all).
``one_at_a_time`` answers one chat request at a time (a one-slot local server): the others
wait, unrecorded, until it is done. ``tools_dropped`` makes the model never see a request's
tools, silently, as llama-cpp-python's server does (``"always"``: without a function-calling
chat format; ``"without_tool_choice"``: with ``--chat_format chatml-function-calling``,
unless the request says ``tool_choice``; ``null_content_refused``: its HTTP 500 for a
message whose ``content`` is null or missing). ``strict_template`` makes the server refuse what
the strictest chat templates of local servers refuse: a system message after the first
message, and user and assistant turns that do not alternate starting with the user.

With ``context_window`` set, ``window_reported_by`` makes the server tell its window the way
a real one does: ``"vllm"`` (``max_model_len`` in ``/v1/models``), ``"llamacpp"`` (``/props``
``default_generation_settings.n_ctx``; its ``/v1/models`` names only the model's trained
length, ``meta.n_ctx_train``), ``"ollama"`` (``GET /api/ps`` ``context_length`` of the loaded
model; ``POST /api/show`` the trained length in ``model_info`` and, with ``ollama_num_ctx``,
a ``num_ctx`` line in ``parameters``; ``ollama_loaded = False``: nothing loaded, an empty
``/api/ps``) or ``"lmstudio"`` (``GET /api/v0/models`` ``loaded_context_length`` beside the
trained ``max_context_length``). ``trained_window`` is the trained length they name.

Speech and images: ``POST /v1/audio/transcriptions`` (the multipart upload the openai SDK
sends) is answered by ``transcriber`` and recorded in ``transcriptions``; with
``accepts_images`` False, a chat request holding an ``image_url`` part gets HTTP 400, as
from a text-only model; with ``decodes_images``, an image whose bytes are no PNG, JPEG,
GIF or WebP gets OpenAI's 400 for an image it cannot decode.

Run by hand: ``python -m mnemobot_tooling.fakes.openai_server [--port N] [--reply TEXT]
[--window N [--report-window llamacpp]]``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import email.parser
import email.policy
import itertools
import json
import math
import re
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypeAlias

from mnemobot.bot.llm.tool_support import TEST_TOOL_NAME
from mnemobot.systems.core.newest_context import split_context

__all__ = [
    "DEFAULT_MODELS",
    "Delay",
    "Disconnect",
    "ErrorResponse",
    "FakeOpenAIServer",
    "Gated",
    "Hang",
    "OverflowForm",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Step",
    "ToolCall",
    "ToolCalls",
    "Transcription",
    "Usage",
    "cached_prefix_chars",
    "context_text",
    "cut_stream",
    "delay",
    "disconnect",
    "echo_responder",
    "error",
    "gated",
    "hang",
    "message_text",
    "newest_context",
    "overflow",
    "reply",
    "request_chars",
    "request_tokens",
    "system_text",
    "tool_call",
    "tool_calls",
    "tool_messages",
    "user_texts",
]

DEFAULT_MODELS: tuple[str, ...] = ("gpt-4o-mini", "fake-model")

OverflowForm: TypeAlias = Literal["openai", "vllm", "llamacpp"]
WindowReporter: TypeAlias = Literal["vllm", "llamacpp", "ollama", "lmstudio"]


# --------------------------------------------------------------------------------------------
# Steps: what the server does with one chat-completions request
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """Token counts to report instead of the server's chars/4 estimate."""

    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Reply:
    """Answer with assistant text. ``finish_reason="length"`` mimics a truncated answer."""

    text: str
    finish_reason: Literal["stop", "length", "content_filter"] = "stop"
    usage: Usage | None = None


@dataclass(frozen=True)
class ToolCall:
    """One function call. ``arguments`` is sent verbatim (it may be invalid JSON on purpose).

    Used as a step on its own it answers with just this call; several go in :class:`ToolCalls`.
    ``call_id=None`` gets ``call_fake_<n>`` (n counts up per server) when answered.
    """

    name: str
    arguments: str
    call_id: str | None = None


@dataclass(frozen=True)
class ToolCalls:
    """Answer with several tool calls in one assistant message (``finish_reason="tool_calls"``)."""

    calls: tuple[ToolCall, ...]
    content: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True)
class ErrorResponse:
    """Answer with HTTP ``status`` and ``body`` (JSON-encoded unless it is a ``str``)."""

    status: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` (cut short when the server stops), then answer with ``then``."""

    seconds: float
    then: Step


@dataclass(frozen=True)
class Hang:
    """Never answer; the connection is dropped when the server stops. For timeout tests."""


@dataclass(frozen=True)
class Gated:
    """Wait until the test sets ``event`` (or the server stops), then answer with ``then``.

    For tests that need a turn to be "in flight" (``/status``, ``/stop``) for as long as they
    like, without timing assumptions.
    """

    event: threading.Event
    then: Step


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without answering: the SDK raises ``APIConnectionError``."""


@dataclass(frozen=True)
class CutStream:
    """A stream that stops after ``text`` with ``[DONE]`` but no finish reason (how
    llama-cpp-python ends a stream another request interrupted); a plain request gets
    ``text`` as a normal reply."""

    text: str


Step: TypeAlias = (
    Reply | ToolCall | ToolCalls | ErrorResponse | Delay | Hang | Gated | Disconnect | CutStream
)
Responder: TypeAlias = Callable[[dict[str, Any]], Step]


def reply(
    text: str,
    *,
    finish_reason: Literal["stop", "length", "content_filter"] = "stop",
    usage: Usage | None = None,
) -> Reply:
    """Assistant text answer."""
    return Reply(text, finish_reason, usage)


def tool_call(
    name: str, arguments: Mapping[str, Any] | str, call_id: str | None = None
) -> ToolCall:
    """One tool call; a mapping is JSON-encoded, a ``str`` is sent verbatim."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return ToolCall(name, encoded, call_id)


def tool_calls(
    calls: Iterable[ToolCall], *, content: str | None = None, usage: Usage | None = None
) -> ToolCalls:
    """Several tool calls in one response, e.g. ``tool_calls([tool_call(...), tool_call(...)])``."""
    return ToolCalls(tuple(calls), content, usage)


def _default_error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    if status == 429:
        return "requests"  # what OpenAI sends for request-rate limits
    return "invalid_request_error"


def error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str | None = None,  # the field name in OpenAI's error body
    param: str | None = None,
    retry_after: float | None = None,
) -> ErrorResponse:
    """An OpenAI-shaped error: ``{"error": {"message", "type", "param", "code"}}``.

    ``type`` defaults to ``server_error`` (5xx), ``requests`` (429) or ``invalid_request_error``.
    ``retry_after`` adds a ``Retry-After`` header (seconds).
    """
    body = {
        "error": {
            "message": message,
            "type": type or _default_error_type(status),
            "param": param,
            "code": code,
        }
    }
    headers: tuple[tuple[str, str], ...] = ()
    if retry_after is not None:
        seconds = int(retry_after) if float(retry_after).is_integer() else retry_after
        headers = (("Retry-After", str(seconds)),)
    return ErrorResponse(status, body, headers)


def overflow(
    form: OverflowForm = "openai",
    *,
    context_tokens: int = 4096,
    prompt_tokens: int = 5000,
    completion_tokens: int | None = None,
) -> ErrorResponse:
    """The 400 a server sends when the prompt does not fit its context.

    ``context_tokens`` is the model's window and ``prompt_tokens`` the size of the request the
    server complains about; both only appear in the message text / llama.cpp fields. With
    ``completion_tokens`` (the request's ``max_tokens``), the ``"openai"`` and ``"vllm"`` forms
    read the way vLLM and llama-cpp-python's server say it: "However, you requested 4285
    tokens (2237 in the messages, 2048 in the completion)".

    - ``"openai"``: ``error.code == "context_length_exceeded"``
      (SDK: ``exc.code == "context_length_exceeded"``);
    - ``"vllm"``: top-level ``{"object": "error", "message": "...maximum context length...",
      "code": 400}`` (SDK: ``exc.code == "400"``, ``"maximum context length" in exc.message``);
    - ``"llamacpp"``: ``error.type == "exceed_context_size_error"`` with ``n_prompt_tokens`` and
      ``n_ctx`` (SDK: ``exc.type``, ``exc.body["n_ctx"]``).
    """
    if completion_tokens is not None and form in ("openai", "vllm"):
        message = (
            f"This model's maximum context length is {context_tokens} tokens. However, you "
            f"requested {prompt_tokens + completion_tokens} tokens ({prompt_tokens} in the "
            f"messages, {completion_tokens} in the completion). Please reduce the length of "
            "the messages or completion."
        )
        if form == "openai":
            return error(400, message, code="context_length_exceeded", param="messages")
        return ErrorResponse(
            400,
            {
                "object": "error",
                "message": message,
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
        )
    if form == "openai":
        return ErrorResponse(
            400,
            {
                "error": {
                    "message": (
                        f"This model's maximum context length is {context_tokens} tokens. "
                        f"However, your messages resulted in {prompt_tokens} tokens. "
                        "Please reduce the length of the messages."
                    ),
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
        )
    if form == "vllm":
        # vLLM counts the reserved completion in what was "requested"; any plausible split will do.
        in_messages = prompt_tokens * 4 // 5
        return ErrorResponse(
            400,
            {
                "object": "error",
                "message": (
                    f"This model's maximum context length is {context_tokens} tokens. "
                    f"However, you requested {prompt_tokens} tokens ({in_messages} in the "
                    f"messages, {prompt_tokens - in_messages} in the completion). "
                    "Please reduce the length of the messages or completion."
                ),
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
        )
    if form == "llamacpp":
        return ErrorResponse(
            400,
            {
                "error": {
                    "code": 400,
                    "message": (
                        "the request exceeds the available context size, try increasing it"
                    ),
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt_tokens,
                    "n_ctx": context_tokens,
                }
            },
        )
    raise ValueError(f"unknown overflow form {form!r}; use 'openai', 'vllm' or 'llamacpp'")


def delay(seconds: float, then_step: Step) -> Delay:
    """Answer with ``then_step`` after ``seconds``; the wait ends early when the server stops."""
    return Delay(seconds, then_step)


def hang() -> Hang:
    """Never answer (until the server stops)."""
    return Hang()


def gated(event: threading.Event, then_step: Step) -> Gated:
    """Answer with ``then_step`` once ``event`` is set."""
    return Gated(event, then_step)


def disconnect() -> Disconnect:
    """Drop the connection without an answer."""
    return Disconnect()


def cut_stream(text: str) -> CutStream:
    """A stream cut short after ``text`` (no finish reason)."""
    return CutStream(text)


# --------------------------------------------------------------------------------------------
# Reading requests (pure functions on a recorded body, usable in assertions)
# --------------------------------------------------------------------------------------------


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one chat message, whether ``content`` is a string or a list of parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "")
        for part in content
        if isinstance(part, Mapping) and part.get("type") == "text"
    )


def user_texts(request: Mapping[str, Any]) -> list[str]:
    """Texts of the ``user`` messages of a request body, oldest first, as their writers
    wrote them: without the context the bot puts in front of the newest one
    (:func:`newest_context`)."""
    return [
        split_context(message_text(m))[1]
        for m in request.get("messages", [])
        if m.get("role") == "user"
    ]


def newest_context(request: Mapping[str, Any]) -> str:
    """The block of data the bot puts in front of the newest user message (the time, what
    memory recalled for it), without its frame; "" when there is none."""
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            return split_context(message_text(message))[0]
    return ""


def context_text(request: Mapping[str, Any]) -> str:
    """Everything the bot put beside the conversation for this request: the system
    messages and the newest user message's context (:func:`newest_context`)."""
    return "\n\n".join(part for part in (system_text(request), newest_context(request)) if part)


def _is_tool_check(body: Mapping[str, Any]) -> bool:
    """A request offering the bot's test tool alone (`mnemobot.bot.llm.tool_support`)."""
    tools = body.get("tools") or []
    return len(tools) == 1 and tools[0].get("function", {}).get("name") == TEST_TOOL_NAME


def system_text(request: Mapping[str, Any]) -> str:
    """The ``system`` (and ``developer``) messages of a request body, joined by a blank line."""
    return "\n\n".join(
        message_text(m)
        for m in request.get("messages", [])
        if m.get("role") in ("system", "developer")
    )


def tool_messages(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``tool`` result messages of a request body (``tool_call_id``, ``content``)."""
    return [m for m in request.get("messages", []) if m.get("role") == "tool"]


def request_chars(request: Mapping[str, Any]) -> int:
    """Size that ``max_request_chars`` is compared with: JSON length of ``messages`` + ``tools``.

    Non-ASCII text counts one char per character (``ensure_ascii=False``), not per escape.
    """
    size = len(json.dumps(request.get("messages", []), ensure_ascii=False))
    if request.get("tools"):
        size += len(json.dumps(request["tools"], ensure_ascii=False))
    return size


def request_tokens(request: Mapping[str, Any]) -> int:
    """The prompt tokens the fake counts for a request: :func:`request_chars` / 4, rounded up.

    JSON punctuation counts too, so this is a little above the bot's own estimate, the way a
    real tokenizer with its chat template often is.
    """
    return math.ceil(request_chars(request) / 4)


def prompt_chars_for_cache(request: Mapping[str, Any]) -> str:
    """The prompt as a caching server sees it, in order: the tool schemas (chat templates
    put them at the top), then the messages."""
    tools = json.dumps(request.get("tools") or [], ensure_ascii=False)
    return tools + json.dumps(request.get("messages", []), ensure_ascii=False)


def cached_prefix_chars(previous: str, current: str) -> int:
    """How many characters `current` begins with that `previous` began with too."""
    # Halving, with slices compared at C speed: prompts run to hundreds of KB.
    low, high = 0, min(len(previous), len(current))
    while low < high:
        middle = (low + high + 1) // 2
        if previous[:middle] == current[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _template_problem(request: Mapping[str, Any]) -> str | None:
    """What a strict chat template (Gemma's, Mistral's) refuses, in its words; None if fine."""
    messages = [m for m in request.get("messages") or [] if isinstance(m, Mapping)]
    if any(m.get("role") == "system" for m in messages[1:]):
        return "System message must be at the beginning."
    turns = [
        m.get("role")
        for m in messages
        if m.get("role") == "user" or (m.get("role") == "assistant" and not m.get("tool_calls"))
    ]
    if any(role != ("user" if index % 2 == 0 else "assistant") for index, role in enumerate(turns)):
        return "Conversation roles must alternate user/assistant/user/assistant/..."
    return None


def echo_responder(request: dict[str, Any]) -> Step:
    """Default responder: ``"echo: <text of the last user message>"``; a last message
    ``Call <tool>.`` naming a tool the request offers gets that call instead, as from a
    model that does what it is told (the bot's check that tools reach the model)."""
    texts = user_texts(request)
    last = texts[-1] if texts else ""
    told = re.fullmatch(r"Call (\w+)\.", last)
    offered = {(tool.get("function") or {}).get("name") for tool in request.get("tools") or []}
    if told and told[1] in offered and not tool_messages(request):
        return ToolCall(told[1], '{"ready": true}')
    return Reply(f"echo: {last}")


def _message_sequence_problem(request: Mapping[str, Any]) -> str | None:
    """What OpenAI would reject in ``model``/``messages``, in OpenAI's words; None if fine."""
    if not isinstance(request.get("model"), str) or not request["model"]:
        return "you must provide a model parameter"
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return "[] is too short - 'messages'"
    unanswered: list[str] = []  # tool_call ids of the last assistant message still owed a result
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            return f"Invalid type for 'messages[{position}]': expected an object."
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'."  # noqa: E501
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in unanswered:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."  # sic: OpenAI's spelling
                )
            unanswered.remove(call_id)
            continue
        if unanswered:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(unanswered)}"
            )
        if role == "assistant":
            unanswered = [call.get("id") for call in message.get("tool_calls") or []]
    if unanswered:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(unanswered)}"
        )
    return None


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One chat-completions request as the server saw it.

    ``headers`` has lower-case names (``record.headers["authorization"]``). ``rejected`` is
    True when the server answered with an error before consulting the script, and
    ``rejection`` then says why: ``"context_overflow"``, ``"invalid_request"`` or
    ``"unauthorized"``.
    """

    body: dict[str, Any]
    headers: dict[str, str]
    path: str
    rejection: str | None = None
    # Prompt tokens the server took from its cache (the beginning it shares with the
    # previous request, chars / 4).
    cached_tokens: int = 0

    @property
    def rejected(self) -> bool:
        return self.rejection is not None


class FakeOpenAIServer:
    """An OpenAI-compatible chat server on ``127.0.0.1`` (port 0 = a free port) in a thread.

    Use as a context manager or call :meth:`start` / :meth:`stop`. All methods are thread-safe;
    attributes (``responder``, ``max_request_chars``, ``overflow_form``, ``validate_messages``,
    ``required_api_key``, ``models``) may be changed between requests at any time.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        models: Iterable[str] = DEFAULT_MODELS,
        responder: Responder = echo_responder,
    ) -> None:
        # None: the server has no models list (GET /v1/models answers 404, as some do).
        self.models: list[str] | None = list(models)
        # Used when the script is empty; receives the request body, returns a step.
        self.responder: Responder = responder
        # When set, chat requests whose request_chars() exceed it get overflow(overflow_form).
        self.max_request_chars: int | None = None
        self.overflow_form: OverflowForm = "openai"
        # When set, the model's context window in tokens: requests that do not fit it get
        # overflow(overflow_form) with the real figures (see the module docstring).
        self.context_window: int | None = None
        # Which server's way of reporting context_window the fake imitates (None: it doesn't).
        self.window_reported_by: WindowReporter | None = None
        # The trained length of the model, which servers name beside the window they run.
        self.trained_window: int = 131_072
        # Ollama: a `num_ctx` the model's Modelfile sets (None: none, the server's default
        # applies); whether the model is loaded (listed by /api/ps).
        self.ollama_num_ctx: int | None = None
        self.ollama_loaded: bool = True
        # Reject broken tool-call sequences the way OpenAI does (catches real tool-loop bugs).
        self.validate_messages: bool = True
        # When set, requests must carry "Authorization: Bearer <key>" or get OpenAI's 401.
        self.required_api_key: str | None = None
        # False: a chat request with an image part gets HTTP 400, as from a text-only model.
        self.accepts_images: bool = True
        # True: an image part whose bytes are no image gets OpenAI's 400 for an image it
        # cannot decode (tests send placeholder bytes as photos, so off by default).
        self.decodes_images: bool = False
        # Answers POST /v1/audio/transcriptions: gets the upload, returns the text or an
        # error step. The default hears what follows b"SPEECH:" in the audio bytes (a test
        # writes the words it wants heard there), and nothing in any other audio.
        self.transcriber: Callable[[Transcription], str | ErrorResponse] = _default_transcriber
        self._transcriptions: list[Transcription] = []
        # Streams: the pace of a real model (None: as fast as the socket takes them); whether
        # stream requests are streamed at all; llama-cpp-python's empty 200 on an overflow.
        self.tokens_per_second: float | None = None
        self.streams: bool = True
        self.empty_stream_on_overflow: bool = False
        # False: a streamed request whose tools the model may call (`tool_choice`) gets an
        # empty 200 event stream, before the model runs, as llama-cpp-python's
        # chatml-function-calling answers it ("Automatic streaming tool choice is not
        # supported" in its log).
        self.streams_tool_choice: bool = True
        # False: a stream carries no usage whatever `stream_options` asks (llama-cpp-python).
        self.usage_in_streams: bool = True
        # Tools the model never sees, silently (`served_body`): "always" as llama-cpp-python
        # without a function-calling chat format; "without_tool_choice" as it with
        # `--chat_format chatml-function-calling`, which drops them from a request that does
        # not say `tool_choice` "auto" (or name a tool).
        self.tools_dropped: Literal["never", "always", "without_tool_choice"] = "never"
        # HTTP 500 for a message whose content is null (the form OpenAI itself answers tool
        # calls in) or missing, as llama-cpp-python's request schema and function-calling
        # template refuse them.
        self.null_content_refused: bool = False
        # The bot's check that tools reach the model (`mnemobot run` makes it at start
        # against a server on this machine: a request offering only the test tool) is
        # answered here as a model that uses tools would, kept in `tool_checks`, apart
        # from `requests` and the script; False sends it on like any request.
        self.answers_tool_checks: bool = True
        self._tool_checks: list[dict[str, Any]] = []
        # (when, the last user text of the request) per streamed answer's first token.
        self._first_tokens: list[tuple[float, str]] = []
        # How answers report the prompt tokens taken from the cache (module docstring).
        self.cache_report: Literal["openai", "llamacpp"] | None = "openai"
        # Refuse a late system message and roles that do not alternate (module docstring).
        self.strict_template: bool = False
        # Answer one chat request at a time, as llama.cpp's server with one slot does: the
        # others wait, unrecorded, until it is done (their clients' time runs meanwhile).
        self.one_at_a_time: bool = False
        self._slot = threading.Lock()
        self._previous_prompt = ""

        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._recorded_changed = threading.Condition(self._lock)
        self._records: list[RecordedRequest] = []
        self._script: deque[Step] = deque()
        self._completion_ids = itertools.count(1)
        self._call_ids = itertools.count(1)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        if self._httpd is not None:
            raise RuntimeError("FakeOpenAIServer is already started")
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", self._requested_port), self)
        # A short poll interval keeps stop() quick; serve_forever checks it between polls.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and end every request in progress; idempotent.

        Delayed, gated and hanging requests are woken and their connections dropped (the
        client sees a connection error). Raises RuntimeError if a handler is still busy after
        5 s, which only a responder that blocks forever can cause.
        """
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if stuck := httpd.end_handlers(timeout=5):
            raise RuntimeError(f"{stuck} fake OpenAI request handler(s) still busy after stop()")

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — pass as ``base_url=`` or ``OPENAI_BASE_URL``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script ----------------------------------------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Append steps; each chat request consumes the next one, in order."""
        with self._lock:
            self._script.extend(steps)

    @property
    def pending_steps(self) -> list[Step]:
        """Scripted steps not consumed yet (empty when the script ran to its end)."""
        with self._lock:
            return list(self._script)

    def clear_script(self) -> None:
        with self._lock:
            self._script.clear()

    # -- recorded requests -----------------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed JSON bodies of all chat-completions requests so far, in order (a copy)."""
        with self._lock:
            return [record.body for record in self._records]

    @property
    def recorded_requests(self) -> list[RecordedRequest]:
        """Same requests with headers, path and rejection mark (a copy)."""
        with self._lock:
            return list(self._records)

    def last_request(self) -> dict[str, Any]:
        with self._lock:
            if not self._records:
                raise AssertionError("the fake OpenAI server has received no chat requests")
            return self._records[-1].body

    def clear(self) -> None:
        """Forget recorded requests (the script and settings stay)."""
        with self._lock:
            self._records.clear()
            self._first_tokens.clear()

    def first_token_times(self) -> list[float]:
        """When (``time.time()``) each streamed answer's first text or tool-call delta went
        out, in the order they did."""
        with self._lock:
            return [at for at, _ in self._first_tokens]

    def first_token_time_for(self, user_text: str) -> float | None:
        """When the first streamed answer to a request whose last user message contains
        ``user_text`` sent its first token; None if none did."""
        with self._lock:
            return next((at for at, text in self._first_tokens if user_text in text), None)

    def _first_token_sent(self, body: dict[str, Any]) -> None:
        texts = user_texts(body)
        with self._lock:
            self._first_tokens.append((time.time(), texts[-1] if texts else ""))

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until at least ``count`` chat requests were recorded; returns their bodies.

        Do not call this from a coroutine whose own event loop must send those requests: use
        :meth:`wait_for_requests_async` there.
        """
        with self._recorded_changed:
            if not self._recorded_changed.wait_for(lambda: len(self._records) >= count, timeout):
                raise AssertionError(
                    f"expected {count} chat requests within {timeout}s, got {len(self._records)}"
                )
            return [record.body for record in self._records]

    async def wait_for_requests_async(
        self, count: int, timeout: float = 5.0
    ) -> list[dict[str, Any]]:
        """:meth:`wait_for_requests` without blocking the event loop."""
        return await asyncio.to_thread(self.wait_for_requests, count, timeout)

    # Request readers are module functions; also reachable here for convenience.
    user_texts = staticmethod(user_texts)
    system_text = staticmethod(system_text)
    tool_messages = staticmethod(tool_messages)

    # -- used by the request handler ---------------------------------------------------------------

    def _record(self, record: RecordedRequest) -> None:
        with self._recorded_changed:
            self._records.append(record)
            self._recorded_changed.notify_all()

    @property
    def transcriptions(self) -> list[Transcription]:
        """Every /v1/audio/transcriptions upload so far, oldest first."""
        with self._lock:
            return list(self._transcriptions)

    def _transcribe(self, upload: Transcription) -> str | ErrorResponse:
        with self._recorded_changed:
            self._transcriptions.append(upload)
            self._recorded_changed.notify_all()
        if self.required_api_key is not None and (
            upload.headers.get("authorization") != f"Bearer {self.required_api_key}"
        ):
            return error(401, "Incorrect API key provided.", code="invalid_api_key")
        return self.transcriber(upload)

    @property
    def tool_checks(self) -> list[dict[str, Any]]:
        """The bot's tool checks this server answered itself (`answers_tool_checks`)."""
        with self._lock:
            return list(self._tool_checks)

    def _decide(self, body: dict[str, Any], headers: dict[str, str], path: str) -> tuple[Step, int]:
        """Record the request and choose the step that answers it; with the prompt tokens
        its cache holds."""
        if self.answers_tool_checks and _is_tool_check(body):
            with self._lock:
                self._tool_checks.append(body)
            return tool_call(TEST_TOOL_NAME, {"ready": True}), 0
        rejection: str | None = None
        cached = 0
        step: Step | None = None
        if self.required_api_key is not None and (
            headers.get("authorization") != f"Bearer {self.required_api_key}"
        ):
            rejection = "unauthorized"
            step = error(
                401,
                "Incorrect API key provided. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                code="invalid_api_key",
            )
        elif not self.accepts_images and _has_image_part(body):
            rejection = "invalid_request"
            step = error(400, "image input is not supported by this model", param="messages")
        elif self.decodes_images and _has_unreadable_image(body):
            # OpenAI's words for an image it cannot decode (its code: image_parse_error).
            rejection = "invalid_request"
            step = error(
                400,
                "You uploaded an unsupported image. Please make sure your image is valid.",
                code="image_parse_error",
            )
        elif self.validate_messages and (problem := _message_sequence_problem(body)):
            rejection, step = "invalid_request", error(400, problem, param="messages")
        elif self.strict_template and (problem := _template_problem(body)):
            rejection, step = "invalid_request", error(400, problem)
        elif (
            not self.streams_tool_choice
            and body.get("stream")
            and body.get("tools")
            and body.get("tool_choice") not in (None, "none")
        ):
            rejection, step = "invalid_request", _TOOL_STREAM_REFUSED
        elif self.null_content_refused and any(
            isinstance(m, Mapping) and m.get("content") is None for m in body.get("messages") or []
        ):
            rejection = "invalid_request"
            step = error(500, "'dict object' has no attribute 'content'")
        elif self.max_request_chars is not None and (
            (size := request_chars(body)) > self.max_request_chars
        ):
            rejection = "context_overflow"
            # Token figures in the message follow the chars/4 estimate, so they look plausible.
            step = overflow(
                self.overflow_form,
                context_tokens=max(self.max_request_chars // 4, 1),
                prompt_tokens=math.ceil(size / 4),
            )
        elif step is None and (window_error := self._window_overflow(body)) is not None:
            rejection, step = "context_overflow", window_error
        with self._lock:
            if step is None and self._script:
                step = self._script.popleft()
            prompt = prompt_chars_for_cache(body)
            if rejection is None:
                cached = cached_prefix_chars(self._previous_prompt, prompt) // 4
                self._previous_prompt = prompt
        self._record(RecordedRequest(body, headers, path, rejection, cached))
        if step is None:
            step = self.responder(self.served_body(body))
        return step, cached

    def served_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as the model gets it: without its tools where `tools_dropped` says
        so (the responder and the usage see this; the recorded request is what was sent)."""
        if self.tools_dropped == "never" or not body.get("tools"):
            return body
        if self.tools_dropped == "without_tool_choice" and body.get("tool_choice") not in (
            None,
            "none",
        ):
            return body
        return {key: value for key, value in body.items() if key not in ("tools", "tool_choice")}

    def _window_overflow(self, body: dict[str, Any]) -> ErrorResponse | None:
        window = self.context_window
        if window is None:
            return None
        prompt = request_tokens(body)
        if self.overflow_form == "llamacpp":
            # llama.cpp refuses a prompt that does not fit; a long answer is just cut short.
            if prompt <= window:
                return None
            return overflow("llamacpp", context_tokens=window, prompt_tokens=prompt)
        completion = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        if not isinstance(completion, int) or prompt + completion <= window:
            return None
        if prompt > window:
            return overflow(self.overflow_form, context_tokens=window, prompt_tokens=prompt)
        return overflow(
            self.overflow_form,
            context_tokens=window,
            prompt_tokens=prompt,
            completion_tokens=completion,
        )

    def _window_report(self, path: str, body: dict[str, Any] | None) -> Any | None:
        """What `window_reported_by` answers on `path`; None when that server has no such path."""
        window, reporter = self.context_window, self.window_reported_by
        if window is None or reporter is None:
            return None
        if reporter == "llamacpp" and path == "/props" and body is None:
            return {
                "default_generation_settings": {"n_ctx": window, "temperature": 0.8},
                "total_slots": 1,
            }
        if reporter == "ollama" and path == "/api/ps" and body is None:
            loaded = [
                {"name": name, "model": name, "size_vram": 0, "context_length": window}
                for name in (self.models or [])
            ]
            return {"models": loaded if self.ollama_loaded else []}
        if reporter == "ollama" and path == "/api/show" and body is not None:
            parameters = "stop <|im_end|>"
            if self.ollama_num_ctx is not None:
                parameters += f"\nnum_ctx                        {self.ollama_num_ctx}"
            return {
                "parameters": parameters,
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": self.trained_window,
                },
            }
        if reporter == "lmstudio" and path == "/api/v0/models" and body is None:
            return {
                "object": "list",
                "data": [
                    {
                        "id": name,
                        "object": "model",
                        "type": "llm",
                        "state": "loaded",
                        "max_context_length": self.trained_window,
                        "loaded_context_length": window,
                    }
                    for name in (self.models or [])
                ],
            }
        return None

    def _next_completion_id(self) -> str:
        return f"chatcmpl-fake-{next(self._completion_ids)}"

    def _next_call_id(self) -> str:
        return f"call_fake_{next(self._call_ids)}"


# --------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that can end its handler threads: stop() drops their sockets and
    then waits for them (bounded), so no handler writes to a client after its test ended."""

    daemon_threads = True
    block_on_close = False  # we join our own handler threads, with a deadline

    def __init__(self, address: tuple[str, int], fake: FakeOpenAIServer) -> None:
        self.fake = fake
        self._open_lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._handlers: set[threading.Thread] = set()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        handler = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name="fake-openai-handler",
            daemon=True,
        )
        with self._open_lock:
            self._open.add(request)
            self._handlers.add(handler)
        handler.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._handlers.discard(threading.current_thread())

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def end_handlers(self, timeout: float) -> int:
        """Unblock handlers (idle keep-alive reads, half-written answers) and wait for them.

        Returns how many are still running after ``timeout`` seconds.
        """
        with self._open_lock:
            sockets, handlers = list(self._open), list(self._handlers)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for handler in handlers:
            handler.join(max(deadline - time.monotonic(), 0))
        return sum(handler.is_alive() for handler in handlers)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out or a stop() mid-answer breaks the socket; that is expected.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    # HTTP/1.1 keep-alive, like real servers; every answer carries a length or is chunked.
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    @property
    def fake(self) -> FakeOpenAIServer:
        return self.server.fake

    # -- routing -------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models" and self.fake.models is not None:
            data: list[dict[str, Any]] = [
                {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
                for name in self.fake.models
            ]
            if self.fake.window_reported_by == "vllm" and self.fake.context_window:
                for entry in data:
                    entry["max_model_len"] = self.fake.context_window
            if self.fake.window_reported_by == "llamacpp":
                for entry in data:
                    entry["meta"] = {"n_ctx_train": self.fake.trained_window, "n_vocab": 32000}
            self._send_json(200, {"object": "list", "data": data})
        elif (report := self.fake._window_report(path, None)) is not None:
            self._send_json(200, report)
        else:
            self._send_not_found()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/audio/transcriptions":
            self._answer_transcription(raw)
            return
        if path != "/v1/chat/completions":
            with contextlib.suppress(ValueError):
                report = self.fake._window_report(path, json.loads(raw or b"{}"))
                if report is not None:
                    return self._send_json(200, report)
            self._send_not_found()
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            self._answer_error(error(400, f"We could not parse the JSON body: {exc}"))
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        if not self._take_slot():
            return self._drop()
        try:
            cached = 0
            try:
                step, cached = self.fake._decide(body, headers, path)
            except Exception as exc:
                # A broken responder must show up in the test, not as a silent hang.
                traceback.print_exc()
                step = error(500, f"fake server responder raised {exc!r}")
            self._perform(step, body, cached)
        finally:
            if self.fake.one_at_a_time:
                self.fake._slot.release()

    def _take_slot(self) -> bool:
        """With `one_at_a_time`, wait for the one slot; False when the server stops first."""
        if not self.fake.one_at_a_time:
            return True
        while not self.fake._slot.acquire(timeout=0.05):
            if self.fake._stopping.is_set():
                return False
        return True

    def _answer_transcription(self, raw: bytes) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        upload = parse_transcription_upload(raw, headers)
        if upload is None:
            self._answer_error(error(400, "Could not parse multipart form"))
            return
        answer = self.fake._transcribe(upload)
        if isinstance(answer, ErrorResponse):
            self._answer_error(answer)
        else:
            self._send_json(200, {"text": answer})

    def _send_not_found(self) -> None:
        self._answer_error(
            error(404, f"Invalid URL ({self.command} {self.path})", type="invalid_request_error")
        )

    # -- steps -----------------------------------------------------------------------------------

    def _perform(self, step: Step, body: dict[str, Any], cached: int = 0) -> None:
        stopping = self.fake._stopping
        # Unwrap waits first; a stop during the wait drops the connection unanswered.
        while isinstance(step, Delay | Gated | Hang):
            if isinstance(step, Delay):
                if stopping.wait(step.seconds):
                    return self._drop()
                step = step.then
            elif isinstance(step, Gated):
                while not step.event.wait(0.05):
                    if stopping.is_set():
                        return self._drop()
                step = step.then
            else:
                stopping.wait()
                return self._drop()
        if isinstance(step, Disconnect):
            return self._drop()
        streamed = bool(body.get("stream")) and self.fake.streams
        if isinstance(step, ErrorResponse):
            if streamed and self.fake.empty_stream_on_overflow and _is_overflow(step):
                return self._empty_stream()
            if step is _TOOL_STREAM_REFUSED:
                return self._empty_stream()
            return self._answer_error(step)
        if isinstance(step, CutStream):
            if streamed:
                return self._stream(body, step.text, [], None, _usage_json(body, "", [], None))
            step = Reply(step.text)
        if isinstance(step, ToolCall):
            step = ToolCalls((step,))
        content: str | None
        finish_reason: str
        if isinstance(step, Reply):
            content, finish_reason, resolved = step.text, step.finish_reason, []
        else:
            content, finish_reason = step.content, "tool_calls"
            resolved = [(call.call_id or self.fake._next_call_id(), call) for call in step.calls]
        usage = _usage_json(self.fake.served_body(body), content, resolved, step.usage)
        timings = self._report_cache(usage, cached)
        if streamed:
            self._stream(body, content, resolved, finish_reason, usage, timings)
        else:
            rate = self.fake.tokens_per_second
            if rate:
                # A model writes at its pace whether or not the answer is streamed.
                tokens = len(_WORD_PIECES.findall(content or "")) + sum(
                    -(-len(call.arguments) // _ARGUMENT_PIECE_CHARS) for _, call in resolved
                )
                if self.fake._stopping.wait(tokens / rate):
                    return self._drop()
            document = _completion_json(self.fake, body, content, resolved, finish_reason, usage)
            if timings is not None:
                document["timings"] = timings
            self._send_json(200, document)

    def _report_cache(self, usage: dict[str, Any], cached: int) -> dict[str, Any] | None:
        """Tell the cached prompt tokens as `cache_report` says: in `usage` (OpenAI), or as
        llama.cpp's `timings`, returned for the answer to carry."""
        cached = min(cached, int(usage["prompt_tokens"]))
        if self.fake.cache_report == "openai":
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        elif self.fake.cache_report == "llamacpp":
            return {
                "cache_n": cached,
                "prompt_n": int(usage["prompt_tokens"]) - cached,
                "predicted_n": int(usage["completion_tokens"]),
            }
        return None

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- writing ---------------------------------------------------------------------------------

    def _answer_error(self, step: ErrorResponse) -> None:
        if isinstance(step.body, str):
            payload, content_type = step.body.encode(), "text/plain; charset=utf-8"
        else:
            payload, content_type = json.dumps(step.body).encode(), "application/json"
        self._send(step.status, payload, content_type, step.headers)

    def _send_json(self, status: int, document: Any) -> None:
        self._send(status, json.dumps(document).encode(), "application/json")

    def _send(
        self,
        status: int,
        payload: bytes,
        content_type: str,
        extra_headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-request-id", f"req_fake_{time.monotonic_ns()}")
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _stream_headers(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", f"req_fake_{time.monotonic_ns()}")
        self.end_headers()

    def _empty_stream(self) -> None:
        """llama-cpp-python's answer to a streamed request that overflows: 200, no events,
        and a connection that is not good for another request."""
        self._stream_headers()
        self._write_chunk("")
        self._drop()

    def _stream(
        self,
        body: dict[str, Any],
        content: str | None,
        calls: list[tuple[str, ToolCall]],
        finish_reason: str | None,
        usage: dict[str, Any],
        timings: dict[str, Any] | None = None,
    ) -> None:
        """Server-sent events, chunked like OpenAI's: role, deltas, finish, [usage], [DONE].

        Without a finish reason the stream stops after the deltas (a cut stream)."""
        self._stream_headers()
        completion_id = self.fake._next_completion_id()
        include_usage = self.fake.usage_in_streams and bool(
            (body.get("stream_options") or {}).get("include_usage")
        )
        rate = self.fake.tokens_per_second
        first = True
        for delta, finish in _stream_deltas(content, calls, finish_reason or "stop"):
            if finish is not None and finish_reason is None:
                break
            token = bool(delta.get("content") or delta.get("tool_calls"))
            if token and rate and not first and self.fake._stopping.wait(1 / rate):
                return self._drop()
            chunk = _chunk_json(completion_id, body, delta, finish)
            if finish is not None and timings is not None:
                chunk["timings"] = timings  # llama.cpp's server: on the finishing chunk
            if include_usage:
                chunk["usage"] = None  # OpenAI sends null on every chunk but the last
            self._write_chunk(f"data: {json.dumps(chunk)}\n\n")
            if token and first:
                first = False
                self.fake._first_token_sent(body)
        if finish_reason is None:
            self._write_chunk("data: [DONE]\n\n")
            self._write_chunk("")
            return
        if include_usage:
            chunk = _chunk_json(completion_id, body, None, None)
            chunk["choices"], chunk["usage"] = [], usage
            self._write_chunk(f"data: {json.dumps(chunk)}\n\n")
        self._write_chunk("data: [DONE]\n\n")
        self._write_chunk("")  # zero-length chunk ends the body

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


# --------------------------------------------------------------------------------------------
# Response documents
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transcription:
    """One upload to /v1/audio/transcriptions: the form's fields and the audio file."""

    fields: dict[str, str]
    file_name: str
    audio: bytes
    headers: dict[str, str]


def parse_transcription_upload(raw: bytes, headers: Mapping[str, str]) -> Transcription | None:
    """The multipart/form-data body the openai SDK sends, read with the stdlib."""
    content_type = headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        return None
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    fields: dict[str, str] = {}
    file_name, audio = "", b""
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        decoded = part.get_payload(decode=True)
        payload = decoded if isinstance(decoded, bytes) else b""
        if part.get_filename() is not None:
            file_name, audio = part.get_filename() or "", payload
        elif isinstance(name, str):
            fields[name] = payload.decode("utf-8", "replace")
    if not audio:
        return None
    return Transcription(fields, file_name, audio, dict(headers))


def _default_transcriber(upload: Transcription) -> str:
    _, marker, heard = upload.audio.partition(b"SPEECH:")
    return heard.decode("utf-8", "replace").strip() if marker else ""


def _has_image_part(body: Mapping[str, Any]) -> bool:
    return any(
        isinstance(part, Mapping) and part.get("type") == "image_url"
        for message in body.get("messages") or []
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


# The first bytes of the images a vision model decodes: PNG, JPEG, GIF, WebP (RIFF).
_IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF")


def _has_unreadable_image(body: Mapping[str, Any]) -> bool:
    """Whether an image part's data URL holds bytes that are no image at all."""
    for message in body.get("messages") or []:
        if not isinstance(message.get("content"), list):
            continue
        for part in message["content"]:
            if not (isinstance(part, Mapping) and part.get("type") == "image_url"):
                continue
            url = str((part.get("image_url") or {}).get("url") or "")
            if not url.startswith("data:"):
                continue
            try:
                head = base64.b64decode(url.split(",", 1)[-1][:16], validate=False)
            except ValueError:
                return True
            if not head.startswith(_IMAGE_MAGIC):
                return True
    return False


# What `streams_tool_choice = False` answers (as an empty stream).
_TOOL_STREAM_REFUSED = ErrorResponse(500, "Automatic streaming tool choice is not supported")


def _is_overflow(step: ErrorResponse) -> bool:
    text = json.dumps(step.body).lower()
    return "context" in text and step.status in (400, 413)


def _usage_json(
    body: Mapping[str, Any],
    content: str | None,
    calls: list[tuple[str, ToolCall]],
    explicit: Usage | None,
) -> dict[str, Any]:
    if explicit is not None:
        prompt, completion = explicit.prompt_tokens, explicit.completion_tokens
    else:
        produced = len(content or "") + sum(len(c.name) + len(c.arguments) for _, c in calls)
        prompt, completion = math.ceil(request_chars(body) / 4), max(math.ceil(produced / 4), 1)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _tool_call_json(call_id: str, call: ToolCall) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _completion_json(
    fake: FakeOpenAIServer,
    body: Mapping[str, Any],
    content: str | None,
    calls: list[tuple[str, ToolCall]],
    finish_reason: str,
    usage: dict[str, Any],
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = [_tool_call_json(call_id, call) for call_id, call in calls]
    return {
        "id": fake._next_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "system_fingerprint": "fp_fake",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": usage,
    }


def _chunk_json(
    completion_id: str, body: Mapping[str, Any], delta: dict[str, Any] | None, finish: str | None
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
    }


_WORD_PIECES = re.compile(r"\s*\S+\s*|\s+")
_ARGUMENT_PIECE_CHARS = 8


def _stream_deltas(
    content: str | None, calls: list[tuple[str, ToolCall]], finish_reason: str
) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Deltas in OpenAI's order; text goes word by word and arguments in small fragments, so
    clients must really accumulate (a client that keeps only the last delta fails)."""
    yield {"role": "assistant", "content": "", "refusal": None}, None
    for piece in _WORD_PIECES.findall(content or ""):
        yield {"content": piece}, None
    for index, (call_id, call) in enumerate(calls):
        yield (
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            },
            None,
        )
        for start in range(0, len(call.arguments), _ARGUMENT_PIECE_CHARS):
            fragment = call.arguments[start : start + _ARGUMENT_PIECE_CHARS]
            yield {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}, None
    yield {}, finish_reason


# --------------------------------------------------------------------------------------------
# Command line: python -m mnemobot_tooling.fakes.openai_server
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mnemobot_tooling.fakes.openai_server",
        description="Serve a fake OpenAI-compatible chat API on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: any free)")
    parser.add_argument("--reply", help="always answer with this text (default: echo)")
    parser.add_argument(
        "--window", type=int, help="context window in tokens; bigger requests get overflow errors"
    )
    parser.add_argument(
        "--overflow-form",
        choices=("openai", "vllm", "llamacpp"),
        default="openai",
        help="how overflow errors read (default: openai)",
    )
    parser.add_argument(
        "--report-window",
        choices=("vllm", "llamacpp", "ollama", "lmstudio"),
        help="tell the --window the way this server does (default: not at all)",
    )
    args = parser.parse_args(argv)

    fixed = Reply(args.reply) if args.reply is not None else None

    def answer_and_log(request: dict[str, Any]) -> Step:
        texts = user_texts(request)
        step = fixed or echo_responder(request)
        print(
            f"<- {request.get('model')} ({len(request.get('messages', []))} messages): "
            f"{texts[-1] if texts else ''!r}",
            file=sys.stderr,
            flush=True,
        )
        return step

    with FakeOpenAIServer(port=args.port, responder=answer_and_log) as server:
        server.context_window = args.window
        server.overflow_form = args.overflow_form
        server.window_reported_by = args.report_window
        print(server.base_url, flush=True)
        print(
            f"try: OPENAI_BASE_URL={server.base_url} OPENAI_API_KEY=test mnemobot chat",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
