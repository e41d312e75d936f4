"""What model servers say about a context window, and how many answer tokens fit it.

Pure functions: readers of the documents servers answer (vLLM `/v1/models`, llama.cpp
`/props`, LM Studio `/api/v0/models`, Ollama `/api/ps` and `/api/show`), of the figures in
their overflow errors, and the sizing of `max_tokens` against a known window or none.

What counts is the window the server runs the model with, not the length the model was
trained for, which several of them name too (llama.cpp's `meta.n_ctx_train`, LM Studio's
`max_context_length`, Ollama's `model_info`): a llama.cpp server started with `-c 2048`
refuses a longer prompt whatever the model could take, and Ollama cuts it silently.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mnemobot.config.runtime import SMALL_WINDOW_ANSWER_SHARE
from mnemobot.model.windows import ModelWindow
from mnemobot.systems.core.llm import AnswerCap

# The window and the prompt size as the servers we know state them in an overflow error:
# OpenAI, vLLM and llama-cpp-python ("maximum context length is 2048 tokens. However, you
# requested 4285 tokens (2237 in the messages, 2048 in the completion)"), newer vLLM ("your
# request has 2100 input tokens"), TGI and SGLang; llama.cpp sends `n_ctx`/`n_prompt_tokens`.
_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"model's context length \((\d+) tokens\)"),
    re.compile(r"max_new_tokens` must be <= (\d+)"),
)
_PROMPT_PATTERNS = (
    re.compile(r"\((\d+) in the messages"),
    re.compile(r"messages resulted in (\d+) tokens"),
    re.compile(r"request has (\d+) input tokens"),
    re.compile(r"given: (\d+) `inputs` tokens"),
    re.compile(r"the input \((\d+) tokens\)"),
)

# An answer gets at least this many tokens (or an eighth of a smaller window) even when the
# estimate says the prompt leaves less: the estimate is rough, and if the server disagrees
# its overflow error carries its own count.
MIN_ANSWER_TOKENS = 256
# The token estimate is a heuristic (chars/4 for Latin text); this factor on the prompt keeps
# the answer budget inside the window when the model's tokenizer counts more.
PROMPT_ESTIMATE_MARGIN = 1.1


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        if found := pattern.search(text):
            return int(found.group(1))
    return None


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def overflow_figures(message: str, fields: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(context window, prompt tokens) as an overflow error states them; None where it does not."""
    lowered = message.lower()
    window = _positive_int(fields.get("n_ctx")) or _first_number(_WINDOW_PATTERNS, lowered)
    prompt = _positive_int(fields.get("n_prompt_tokens")) or _first_number(
        _PROMPT_PATTERNS, lowered
    )
    return window, prompt


