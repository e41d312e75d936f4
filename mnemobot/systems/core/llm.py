"""What the pipeline needs from a chat model, as a protocol the bot layer implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol


class LLMFailureKind(StrEnum):
    """Why a model call failed, as the pipeline tells users and operators apart."""

    CONTEXT_OVERFLOW = "context_overflow"
    RATE_LIMITED = "rate_limited"
    UNAVAILABLE = "unavailable"
    TIMEOUT = "timeout"
    AUTH = "auth"
    BAD_REQUEST = "bad_request"


_USER_TEXT = {
    LLMFailureKind.CONTEXT_OVERFLOW: "the conversation no longer fits the model's context",
    LLMFailureKind.RATE_LIMITED: "the model is rate-limited right now",
    LLMFailureKind.UNAVAILABLE: "the model is unavailable right now",
    LLMFailureKind.TIMEOUT: "the model did not answer in time",
    # Users cannot fix credentials: what to check is the operator's hint, kept for the log.
    LLMFailureKind.AUTH: "the model is not available right now",
    LLMFailureKind.BAD_REQUEST: "the model rejected the request",
}

# What the operator can do about each failure; logged, never sent to chat users.
_OPERATOR_HINT = {
    LLMFailureKind.CONTEXT_OVERFLOW: "check llm.maxInputTokens against the model's context window",
    LLMFailureKind.RATE_LIMITED: "check the account's rate limits and quota",
    LLMFailureKind.UNAVAILABLE: "check OPENAI_BASE_URL and that the model server is up",
    LLMFailureKind.TIMEOUT: "check the model server or raise llm.requestTimeoutSeconds",
    LLMFailureKind.AUTH: "check OPENAI_API_KEY: the model server refused it",
    LLMFailureKind.BAD_REQUEST: "check the model name (BOT_MODEL or llm.model)",
}


class LLMError(Exception):
    """A classified failure of a chat-model call; `detail` never contains secrets.

    A context overflow may say how big the model's window is and how many tokens the
    prompt had, in the server's own count; both are None when the server did not say.
    """

    def __init__(
        self,
        kind: LLMFailureKind,
        detail: str,
        *,
        status: int | None = None,
        context_window: int | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail
        self.status = status
        self.context_window = context_window
        self.prompt_tokens = prompt_tokens

    def user_text(self) -> str:
        """What a chat user is told: what happened, with nothing for them to fix."""
        return _USER_TEXT[self.kind]

    def operator_hint(self) -> str:
        """What the operator should check; for logs and `doctor`, never for chat users."""
        return _OPERATOR_HINT[self.kind]


class GaveWayToReply(LLMError):
    """A call that could wait (`ChatRequest.yields_to_replies`) was put aside for a user's
    reply on a server with few slots: not a failure, its work is done again later."""

    def __init__(self) -> None:
        super().__init__(
            LLMFailureKind.UNAVAILABLE, "put aside for a user's reply; done again later"
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str

    def to_message_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class ChatRequest:
    """One chat completion to ask for: OpenAI-format `messages` and `tools`."""

    messages: list[dict[str, Any]]
    model: str
    temperature: float
    max_output_tokens: int
    timeout_seconds: float
    tools: list[dict[str, Any]] = field(default_factory=list)
    # Image parts in `messages` (`llm.vision`): "auto" sends them until the model's server
    # refuses one, then the model client sends a note in their place; "on" always sends
    # them; "off" never does.
    vision: str = "auto"
    # The request is pointless without its images (describe this photo): raise LLMError
    # instead of sending it with a note in their place.
    require_images: bool = False
    # When set, the answer is asked for as a stream and this hears its text so far (the
    # whole text each time, as it grows); it must return at once. A model or server that
    # does not stream answers all at once and never calls it.
    on_text: Callable[[str], None] | None = None
    # Send it again after a timeout or a server error (the SDK's retries). Off for calls
    # with a deadline of their own (a compaction's summary): a local server keeps
    # computing a request its client gave up on, so a second copy sent at the deadline only
    # doubles its work and holds up the chat's next turn.
    resend: bool = True
    # An answer a person reads (the tool loop's): until the model's window is known, the
    # model client asks a local server for less than max_output_tokens, so that one chatty
    # answer never fills what may be its whole window. Background work (a rewrite of
    # MEMORY.md) keeps its size.
    reply: bool = False
    # A limit on the whole call, retries included, counted from when it is sent: a call
    # waiting for a busy model server's slot (replies go first) is not yet late. Past it
    # the call fails with LLMFailureKind.TIMEOUT. None: `timeout_seconds` per attempt only.
    deadline_seconds: float | None = None
    # Background work that can be done later (a rewrite of MEMORY.md): on a server that
    # answers one request at a time, a reply that needs the server stops it (it is asked for
    # as a stream, so closing it stops the server too) and it fails as UNAVAILABLE.
    yields_to_replies: bool = False


@dataclass(slots=True)
class ChatResponse:
    """The model's answer: text, tool calls, or both; token counts when the server says."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Of `prompt_tokens`, those the server took from its cache of earlier requests' work
    # (the beginning they share); None when the server does not say.
    cached_prompt_tokens: int | None = None
    # The request's images were replaced by a note: the model does not take images.
    images_dropped: bool = False
    # What capped the answer's length (its max_tokens, and why that many), for the note
    # on an answer the model cut there, worded in the reader's language by the loop;
    # None when the client does not say.
    length_limit: AnswerCap | None = None


@dataclass(frozen=True, slots=True)
class AnswerCap:
    """Why an answer was asked for `tokens` at most: `by` "setting" (llm.maxOutputTokens),
    "unknown window" (a local server's answer size while its window is unknown), "window
    share" (a quarter of a small window), "window room" (what the window left)."""

    by: Literal["setting", "unknown window", "window share", "window room"]
    tokens: int
    window: int | None = None


class ChatModel(Protocol):
    """A chat-completion model (`Services.llm`): the bot's is any OpenAI-compatible server."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one chat completion; raise LLMError on any failure (TIMEOUT past the
        request's `deadline_seconds`)."""
        ...

    async def close(self) -> None:
        """Release what the model holds (connections); called once, when the bot stops."""
        ...
