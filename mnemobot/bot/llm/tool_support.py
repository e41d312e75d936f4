"""Whether the model server passes a request's tools to the model.

llama-cpp-python's server without a function-calling chat format answers a request with
tools as one without: no error, no tool call, and "remind me in 2 minutes" sets nothing.
One request shows it: a test tool and the instruction to call it, sent the way every turn
sends its tools (`tool_choice` "auto"). A tool call answers the question. When the model
answers in text instead, the same request goes again without the tool, for one token: a
prompt no longer with the tool than without it never carried it to the model; a longer
one did, and the model chose not to call it. A server that does not count its prompt
leaves it open.

`mnemobot doctor` asks; `mnemobot run` asks a server on this machine or network once at
start, behind any reply (a background call of the model gate), and logs one line. A server
that drops tools is then offered none (`OpenAIChatModel.drops_tools`): the model is not
told of tools it cannot call, and /status says tools are off. The verdict is kept
(`preferences/model-vision.json`): after a restart the first turns, before the new check
ends, offer what the last one found, so their prompt is the one the last run ended with.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from mnemobot.systems.core.llm import ChatModel, ChatRequest, LLMError, LLMFailureKind

log = logging.getLogger(__name__)

TEST_TOOL_NAME = "report_ready"
_TEST_TOOL = {
    "type": "function",
    "function": {
        "name": TEST_TOOL_NAME,
        "description": "Report that you are ready.",
        "parameters": {
            "type": "object",
            "properties": {"ready": {"type": "boolean"}},
            "required": ["ready"],
        },
    },
}
_TEST_MESSAGES = [
    {
        "role": "system",
        "content": (
            f"You are checking that tools work. Call the {TEST_TOOL_NAME} function now, "
            "with ready set to true; write no text."
        ),
    },
    {"role": "user", "content": f"Call {TEST_TOOL_NAME}."},
]
# The call is about 10 tokens; a model that talks instead is cut short. Measured with
# SmolLM2-135M on llama-cpp-python: 6 tokens for the call.
_ANSWER_TOKENS = 32
# The test tool's schema takes 40 or more prompt tokens in any chat template (180 in
# llama-cpp-python's chatml-function-calling, measured); a prompt fewer than this longer
# with it than without never carried it.
_TOOL_PROMPT_TOKENS = 10
# Seconds each of the two requests may take: a prompt of 50 to 200 tokens and a short
# answer. llama-cpp-python's chatml-function-calling took 11 s for the first, SmolLM2-135M on
# one busy CPU core (three generate passes); a 7B model on a CPU is slower still.
CHECK_TIMEOUT_SECONDS = 30.0

Verdict = Literal["passes", "drops", "unclear", "refuses"]
# What turns tools off until a check at start finds otherwise: a server that drops them
# (the model would be told of tools it cannot call) or refuses a request with them (every
# turn would fail).
TOOLS_OFF: frozenset[Verdict] = frozenset({"drops", "refuses"})


@dataclass(frozen=True, slots=True)
class ToolSupport:
    verdict: Verdict
    # One line for `doctor` and the log.
    line: str


def _request(model: str, with_tool: bool, timeout: float) -> ChatRequest:
    return ChatRequest(
        messages=[dict(message) for message in _TEST_MESSAGES],
        model=model,
        temperature=0.0,
        max_output_tokens=_ANSWER_TOKENS if with_tool else 1,
        timeout_seconds=timeout,
        tools=[_TEST_TOOL] if with_tool else [],
        resend=False,
    )


async def check_tool_support(
    llm: ChatModel, model: str, timeout: float = CHECK_TIMEOUT_SECONDS
) -> ToolSupport:
    """Ask the server (one request, two when the model answers in text); LLMError when it
    cannot be asked (unreachable, timed out, a server error)."""
    try:
        answer = await llm.complete(_request(model, True, timeout))
    except LLMError as error:
        if error.kind is not LLMFailureKind.BAD_REQUEST:
            raise
        return ToolSupport(
            "refuses",
            f"the server refuses a request with tools ({error.detail[:200]}); for reminders "
            "and the memory tool, use a model (or server) that takes tools",
        )
    if any(call.name == TEST_TOOL_NAME for call in answer.tool_calls):
        return ToolSupport("passes", f"the server passes tools to {model}: it called the test tool")
    plain = await llm.complete(_request(model, False, timeout))
    answered = "answered in text" if (answer.content or "").strip() else "answered nothing"
    with_tool, without = answer.prompt_tokens, plain.prompt_tokens
    fix = (
        "llama-cpp-python passes them only with --chat_format chatml-function-calling "
        "(docs/local-models.md)"
    )
    if with_tool is None or without is None:
        return ToolSupport(
            "unclear",
            f"{model} {answered} when told to call the test tool, and the server does "
            f"not say how long the prompt was: it may drop tools, and reminders and the memory "
            f"tool would not work; {fix}",
        )
    if with_tool < without + _TOOL_PROMPT_TOKENS:
        return ToolSupport(
            "drops",
            f"the server drops tools: a request with the test tool was no longer than one "
            f"without ({with_tool} prompt tokens, {without} without) and {model} {answered}; "
            f"reminders and the memory tool cannot work; {fix}",
        )
    return ToolSupport(
        "unclear",
        f"the server passes tools to {model} ({with_tool} prompt tokens with the test tool, "
        f"{without} without), but it {answered} when told to call it: a model this "
        "small may not use its tools (reminders, memory)",
    )


async def log_tool_support(llm: ChatModel, model: str) -> ToolSupport | None:
    """`run`'s line about tools: INFO when the server passes them, WARNING otherwise; what
    was found (None: the server could not be asked)."""
    try:
        found = await check_tool_support(llm, model)
    except LLMError as error:
        log.info("tools: not checked (%s)", error)
        return None
    level = logging.INFO if found.verdict == "passes" else logging.WARNING
    line = found.line
    if found.verdict in TOOLS_OFF:
        line += "; until the bot is restarted, it offers the model no tools"
    log.log(level, "tools: %s", line)
    return found