def answer_tokens_that_fit(window_tokens: int, prompt_estimate: int, cap: int) -> int:
    """max_tokens for a request: what the window leaves after the prompt, within [floor, cap].

    The cap is also the answer's share of the window (a quarter), the room the compaction
    threshold leaves for it: a small model that talks until its budget ends would otherwise
    fill the window with one answer and force a compaction on every turn.
    """
    floor = min(MIN_ANSWER_TOKENS, window_tokens // 8)
    cap = min(cap, max(floor, int(window_tokens * SMALL_WINDOW_ANSWER_SHARE)))
    room = window_tokens - math.ceil(prompt_estimate * PROMPT_ESTIMATE_MARGIN)
    return max(1, min(cap, max(floor, room)))


# Until a server says its window, an answer asks for at most a quarter of this when the
# server is on this machine or network: the window llama-cpp-python (which never says its
# window) and older Ollama start with. A small server then never spends its whole window on
# one answer; a larger one states its window or teaches it with its first overflow error.
# Hosted APIs, whose windows are large, keep llm.maxOutputTokens.
UNSTATED_LOCAL_WINDOW = 2048
# Ollama runs a model with its own default window unless the model sets `num_ctx`; 4,096
# is that default on a small GPU or none (larger GPUs get more): until `/api/ps` shows the
# loaded model's window, no more than this is assumed of what `/api/show` names.
OLLAMA_DEFAULT_WINDOW = 4096


def answer_tokens_without_window(cap: int, local: bool) -> int:
    """max_tokens while the window is unknown: `cap` (llm.maxOutputTokens), or on a local
    server a quarter of UNSTATED_LOCAL_WINDOW when that is less."""
    if not local:
        return cap
    return min(cap, int(UNSTATED_LOCAL_WINDOW * SMALL_WINDOW_ANSWER_SHARE))


def answer_limit(max_tokens: int, cap: int, window_tokens: int | None) -> AnswerCap:
    """What an answer asked for `max_tokens` was capped by, for the note on an answer the
    model cut there: `cap` (llm.maxOutputTokens), the share or the room of the known window,
    or the size a local server's answer keeps to while its window is unknown."""
    if max_tokens >= cap:
        return AnswerCap("setting", cap)
    if window_tokens is None:
        return AnswerCap("unknown window", max_tokens)
    if max_tokens == int(window_tokens * SMALL_WINDOW_ANSWER_SHARE):
        return AnswerCap("window share", max_tokens, window_tokens)
    return AnswerCap("window room", max_tokens, window_tokens)


def is_local_endpoint(base_url: str | None) -> bool:
    """Whether the server is on this machine or its network (loopback, private or
    link-local address, `localhost`, a `.local`/`.internal`/`.lan` name, or a name without
    dots such as a compose service's): a local model server, not a hosted API."""
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower().rstrip(".")
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host or host.endswith((".localhost", ".local", ".internal", ".lan"))
    return address.is_loopback or address.is_private or address.is_link_local


def server_root(base_url: str) -> str:
    """`http://host:8080/v1/` -> `http://host:8080`: where llama.cpp and Ollama serve."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/").removesuffix("/v1")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def window_in_models_list(document: object, model: str) -> ModelWindow | None:
    """vLLM's `max_model_len` (OpenRouter, Groq: `context_length`, `context_window`)."""
    entries = document.get("data") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        return None
    dicts = [entry for entry in entries if isinstance(entry, dict)]
    # A server with one model answers under any name (llama.cpp), so its entry counts too.
    matching = [e for e in dicts if e.get("id") == model] or (dicts if len(dicts) == 1 else [])
    for entry in matching:
        for name in ("max_model_len", "context_length", "context_window"):
            if tokens := _positive_int(entry.get(name)):
                return ModelWindow(tokens, "server", f"/models {name}")
    return None


def window_in_props(document: object) -> ModelWindow | None:
    """llama.cpp's server: `/props` `default_generation_settings.n_ctx`."""
    if not isinstance(document, dict):
        return None
    settings = document.get("default_generation_settings")
    if isinstance(settings, dict) and (tokens := _positive_int(settings.get("n_ctx"))):
        return ModelWindow(tokens, "server", "/props n_ctx")
    if tokens := _positive_int(document.get("n_ctx")):
        return ModelWindow(tokens, "server", "/props n_ctx")
    return None


def window_in_lmstudio_models(document: object, model: str) -> ModelWindow | None:
    """LM Studio's `/api/v0/models`: `loaded_context_length` of the loaded model (its
    `max_context_length` is what the model was trained for; a model not loaded yet gets
    the length it is loaded with, said once it is)."""
    entries = document.get("data") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        return None
    dicts = [entry for entry in entries if isinstance(entry, dict)]
    loaded = [e for e in dicts if _positive_int(e.get("loaded_context_length"))]
    matching = [e for e in loaded if e.get("id") == model] or (loaded if len(loaded) == 1 else [])
    for entry in matching:
        if tokens := _positive_int(entry.get("loaded_context_length")):
            return ModelWindow(tokens, "server", "/api/v0/models loaded_context_length")
    return None


def _ollama_names(model: str) -> set[str]:
    """Ollama lists `llama3.2:latest` for a model asked for as `llama3.2`."""
    return {model, f"{model}:latest"} if ":" not in model else {model}


def window_in_ollama_ps(document: object, model: str) -> ModelWindow | None:
    """Ollama's `/api/ps`: the `context_length` the loaded model runs with."""
    entries = document.get("models") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        return None
    names = _ollama_names(model)
    for entry in entries:
        if not isinstance(entry, dict) or not names & {entry.get("name"), entry.get("model")}:
            continue
        if tokens := _positive_int(entry.get("context_length")):
            return ModelWindow(tokens, "server", "/api/ps context_length")
    return None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)", re.MULTILINE)


def window_in_ollama_show(document: object) -> ModelWindow | None:
    """Ollama's `/api/show`: the model's `num_ctx` parameter, else Ollama's default window
    (OLLAMA_DEFAULT_WINDOW) within the trained `model_info.*.context_length`."""
    if not isinstance(document, dict):
        return None
    parameters = document.get("parameters")
    if isinstance(parameters, str) and (found := _NUM_CTX.search(parameters)):
        return ModelWindow(int(found.group(1)), "server", "/api/show num_ctx")
    info = document.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and (tokens := _positive_int(value)):
                if tokens <= OLLAMA_DEFAULT_WINDOW:
                    return ModelWindow(tokens, "server", f"/api/show {key}")
                return ModelWindow(
                    OLLAMA_DEFAULT_WINDOW,
                    "server",
                    f"/api/show: Ollama's default window (the model takes {tokens:,})",
                )
    return None
