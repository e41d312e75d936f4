"""The chat model on `openai.AsyncOpenAI`, with failures classified for the pipeline.

It also knows the model's context window once it has been told: by the server (vLLM's
`/v1/models`, llama.cpp's `/props`, LM Studio's `/api/v0/models`, Ollama's `/api/ps` and
`/api/show`), asked in the background when the bot starts and for each model it is first
asked about, or by the first overflow error that states it. Then every request asks for
only as many answer tokens as still fit, and a request refused only because its answer
budget was too big is sent again, smaller. Until then a server on this machine or network
is asked for a small reply, not for what may be its whole window.

Images are learned the same way (`llm.vision` "auto"): a request with image parts that the
server refuses is sent again with a note in their place, and once that is answered, and a
sound image of our own is refused too (`image_probe`; one stranger's damaged file is not
the model's fault), the model is known to take no images. (About 660 lines: windows,
images and streams are what the server says about one model, each a few lines in
`complete`'s path; what goes on the wire and comes back is `wire_format`.)

A request with `on_text` is streamed (server-sent events; see `chat_stream`). A server
that answers it with a whole JSON completion is read as one; a stream that ends without a
finish reason (an empty body: llama-cpp-python's overflow; a stream cut by the server or
the network) is asked for once more without streaming, so an overflow error shows up as
the error it is and the context window is learned the usual way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

import openai
import orjson
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.llm.chat_stream import StreamedAnswer
from mnemobot.bot.llm.errors import classify_openai_error, server_detail
from mnemobot.bot.llm.image_probe import ImageProbes
from mnemobot.bot.llm.model_gate import ModelGate
from mnemobot.bot.llm.tool_support import TOOLS_OFF, log_tool_support
from mnemobot.bot.llm.window_probe import PROBE_TIMEOUT_SECONDS, ask_server_for_window
from mnemobot.bot.llm.window_reports import (
    MIN_ANSWER_TOKENS,
    answer_limit,
    answer_tokens_that_fit,
    answer_tokens_without_window,
    is_local_endpoint,
)
from mnemobot.bot.llm.wire_format import (
    is_event_stream,
    messages_on_the_wire,
    refuses_tool_choice,
    request_options,
    response_from_completion,
    split_credentials,
)
from mnemobot.model.vision import ModelVisionStore
from mnemobot.model.windows import ModelWindow, ModelWindowStore
from mnemobot.systems.core.llm import (
    ChatRequest,
    ChatResponse,
    GaveWayToReply,
    LLMError,
    LLMFailureKind,
)
from mnemobot.systems.model_call.image_parts import (
    NO_VISION_NOTE,
    UNREADABLE_IMAGE_NOTE,
    has_images,
    without_images,
)
from mnemobot.systems.model_call.request_messages import estimate_request_tokens

log = logging.getLogger(__name__)

# A request failing this fast after a broken-off stream failed on the connection the
# stream left, not on the server: it is sent once more.
STALE_CONNECTION_SECONDS = 1.0
_CONNECTION_FAILURES = frozenset({LLMFailureKind.UNAVAILABLE, LLMFailureKind.TIMEOUT})
# Empty answers in a row with tool_choice said before requests stop saying it. Not
# measured as a rate: SmolLM2-135M behind llama-cpp-python (chatml-function-calling) gave
# one on every turn that called no tool; a model able to use tools rarely gives any, and
# each costs one more call.
EMPTY_ANSWERS_BEFORE_NO_TOOL_CHOICE = 3


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
        vision: ModelVisionStore | None = None,
        gate: ModelGate | None = None,
        clock: Clock = SYSTEM_CLOCK,
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
        # Which call goes to the server when (replies first); no gate: each at once.
        self.gate = gate or ModelGate(lambda: 0)
        # Models whose server refused an image (`llm.vision` "auto"), kept across restarts
        # in `vision` when given.
        self.vision = vision
        self._refusing_images: set[str] = set()
        # Whether models answer a sound image of ours (`image_probe`).
        self._image_probes = ImageProbes(self._complete_fitted, clock)
        # Whether to ask for token usage at the end of a stream; off once a server refused
        # `stream_options` (some OpenAI-compatible servers reject what they do not know).
        self._usage_in_streams = True
        # Whether requests with tools say `tool_choice`; off once a server refused it.
        self._tool_choice = True
        # Models whose requests with tool_choice do not stream: the server streamed nothing
        # for one and answered it whole (`_sent`); kept across restarts in `vision`.
        self._no_tool_choice_streams: set[str] = set()
        # Answers in a row that were empty with tool_choice said (see _complete).
        self._empty_with_tool_choice = 0
        self._learned: dict[str, ModelWindow] = {}
        # Models whose server was asked for the window in this run, those of them it said
        # nothing about, and the askings under way (shared by whoever waits for them).
        self._asked: set[str] = set()
        self._unstated: set[str] = set()
        self._probes: dict[str, asyncio.Task[None]] = {}
        # A server on this machine or network: until it says its window, answers are small.
        self.local = is_local_endpoint(base_url)
        self._tool_check: asyncio.Task[None] | None = None
        # The tool check's verdict per model: this run's, else the last run's (kept in
        # `vision`) until this run's check ends (a server restarted with tools gets them).
        self._tool_verdicts: dict[str, str] = {}

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

    def window_unstated(self, model: str) -> bool:
        """Whether the server was asked for `model`'s window in this run and did not say,
        and nothing else taught it (then the configured window is an assumption)."""
        return model in self._unstated and self.known_window(model) is None

    def start_window_probe(self, model: str) -> None:
        """Ask the server for `model`'s window in the background (at start), unless it was
        asked in this run already or is being asked; call inside the event loop."""
        if model not in self._asked and model not in self._probes:
            self._probes[model] = asyncio.create_task(
                self._probe_window(model), name=f"window-probe-{model}"
            )

    async def context_window(self, model: str) -> ModelWindow | None:
        """The window of `model`: asked of the server once per run, else as learned before.
        Waits for the asking at most PROBE_TIMEOUT_SECONDS; it goes on behind the caller."""
        self.start_window_probe(model)
        probe = self._probes.get(model)
        if probe is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(probe), PROBE_TIMEOUT_SECONDS)
        return self.known_window(model)

    async def _probe_window(self, model: str) -> None:
        try:
            reported, reached = await ask_server_for_window(self.client, model)
            if reached:
                self._asked.add(model)
                if reported is None:
                    self._unstated.add(model)
                    learned = self.known_window(model)
                    if learned is not None:
                        log.info(
                            "the server does not say the context window of %s; the one "
                            "learned before is used: %s",
                            model,
                            learned.describe(),
                        )
                    else:
                        log.info(
                            "the server does not say the context window of %s; until an "
                            "overflow error states it, llm.maxInputTokens is assumed",
                            model,
                        )
            if reported is not None:
                await self._remember_window(model, reported)
        except Exception:  # asking is a courtesy: an overflow error teaches the window too
            log.warning("asking the server for the window of %s failed", model, exc_info=True)
        finally:
            self._probes.pop(model, None)

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

    def start_tool_check(self, model: str) -> None:
        """Ask once, in the background, whether the server passes tools to `model`, and
        log one line (`tool_support`); call inside the event loop."""
        if self._tool_check is None:
            self._tool_check = asyncio.create_task(
                self._check_tools(model), name=f"tool-check-{model}"
            )

    async def _check_tools(self, model: str) -> None:
        found = await log_tool_support(self, model)
        if found is None:
            # Not asked (the server was down or slow at start): tools are offered, as
            # before any check; a kept verdict never outlives the check that could renew it.
            return
        kept = self._kept_tools_verdict(model)
        self._tool_verdicts[model] = found.verdict
        if self.vision is not None and found.verdict != kept:
            await asyncio.to_thread(
                self.vision.remember_tools_verdict, self.base_url, model, found.verdict
            )

    def _kept_tools_verdict(self, model: str) -> str | None:
        """The last run's verdict on `model`'s tools here (`vision`); None: none kept."""
        if self.vision is None:
            return None
        return self.vision.tools_verdict(self.base_url, model)

    def checking_tools(self) -> bool:
        """Whether the start-up check of tools is still waiting for the server: not once
        its verdict is known, while the check still writes it down for the next run."""
        return (
            self._tool_check is not None and not self._tool_check.done() and not self._tool_verdicts
        )

    def drops_tools(self, model: str) -> bool:
        """Whether the server was found to drop the tools of `model`'s requests, or to refuse
        requests with tools (then none are offered: the model would be told of tools it
        cannot call, or every turn would fail): by this run's check, or while it runs by
        the last run's, so the first turns' prompt is the one the last run ended with. A
        check that got no answer, or a model it did not ask about, leaves tools offered."""
        verdict = self._tool_verdicts.get(model)
        if verdict is None and self.checking_tools():
            verdict = self._kept_tools_verdict(model)
        return verdict in TOOLS_OFF

    # -- images ------------------------------------------------------------------------------------

    def refuses_images(self, model: str) -> bool:
        """Whether `model`'s server refused an image before (in this run or an earlier one)."""
        if model in self._refusing_images:
            return True
        if self.vision is not None and self.vision.refuses_images(self.base_url, model):
            self._refusing_images.add(model)
            return True
        return False

    async def _remember_refusal(self, model: str, error: LLMError) -> None:
        log.warning(
            "%s refused an image (%s); images go to it as a note from now on (llm.vision "
            "auto; delete preferences/model-vision.json to try again)",
            model,
            server_detail(error.detail, 200),
        )
        self._refusing_images.add(model)
        if self.vision is not None:
            await asyncio.to_thread(
                self.vision.remember_refusal, self.base_url, model, server_detail(error.detail)
            )

    async def _complete_with_images(self, request: ChatRequest) -> ChatResponse:
        """A request with image parts, as `llm.vision` says: sent as it is, or with a note in
        their place for a model that takes none. In "auto", a refused image is told from a
        model that takes none by a sound image of our own (`image_probe`): only the latter
        is learned, and only once the request without its images is answered (so an outage
        is never mistaken for one); a file that is no image turns off nothing."""
        if request.vision == "off" or (
            request.vision == "auto" and self.refuses_images(request.model)
        ):
            return await self._complete_without_images(request)
        try:
            return await self._complete_fitted(request)
        except LLMError as error:
            if request.vision != "auto" or not _refusal(error) or request.require_images:
                raise
            takes_images = await self._image_probes.takes_images(request)
            if takes_images:
                log.warning(
                    "%s refused an image it was sent, but takes a sound one: that image is "
                    "unreadable (%s)",
                    request.model,
                    server_detail(error.detail, 200),
                )
                return await self._complete_without_images(request, UNREADABLE_IMAGE_NOTE)
            response = await self._complete_without_images(request)
            if takes_images is False:
                await self._remember_refusal(request.model, error)
            return response

    async def _complete_without_images(
        self, request: ChatRequest, note: str = NO_VISION_NOTE
    ) -> ChatResponse:
        if request.require_images:
            raise LLMError(LLMFailureKind.BAD_REQUEST, "the model takes no images (llm.vision)")
        plain = replace(request, messages=without_images(request.messages, note))
        response = await self._complete_fitted(plain)
        response.images_dropped = True
        return response

    # -- completions -------------------------------------------------------------------------------

    async def complete(self, request: ChatRequest) -> ChatResponse:
        # Replies first on a server that takes few requests at once (`model_gate`); the
        # call's deadline starts once it may go.
        async with self.gate.admitted(gives_way=request.yields_to_replies) as give_way:
            if give_way is None:
                return await self._complete_in_time(request)
            # Streamed: a server stops a stream its client closed, not always a request.
            if request.on_text is None:
                request = replace(request, on_text=_ignore_text)
            return await _unless_told_to_give_way(self._complete_in_time(request), give_way)

    async def _complete_in_time(self, request: ChatRequest) -> ChatResponse:
        if request.deadline_seconds is None:
            return await self._complete_any(request)
        deadline = asyncio.timeout(request.deadline_seconds)
        try:
            async with deadline:
                return await self._complete_any(request)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise LLMError(
                LLMFailureKind.TIMEOUT,
                f"no answer within {request.deadline_seconds:g} s",
            ) from None

    async def _complete_any(self, request: ChatRequest) -> ChatResponse:
        if has_images(request.messages):
            return await self._complete_with_images(request)
        return await self._complete_fitted(request)

    async def _complete_fitted(self, request: ChatRequest) -> ChatResponse:
        """One completion asking for as many answer tokens as the known window leaves."""
        window = self.known_window(request.model)
        max_tokens = request.max_output_tokens
        if window is not None:
            prompt = estimate_request_tokens(request.messages, request.tools)
            max_tokens = answer_tokens_that_fit(window.tokens, prompt, max_tokens)
        elif request.reply:
            max_tokens = answer_tokens_without_window(max_tokens, self.local)
        try:
            try:
                response = await self._complete(request, max_tokens)
            except LLMError as error:
                smaller = await self._learn_from_overflow(request, max_tokens, error)
                if smaller is None:
                    raise
                response, max_tokens = await self._complete(request, smaller), smaller
                window = self.known_window(request.model)
        except LLMError as error:
            log.warning("LLM call failed: %s", error)
            raise
        window_tokens = window.tokens if window is not None else None
        response.length_limit = answer_limit(max_tokens, request.max_output_tokens, window_tokens)
        return response

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
            "messages": messages_on_the_wire(request.messages),
            "temperature": request.temperature,
            "max_tokens": max_tokens,
        }
        if request.tools:
            body["tools"] = request.tools
            if self._tool_choice:
                # OpenAI's default, said: llama-cpp-python's function-calling template
                # drops the tools of a request that does not say it.
                body["tool_choice"] = "auto"
        try:
            response = await self._sent(request, body)
        except LLMError as error:
            if "tool_choice" not in body or not refuses_tool_choice(error):
                raise
            log.info("the model server refuses tool_choice (%s); sent without it", error.detail)
            self._tool_choice = False
            del body["tool_choice"]
            return await self._sent(request, body)
        if (
            "tool_choice" not in body
            or response.tool_calls
            or (response.content or "").strip()
            # Cut at its limit: it wrote something, if only its thinking (`reasoning_text`);
            # asked again, it would think as long.
            or response.finish_reason == "length"
        ):
            self._empty_with_tool_choice = 0
            return response
        if not request.reply:
            # A background call (the tool check) reads an empty answer for what it is.
            return response
        # Nothing at all: llama-cpp-python's function-calling format lets a small model
        # pick "a message" and end it at once (SmolLM2: every turn that called no tool).
        # Asked again without tool_choice, that server answers (and drops the tools).
        self._empty_with_tool_choice += 1
        if self._empty_with_tool_choice >= EMPTY_ANSWERS_BEFORE_NO_TOOL_CHOICE:
            self._tool_choice = False
            log.warning(
                "the model answered nothing %d times in a row when it could call tools "
                "(tool_choice auto); requests no longer say tool_choice, so a server that "
                "needs it (llama-cpp-python's chatml-function-calling) drops the tools: "
                "reminders and memory edits then need a model that can call tools",
                self._empty_with_tool_choice,
            )
        del body["tool_choice"]
        return await self._sent(request, body)

    async def _sent(self, request: ChatRequest, body: dict[str, Any]) -> ChatResponse:
        with_choice = "tool_choice" in body
        if request.on_text is None or (
            with_choice and not self._streams_tool_choice(request.model)
        ):
            return await self._call(request, body)
        chunks: list[int] = []
        streamed = await self._streamed(request, body, chunks)
        if streamed is not None:
            return streamed
        started = time.monotonic()
        try:
            response = await self._call(request, body)
        except LLMError as error:
            # A server that broke off a stream may have left its pooled connection dead
            # (llama-cpp-python does): the next request on it fails at once.
            quick = time.monotonic() - started < STALE_CONNECTION_SECONDS
            if not quick or error.kind not in _CONNECTION_FAILURES:
                raise
            log.info("the connection the stream left was dead; asking once more")
            response = await self._call(request, body)
        if with_choice and chunks == [0]:
            # Nothing streamed, the same request answered whole: llama-cpp-python's
            # function-calling format cannot stream a request with tool_choice, and every
            # such call would be made twice.
            await self._remember_no_tool_choice_streams(request.model)
        return response

    def _streams_tool_choice(self, model: str) -> bool:
        if model in self._no_tool_choice_streams:
            return False
        if self.vision is not None and not self.vision.streams_tool_choice(self.base_url, model):
            self._no_tool_choice_streams.add(model)
            return False
        return True

    async def _remember_no_tool_choice_streams(self, model: str) -> None:
        log.warning(
            "the model server streams nothing for a request of %s with tools; such requests "
            "no longer stream for a week (the reply shows when it is whole; kept in "
            "preferences/model-vision.json: delete its entry to stream again)",
            model,
        )
        self._no_tool_choice_streams.add(model)
        if self.vision is not None:
            await asyncio.to_thread(
                self.vision.remember_no_tool_choice_streams, self.base_url, model
            )

    async def _call(self, request: ChatRequest, body: dict[str, Any]) -> ChatResponse:
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
                options=request_options(request),
            )
        except openai.OpenAIError as exc:
            raise classify_openai_error(exc) from None
        except Exception as exc:
            # Something the SDK does not classify (a body it cannot read): one line, the
            # turn gets its apology, no traceback.
            raise LLMError(
                LLMFailureKind.UNAVAILABLE, f"the model call failed ({type(exc).__name__})"
            ) from None
        return response_from_completion(completion)

    async def _streamed(
        self, request: ChatRequest, body: dict[str, Any], chunks: list[int] | None = None
    ) -> ChatResponse | None:
        """The answer read as a stream, telling `request.on_text` the text so far; None when
        the stream ended without a finish reason (then it is asked for without streaming,
        and `chunks` gets how many chunks it had)."""
        assert request.on_text is not None
        streamed = {**body, "stream": True}
        if self._usage_in_streams:
            streamed["stream_options"] = {"include_usage": True}
        answer = StreamedAnswer()
        try:
            async with asyncio.timeout(request.timeout_seconds):
                stream = await self.client.post(
                    "/chat/completions",
                    cast_to=ChatCompletion,
                    content=orjson.dumps(streamed),
                    options=request_options(request),
                    stream=True,
                    stream_cls=openai.AsyncStream[ChatCompletionChunk],
                )
                try:
                    if not is_event_stream(stream.response):
                        # A server that does not stream sends the whole completion.
                        document = orjson.loads(await stream.response.aread())
                        return response_from_completion(ChatCompletion.model_validate(document))
                    async for chunk in stream:
                        if answer.add(chunk) and (shown := answer.shown):
                            request.on_text(shown)
                finally:
                    await stream.close()
        except TimeoutError:
            raise LLMError(LLMFailureKind.TIMEOUT, "request timed out") from None
        except openai.APIConnectionError:
            if answer.chunks == 0:
                raise LLMError(
                    LLMFailureKind.UNAVAILABLE, "could not connect to the model server"
                ) from None
            log.info("the model's stream broke off after %d chunks; asking again", answer.chunks)
            return None
        except openai.BadRequestError as exc:
            if self._usage_in_streams and "stream_options" in str(exc.message):
                log.info("the model server refuses stream_options; streams without usage")
                self._usage_in_streams = False
                return await self._streamed(request, body, chunks)
            raise classify_openai_error(exc) from None
        except openai.OpenAIError as exc:
            raise classify_openai_error(exc) from None
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(
                LLMFailureKind.UNAVAILABLE, f"the model call failed ({type(exc).__name__})"
            ) from None
        if not answer.complete:
            if chunks is not None:
                chunks.append(answer.chunks)
            # llama-cpp-python answers an overflowing stream with an empty 200 and cuts a
            # running stream when another request arrives: the plain request says which.
            log.info(
                "the model's stream ended without a finish reason (%d chunks); asking again "
                "without streaming",
                answer.chunks,
            )
            return None
        return answer.response()

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
        for probe in [*self._probes.values(), *filter(None, [self._tool_check])]:
            probe.cancel()
        self._image_probes.close()
        await self.client.close()


def _ignore_text(text: str) -> None:
    """A stream's text so far, which a call that only wants the answer does not show."""


async def _unless_told_to_give_way(
    call: Coroutine[Any, Any, ChatResponse], give_way: asyncio.Event
) -> ChatResponse:
    """`call`'s answer, unless `give_way` is set first: then the call is closed and fails
    as UNAVAILABLE (its work is done again later)."""
    answer = asyncio.ensure_future(call)
    told = asyncio.ensure_future(give_way.wait())
    try:
        await asyncio.wait({answer, told}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        told.cancel()
        if not answer.done():
            answer.cancel()
            with contextlib.suppress(asyncio.CancelledError, LLMError):
                await answer
    if answer.cancelled():
        raise GaveWayToReply
    return answer.result()


def _refusal(error: LLMError) -> bool:
    """Whether `error` is a server saying no to the request itself (400, or a status it
    gave in place of one), not failing to answer it."""
    return error.kind is LLMFailureKind.BAD_REQUEST or (
        error.kind is LLMFailureKind.UNAVAILABLE and error.status is not None
    )
