"""The chat model on `openai.AsyncOpenAI`, with failures classified for the pipeline.

It also knows the model's context window once it has been told: by the server (vLLM's
`/v1/models`, llama.cpp's `/props`, Ollama's `/api/show`), or by the first overflow error
that states it. Then every request asks for only as many answer tokens as still fit, and
a request refused only because its answer budget was too big is sent again, smaller.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import openai
import orjson
from openai.types.chat import ChatCompletion

from mnemobot.bot.llm.window_reports import (
    MIN_ANSWER_TOKENS,
    answer_tokens_that_fit,
    overflow_figures,
    server_root,
    window_in_models_list,
    window_in_ollama_show,
    window_in_props,
)
from mnemobot.memory.model_windows import ModelWindow, ModelWindowStore
from mnemobot.memory.session import valid_unicode
from mnemobot.systems.llm import ChatRequest, ChatResponse, LLMError, LLMFailureKind, ToolCall
from mnemobot.systems.request_messages import estimate_request_tokens

log = logging.getLogger(__name__)

# Asking the server for its window must not hold up the first reply for long.
PROBE_TIMEOUT_SECONDS = 5.0

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


class OpenAIChatModel:
    """ChatModel on the openai SDK; the SDK retries 429/5xx with backoff (`max_retries`).

    Context windows learned here are kept in `windows` (the workspace's
    `preferences/model-windows.json`) when given, else for this run only.
    """

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        max_retries: int = 2,
        timeout_seconds: float = 120,
        windows: ModelWindowStore | None = None,
    ) -> None:
        # Local servers (llama.cpp, Ollama, vLLM) accept any key; without one the SDK refuses
        # to start, so a placeholder lets the server itself decide.
        base_url, basic_auth = split_credentials(base_url)
        self.client = openai.AsyncOpenAI(
            api_key=api_key or "not-set",
            base_url=base_url,
            # `user:password@` in the URL is HTTP Basic auth (a proxy in front of the
            # server); it takes the one Authorization header the API key would have used.
            default_headers={"Authorization": basic_auth} if basic_auth else None,
            max_retries=max_retries,
            timeout=timeout_seconds,
            # The SDK's aiohttp transport: its default httpx stack was about 40% of the
            # bot's CPU per reply under load (cProfile of `mnemobot bench telegram`).
            http_client=openai.DefaultAioHttpClient(timeout=timeout_seconds),
        )
        self.windows = windows
        self._learned: dict[str, ModelWindow] = {}
        # Models whose server was asked for the window in this run.
        self._asked: set[str] = set()

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    # -- context window ----------------------------------------------------------------------------

    def known_window(self, model: str) -> ModelWindow | None:
        """The window learned for `model` at this endpoint, in this run or an earlier one."""
        found = self._learned.get(model)
        if found is None and self.windows is not None:
            found = self.windows.get(self.base_url, model)
            if found is not None:
                self._learned[model] = found
        return found

    async def context_window(self, model: str) -> ModelWindow | None:
        """The window of `model`: asked of the server once per run, else as learned before."""
        if model not in self._asked:
            reported, reached = await self._ask_server_for_window(model)
            if reached:
                self._asked.add(model)
            if reported is not None:
                await self._remember_window(model, reported)
        return self.known_window(model)

    async def _remember_window(self, model: str, window: ModelWindow) -> None:
        known = self.known_window(model)
        if known is not None and known.tokens == window.tokens:
            return
        log.info("context window of %s: %s", model, window.describe())
        self._learned[model] = window
        if self.windows is not None:
            # A small fsynced write, off the event loop all the same.
            await asyncio.to_thread(self.windows.put, self.base_url, model, window)
            self._learned[model] = self.windows.get(self.base_url, model) or window

    async def _ask_server_for_window(self, model: str) -> tuple[ModelWindow | None, bool]:
        """(window the server reports, whether the server answered at all)."""
        options: Any = {"timeout": PROBE_TIMEOUT_SECONDS, "max_retries": 0}
        root = server_root(self.base_url)
        probes = (
            (lambda: self.client.get("/models", cast_to=object, options=options)),
            (lambda: self.client.get(f"{root}/props", cast_to=object, options=options)),
            (
                lambda: self.client.post(
                    f"{root}/api/show", cast_to=object, body={"model": model}, options=options
                )
            ),
        )
        readers = (
            lambda document: window_in_models_list(document, model),
            window_in_props,
            window_in_ollama_show,
        )
        reached = False
        for probe, read in zip(probes, readers, strict=True):
            try:
                document = await probe()
            except (openai.APIConnectionError, openai.APITimeoutError):
                return None, reached
            except Exception:  # an error status, or a body that is no JSON document
                reached = True  # not this kind of server
                continue
            reached = True
            if (window := read(document)) is not None:
                return window, True
        return None, reached

    # -- completions -------------------------------------------------------------------------------

    async def complete(self, request: ChatRequest) -> ChatResponse:
        window = self.known_window(request.model)
        max_tokens = request.max_output_tokens
        if window is not None:
            prompt = estimate_request_tokens(request.messages, request.tools)
            max_tokens = answer_tokens_that_fit(window.tokens, prompt, max_tokens)
        try:
            try:
                return await self._complete(request, max_tokens)
            except LLMError as error:
                smaller = await self._learn_from_overflow(request, max_tokens, error)
                if smaller is None:
                    raise
                return await self._complete(request, smaller)
        except LLMError as error:
            log.warning("LLM call failed: %s", error)
            raise

    async def _learn_from_overflow(
        self, request: ChatRequest, max_tokens: int, error: LLMError
    ) -> int | None:
        """After an overflow error that states the window: the smaller max_tokens worth a
        retry, or None when the prompt itself does not fit (then it must be compacted)."""
        if error.kind is not LLMFailureKind.CONTEXT_OVERFLOW or error.context_window is None:
            return None
        window = error.context_window
        await self._remember_window(request.model, ModelWindow(window, "overflow error"))
        if error.prompt_tokens is not None:
            room = window - error.prompt_tokens
            floor = min(MIN_ANSWER_TOKENS, window // 8)
            return room if floor <= room < max_tokens else None
        prompt = estimate_request_tokens(request.messages, request.tools)
        smaller = answer_tokens_that_fit(window, prompt, request.max_output_tokens)
        return smaller if smaller < max_tokens else None

    async def _complete(self, request: ChatRequest, max_tokens: int) -> ChatResponse:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": max_tokens,
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
            raise classify_openai_error(exc) from None
        except Exception as exc:
            # Something the SDK does not classify (a body it cannot read): one line, the
            # turn gets its apology, no traceback.
            raise LLMError(
                LLMFailureKind.UNAVAILABLE, f"the model call failed ({type(exc).__name__})"
            ) from None
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
        except Exception as exc:  # a body that is no models list
            raise LLMError(
                LLMFailureKind.UNAVAILABLE, f"the models list cannot be read ({type(exc).__name__})"
            ) from None
        return [model.id for model in page.data]

    async def close(self) -> None:
        await self.client.close()
