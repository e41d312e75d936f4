"""Load, create and hot-reload `preferences/runtime-config.json` (DESIGN §5)."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson
from pydantic import ValidationError

from config.runtime import ConfigSection, RuntimeConfig, with_sections

log = logging.getLogger(__name__)


class RuntimeConfigError(Exception):
    """The runtime config file is invalid; the message names the key and the problem."""


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        key = ".".join(str(p) for p in error["loc"]) or "(root)"
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        parts.append(f"{key}: {message}")
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def parse_runtime_config(data: bytes, model: type[RuntimeConfig] = RuntimeConfig) -> RuntimeConfig:
    try:
        raw = orjson.loads(data) if data.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise RuntimeConfigError(f"not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise RuntimeConfigError("the top level must be a JSON object")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise RuntimeConfigError(describe_validation_error(exc)) from None


@dataclass(frozen=True, slots=True)
class _FileStamp:
    mtime_ns: int
    size: int


class RuntimeConfigStore:
    """The runtime config in force, re-read when the file's mtime or size changes.

    An invalid edit is rejected: the last good config stays in force and the error is kept
    for `/status` until the file is fixed.
    """

    def __init__(
        self, path: Path, *, sections: Mapping[str, type[ConfigSection]] | None = None
    ) -> None:
        """`sections`: extra top-level sections by name, e.g. each channel's own settings."""
        self.path = path
        self._model = with_sections(sections or {})
        self._lock = threading.Lock()
        self._config = self._model()
        self._stamp: _FileStamp | None = None
        self.error: str | None = None
        self.loaded_at_least_once = False

    def ensure_file(self) -> None:
        """Write the defaults on first start so a person can see and edit every key."""
        if self.path.exists():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = orjson.dumps(self._model().to_json_dict(), option=orjson.OPT_INDENT_2) + b"\n"
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".runtime-config.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            # Link, not replace: never overwrite a file someone created meanwhile.
            with contextlib.suppress(FileExistsError):
                os.link(tmp, self.path)
        finally:
            os.unlink(tmp)

    def current(self) -> RuntimeConfig:
        """The config in force now; cheap enough to call once per turn (one stat)."""
        try:
            stat = self.path.stat()
            stamp: _FileStamp | None = _FileStamp(stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            stamp = None
        except OSError as exc:
            # Unreadable location: keep what is in force and say why in /status.
            self.error = f"{self.path}: {exc.strerror or exc}"
            return self._config
        if stamp == self._stamp and self.loaded_at_least_once:
            return self._config
        with self._lock:
            if stamp != self._stamp or not self.loaded_at_least_once:
                self._reload(stamp)
        return self._config

    def _reload(self, stamp: _FileStamp | None) -> None:
        self._stamp = stamp
        self.loaded_at_least_once = True
        if stamp is None:
            # No file (deleted by hand): keep what is in force, the defaults at first.
            self.error = None
            return
        try:
            config = parse_runtime_config(self.path.read_bytes(), self._model)
        except (RuntimeConfigError, OSError) as exc:
            self.error = f"{self.path.name}: {exc}"
            log.error("runtime config rejected, keeping the last good one: %s", self.error)
            return
        if config != self._config:
            log.info("runtime config loaded from %s", self.path)
        self._config = config
        self.error = None

    def describe_state(self) -> str:
        self.current()
        if self.error:
            return f"INVALID, last good config in force ({self.error})"
        return "ok"
