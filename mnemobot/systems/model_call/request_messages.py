"""Turn the stored session into the messages the model sees (pure functions).

The stored session keeps extra keys (timestamps, message refs) and whole tool results;
the model gets only the API keys, and tool results older than the last few user turns
are shortened to a one-line stub so old bulky output does not crowd out the context.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import orjson

from mnemobot.base.tokens import cut_to_tokens, estimate_tokens
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.conversation.session import Message
from mnemobot.systems.core.newest_context import defused
from mnemobot.systems.model_call.image_parts import content_tokens

API_KEYS: tuple[Literal["role", "content", "tool_calls", "tool_call_id", "name"], ...] = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
)
STUB_PREFIX = "[older tool result shortened"
# Tool results older than this many user turns are stubbed in the request (the session
# keeps them whole). Not measured; a result the model used three questions ago is done.
KEEP_TOOL_RESULTS_TURNS = 3
# One message never takes more than this of a request, however big the window; the session
# keeps it whole.
MAX_MODEL_MESSAGE_TOKENS = 25_000
# Share of the compaction threshold one message may take in a request: the rest is for the
# system prompt, memory and the messages around it.
MESSAGE_SHARE = 0.5
# Of what is shown of a message cut to fit, the share taken from its beginning (the rest
# from its end: a pasted log's question or error is often last).
HEAD_SHARE = 0.6
CUT_MARKER = "[... {hidden:,} characters of this message left out here: the whole message is "
CUT_MARKER += "too long for the model's context window; it is kept in full in the conversation "
CUT_MARKER += "and in memory ...]"


def message_token_limit(config: RuntimeConfig, shrink_rounds: int = 0) -> int:
    """Most estimated tokens one message may take in a request to the model: a share of the
    compaction threshold (so of the model's real window, once known), a quarter of it
    again after each context-overflow round of the turn."""
    limit = min(MAX_MODEL_MESSAGE_TOKENS, int(config.compaction_threshold_tokens() * MESSAGE_SHARE))
    return max(64, limit >> (2 * shrink_rounds))


def fit_message(content: str, max_tokens: int) -> str:
    """`content` within `max_tokens`: whole when it fits, else its beginning and its end
    around a line saying how much was left out and that the whole message is kept."""
    if estimate_tokens(content) <= max_tokens:
        return content
    room = max(16, max_tokens - estimate_tokens(CUT_MARKER.format(hidden=len(content))) - 2)
    head = cut_to_tokens(content, int(room * HEAD_SHARE))
    # The end, cut at a line or word start: the same cut on the reversed text.
    tail = cut_to_tokens(content[len(head) :][::-1], room - estimate_tokens(head))[::-1]
    hidden = len(content) - len(head) - len(tail)
    return f"{head}\n{CUT_MARKER.format(hidden=hidden)}\n{tail.lstrip()}"


def is_cut(content: str, max_tokens: int) -> bool:
    """Whether `fit_message` shows only part of `content`."""
    return estimate_tokens(content) > max_tokens


def api_message(message: Message) -> dict[str, Any]:
    return {key: message[key] for key in API_KEYS if key in message}


def tool_result_stub(content: str) -> str:
    first_line = content.strip().splitlines()[0][:120] if content.strip() else ""
    return f"{STUB_PREFIX}: {len(content)} chars] {first_line}"


def model_messages(
    system_prompt: str,
    history: list[Message],
    *,
    keep_tool_results_turns: int,
    max_message_tokens: int = MAX_MODEL_MESSAGE_TOKENS,
    speakers: bool = False,
) -> list[dict[str, Any]]:
    """System prompt + history with API keys only; old tool results stubbed; a message over
    `max_message_tokens` shown as its beginning and end (`fit_message`). With `speakers`
    (a chat of several people), a user message starts with who wrote it ("Anna: ...")."""
    # Tool results before the Nth most recent user message are stubbed (all when N is 0).
    cutoff_index = len(history) if keep_tool_results_turns <= 0 else -1
    user_turns_seen = 0
    for index in range(len(history) - 1, -1, -1):
        if keep_tool_results_turns > 0 and history[index].get("role") == "user":
            user_turns_seen += 1
            if user_turns_seen == keep_tool_results_turns:
                cutoff_index = index
                break
    out: list[dict[str, Any]] = []
    start = 0
    # Some local servers accept only one leading system message: the conversation summary
    # stored at the head of the history joins the system prompt.
    while start < len(history) and history[start].get("role") == "system":
        extra = str(history[start].get("content") or "")
        system_prompt = f"{system_prompt}\n\n{extra}" if system_prompt else extra
        start += 1
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    for index, message in enumerate(history):
        if index < start:
            continue
        item = api_message(message)
        if isinstance(item.get("content"), str):
            item["content"] = fit_message(defused(item["content"]), max_message_tokens)
        elif isinstance(item.get("content"), list):
            item["content"] = [_defused_part(part) for part in item["content"]]
        if speakers and item.get("role") == "user" and message.get("from"):
            item["content"] = with_speaker(item.get("content"), str(message["from"]))
        if index < cutoff_index and item.get("role") == "tool":
            content = str(item.get("content") or "")
            if len(content) > 200:
                item["content"] = tool_result_stub(content)
        _append_alternating(out, item)
        # A turn stopped mid-tool-run leaves calls without results; the API rejects that
        # history, so the model is told they were not run. Results are matched among the
        # tool messages right after the call: some servers reuse ids across turns.
        answered = _results_following(history, index)
        for call in item.get("tool_calls") or ():
            if call.get("id") not in answered:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("id"),
                        "content": "error: not run (the turn was stopped)",
                    }
                )
    return out


def _defused_part(part: object) -> object:
    """A content part with the context block's markers quoted in its text (`defused`)."""
    if isinstance(part, dict) and part.get("type") == "text":
        return {**part, "text": defused(str(part.get("text") or ""))}
    return part


# What stands before a conversation whose first message left is the assistant's (a
# compaction kept the tail from an answer on): strict templates begin with a user turn.
EARLIER_TURNS_NOTE = "[Earlier messages of this conversation are not shown here.]"
# What stands between a user message that got no answer (the model failed) and the next.
NO_ANSWER_NOTE = "[No answer was given to this message.]"


def without_request_notes(answer: str) -> str:
    """The model's answer without the notes the requests put in the assistant's or the
    user's place: a small model copies "[No answer was given to this message.]" as its
    answer (found live: SmolLM2 sent it to a Russian reader, and memory kept it), or its
    paraphrase ("[No answer was provided to this message.]", SmolLM2's whole answer to a
    43 KB message), or the time stamp a user message is headed by; what is left, if
    anything, is the answer."""
    answer = _TIME_STAMP_SAID.sub("", answer.replace(EARLIER_TURNS_NOTE, ""))
    return _NO_ANSWER_NOTE_SAID.sub("", answer).strip()


# The time a user message is headed by (`newest_context`), copied into an answer (found
# live: SmolLM2 in Russian, and memory then showed it to the model as said).
_TIME_STAMP_SAID = re.compile(r"[ \t]*\[Time now: [^\]\n]{1,40}\]")


# NO_ANSWER_NOTE as a model says it again: its own verb, "reply" for "answer", no full stop.
_NO_ANSWER_NOTE_SAID = re.compile(
    r"\[no (?:answer|reply|response) (?:was|has been) \w+ (?:to|for) (?:this|the|your) "
    r"message\.?\]",
    re.IGNORECASE,
)


def _append_alternating(out: list[dict[str, Any]], item: dict[str, Any]) -> None:
    """Append `item` so that user and assistant turns alternate, as the strictest chat
    templates of local servers require (Gemma's, Mistral's): a user message right after
    another (a turn that failed) gets a note that it had no answer between them, and a
    conversation does not open with the assistant. The same history always gives the same
    messages, so requests stay each other's beginnings."""
    role = item.get("role")
    previous = out[-1].get("role") if out else None
    if role == "user" and previous == "user":
        out.append({"role": "assistant", "content": NO_ANSWER_NOTE})
    if role == "assistant" and previous in (None, "system"):
        out.append({"role": "user", "content": EARLIER_TURNS_NOTE})
    out.append(item)


def with_speaker(content: object, speaker: str) -> object:
    """A user message's content headed by its writer's name: text, or the first text part
    of a message with images."""
    if isinstance(content, str):
        return f"{speaker}: {content}"
    if isinstance(content, list):
        parts = [dict(part) if isinstance(part, dict) else part for part in content]
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "text":
                part["text"] = f"{speaker}: {part.get('text', '')}"
                return parts
        return [{"type": "text", "text": f"{speaker}:"}, *parts]
    return content


def with_turn_notes(messages: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    """`messages` with `notes` (one line each, in brackets) after the newest user message's
    text; the messages given are not changed."""
    if not notes:
        return messages
    index = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None
    )
    if index is None:
        return messages
    added = "\n".join(f"[{note}]" for note in notes)
    newest = dict(messages[index])
    content = newest.get("content")
    if isinstance(content, list):
        newest["content"] = [*content, {"type": "text", "text": added}]
    else:
        newest["content"] = f"{content or ''}\n\n{added}"
    return [*messages[:index], newest, *messages[index + 1 :]]


def _results_following(history: list[Message], index: int) -> set[object]:
    found: set[object] = set()
    for message in history[index + 1 :]:
        if message.get("role") != "tool":
            break
        found.add(message.get("tool_call_id"))
    return found


def estimate_request_tokens(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> int:
    """Heuristic size of a chat request: content, tool-call arguments and tool schemas."""
    total = 0
    for message in messages:
        total += 4 + content_tokens(message.get("content"))
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            total += 8 + estimate_tokens(function.get("name", "") + function.get("arguments", ""))
    for tool in tools or ():
        total += estimate_tokens(orjson.dumps(tool).decode())
    return total
