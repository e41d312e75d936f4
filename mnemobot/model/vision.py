"""Models found to take no images, per endpoint, kept in `preferences/model-vision.json`.

With `llm.vision` "auto" an image goes to the model as an image part until the model's
server refuses one; then the refusal is remembered here, so later turns send the caption
and a note at once instead of being refused again, restarts included:

    {"http://127.0.0.1:8080/v1 smollm": {"images": false,
      "detail": "HTTP 400: image input is not supported", "learnedAt": "2026-11-25T10:00:00Z"}}

Delete the file (or an entry) when the model behind the name changed, or set `llm.vision`.

The same entry keeps the other thing a server was found unable to do for a model, so a
restart does not pay for learning it again: stream a request with `tool_choice`
(llama-cpp-python's function-calling format answers one with an empty stream, "Automatic
streaming tool choice is not supported"), `"toolChoiceStreams": false`, with the time it
was learned: it holds for a week (`TOOL_CHOICE_STREAMS_DAYS`), since one empty stream may
also be a stream the server broke off for another request.

It also keeps the last verdict of the start-up check of tools (whether the server passes a
request's tools to the model: "passes", "drops", "unclear" or "refuses"), `"tools"`, so a
restart offers what the last check found from its first turn: a prompt that gained and then
lost its tools sentence after every restart would be evaluated whole once more by a server
that caches only an unchanged prefix. Every start checks again and its verdict replaces
this one.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.clock import SYSTEM_CLOCK, Clock, from_iso, to_iso
from mnemobot.model.windows import endpoint_key

log = logging.getLogger(__name__)

FILE_NAME = "model-vision.json"
# How long a server found not to stream a request with tool_choice is not asked to again:
# long enough that restarts do not pay for it, short enough that a stream broken off once
# for another reason does not turn streaming off for good. Reasoned, not measured.
TOOL_CHOICE_STREAMS_DAYS = 7.0


class ModelVisionStore:
    """Reads the file once, rewrites it atomically on every change; thread-safe."""

    def __init__(self, path: Path, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, object]] | None = None

    @classmethod
    def in_workspace(cls, root: Path, *, clock: Clock = SYSTEM_CLOCK) -> ModelVisionStore:
        return cls(root / "preferences" / FILE_NAME, clock=clock)

    def refuses_images(self, base_url: str | None, model: str) -> bool:
        with self._lock:
            entry = self._loaded().get(f"{endpoint_key(base_url)} {model}")
            return entry is not None and entry.get("images") is False

    def remember_refusal(self, base_url: str | None, model: str, detail: str) -> None:
        self._remember(
            base_url, model, {"images": False, "detail": detail, "learnedAt": to_iso(self.clock())}
        )

    def streams_tool_choice(self, base_url: str | None, model: str) -> bool:
        """False once the server streamed nothing for a request of `model` with tool_choice."""
        with self._lock:
            entry = self._loaded().get(f"{endpoint_key(base_url)} {model}")
            if entry is None or entry.get("toolChoiceStreams") is not False:
                return True
            learned = entry.get("toolChoiceStreamsLearnedAt")
            try:
                age = self.clock() - from_iso(learned) if isinstance(learned, str) else None
            except ValueError:
                age = None
            return age is None or age > TOOL_CHOICE_STREAMS_DAYS * 86_400

    def remember_no_tool_choice_streams(self, base_url: str | None, model: str) -> None:
        self._remember(
            base_url,
            model,
            {"toolChoiceStreams": False, "toolChoiceStreamsLearnedAt": to_iso(self.clock())},
        )

    def tools_verdict(self, base_url: str | None, model: str) -> str | None:
        """The last start-up check's verdict on tools for `model` here; None: never checked."""
        with self._lock:
            entry = self._loaded().get(f"{endpoint_key(base_url)} {model}")
            verdict = entry.get("tools") if entry is not None else None
            return verdict if isinstance(verdict, str) else None

    def remember_tools_verdict(self, base_url: str | None, model: str, verdict: str) -> None:
        self._remember(base_url, model, {"tools": verdict, "toolsCheckedAt": to_iso(self.clock())})

    def _remember(self, base_url: str | None, model: str, facts: dict[str, object]) -> None:
        key = f"{endpoint_key(base_url)} {model}"
        with self._lock:
            entries = self._loaded()
            entries[key] = {**entries.get(key, {}), **facts}
            try:
                write_atomic(self.path, orjson.dumps(entries, option=orjson.OPT_INDENT_2))
            except OSError as exc:
                # Still known for this run; the next start learns it again.
                log.warning("could not save %s: %s", self.path, exc)

    def _loaded(self) -> dict[str, dict[str, object]]:
        if self._entries is None:
            self._entries = {}
            try:
                document = orjson.loads(self.path.read_bytes())
            except FileNotFoundError:
                document = {}
            except (OSError, orjson.JSONDecodeError) as exc:
                log.warning("ignoring %s (%s); refusals will be learned again", self.path, exc)
                document = {}
            if isinstance(document, dict):
                self._entries = {
                    str(key): value for key, value in document.items() if isinstance(value, dict)
                }
        return self._entries
