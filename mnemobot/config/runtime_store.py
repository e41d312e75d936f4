"""Load, create and hot-reload `preferences/runtime-config.json`.

Three kinds of key a file may hold beside the valid ones: a key an earlier version read
(`retired_keys`): left out and named once in the log, its value with it when it is not
the one now built in; an unknown key (a typo): left out, logged and shown by `/status`;
and a bad value: the whole file is rejected and the last good config stays.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from mnemobot.config.runtime import ConfigSection, RuntimeConfig, with_sections

log = logging.getLogger(__name__)


class RuntimeConfigError(Exception):
    """The runtime config file is invalid; the message names the key and the problem."""


@dataclass(frozen=True, slots=True)
class RetiredKey:
    """A key of the file that this version no longer reads (`retired_keys`)."""

    # Dotted, as the file spells it: "memory.ranking", "telegram.burstSeconds".
    path: str
    value: object = None
    built_in: object = None
    # The file set it to another value than the one now built in: that tuning is lost.
    changed: bool = False

    def describe(self) -> str:
        if not self.changed:
            return self.path
        return f"{self.path} ({_json(self.value)} ignored; built in: {_json(self.built_in)})"


@dataclass(frozen=True, slots=True)
class ParsedRuntimeConfig:
    config: RuntimeConfig
    # Dotted camelCase paths of keys the model does not know; they were left out.
    unknown_keys: tuple[str, ...] = ()
    # Keys earlier versions read; left out too, but not mistakes.
    retired_keys: tuple[RetiredKey, ...] = ()


def _json(value: object) -> str:
    return orjson.dumps(value).decode() if value is not None else "null"


def _english(message: str, /, **values: object) -> str:
    return message.format(**values) if values else message


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(root)"


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        if error["loc"]:
            parts.append(f"{_dotted(error['loc'])}: {message}")
        else:
            parts.append(message)
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def _without(raw: dict[str, object], locs: list[tuple[int | str, ...]]) -> dict[str, object]:
    """A copy of `raw` without the keys at `locs` (each a path of keys into nested objects)."""
    stripped = copy.deepcopy(raw)
    for loc in locs:
        node: object = stripped
        for part in loc[:-1]:
            node = node.get(str(part)) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(str(loc[-1]), None)
    return stripped


def _section_model(annotation: Any) -> type[BaseModel] | None:
    is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return annotation if is_model else None


def _entry_model(annotation: Any) -> type[BaseModel] | None:
    """The model of each value of a `dict[str, Model]` field (MCP servers), else None."""
    if getattr(annotation, "__origin__", None) is not dict:
        return None
    return _section_model(annotation.__args__[1])


def _retired(path: str, value: object, built_in: object) -> list[RetiredKey]:
    """The retired key at `path`; for a whole section, the section and each key in it
    the file set to another value than the one built in."""
    if isinstance(built_in, Mapping) and isinstance(value, dict):
        found = [RetiredKey(path)]
        for key, inner in value.items():
            if key in built_in:
                found += [k for k in _retired(f"{path}.{key}", inner, built_in[key]) if k.changed]
        return found
    return [RetiredKey(path, value, built_in, changed=value != built_in)]


def without_retired(
    raw: dict[str, Any], model: type[BaseModel], found: list[RetiredKey], prefix: str = ""
) -> dict[str, Any]:
    """`raw` without the keys `model` (and its sections) no longer read; `found` gets them.

    A key `model` still has a field for is never retired (a section of that name added
    again). The file may spell keys in snake_case too, as the models accept them.
    """
    fields = {(field.alias or name): field for name, field in model.model_fields.items()}
    fields.update(model.model_fields)
    retired: Mapping[str, object] = getattr(model, "retired", {})
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        field = fields.get(key)
        if field is None:
            camel = to_camel(key)
            if camel in retired:
                found += _retired(prefix + key, value, retired[camel])
                continue
        elif isinstance(value, dict):
            if (section := _section_model(field.annotation)) is not None:
                value = without_retired(value, section, found, f"{prefix}{key}.")
            elif (entry := _entry_model(field.annotation)) is not None:
                value = {
                    name: without_retired(v, entry, found, f"{prefix}{key}.{name}.")
                    if isinstance(v, dict)
                    else v
                    for name, v in value.items()
                }
        kept[key] = value
    return kept


def parse_runtime_config(
    data: bytes, model: type[RuntimeConfig] = RuntimeConfig
) -> ParsedRuntimeConfig:
    """Validate the file's bytes; retired and unknown keys are left out and listed, a bad
    value raises.

    A typo'd key must not throw away every other setting of the file, so it is reported
    and ignored; a key an earlier version read is no mistake at all (a file written by
    that version holds them all); a value the model rejects makes the whole file invalid.
    """
    if not data.strip():
        raise RuntimeConfigError("the file is empty; write {} to use every default")
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RuntimeConfigError(f"not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise RuntimeConfigError("the top level must be a JSON object")
    found: list[RetiredKey] = []
    raw = without_retired(raw, model, found)
    retired = tuple(found)
    try:
        return ParsedRuntimeConfig(model.model_validate(raw), retired_keys=retired)
    except ValidationError as exc:
        unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden" and e["loc"]]
        if not unknown:
            raise RuntimeConfigError(describe_validation_error(exc)) from None
    try:
        config = model.model_validate(_without(raw, unknown))
    except ValidationError as exc:
        raise RuntimeConfigError(describe_validation_error(exc)) from None
    return ParsedRuntimeConfig(config, tuple(_dotted(loc) for loc in unknown), retired)


@dataclass(frozen=True, slots=True)
class _FileStamp:
    mtime_ns: int
    size: int


class RuntimeConfigStore:
    """The runtime config in force, re-read when the file's mtime or size changes.

    An invalid edit is rejected: the last good config stays in force and the error is kept
    for `/status` until the file is fixed. Unknown keys are ignored and listed.
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
        self.unknown_keys: tuple[str, ...] = ()
        # Keys of the file this version no longer reads (not an error; logged once).
        self.retired_keys: tuple[RetiredKey, ...] = ()
        # Whether the config in force came from the file (else it is the defaults).
        self.from_file = False
        self.loaded_at_least_once = False

    def ensure_file(self) -> None:
        """Write the defaults on first start so a person can see and edit every key."""
        if self.path.exists():
            return
        # The workspace holds what people said: its folders are its user's only.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = orjson.dumps(self._model().to_json_dict(), option=orjson.OPT_INDENT_2) + b"\n"
        # Link, not replace: never overwrite a file someone created meanwhile.
        self._write(data, replace=False)

    def set_keys(self, section: tuple[str, ...], values: Mapping[str, object]) -> None:
        """Set `values` (camelCase keys) in the object at `section` of the file, keeping
        every other key as written; the file is created with the defaults first. Raises
        RuntimeConfigError, changing nothing, when the file or the result is invalid."""
        self.ensure_file()
        try:
            raw = orjson.loads(self.path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise RuntimeConfigError(f"not valid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise RuntimeConfigError("the top level must be a JSON object")
        node = raw
        for key in section:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise RuntimeConfigError(f"{'.'.join(section)}: must be an object")
            node = child
        node.update(values)
        data = orjson.dumps(raw, option=orjson.OPT_INDENT_2) + b"\n"
        parse_runtime_config(data, self._model)
        self._write(data, replace=True)

    def _write(self, data: bytes, *, replace: bool) -> None:
        """The file atomically: a private temp file (mkstemp makes it 0600), fsynced."""
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".runtime-config.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if replace:
                os.replace(tmp, self.path)
                return
            with contextlib.suppress(FileExistsError):
                os.link(tmp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
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
            parsed = parse_runtime_config(self.path.read_bytes(), self._model)
        except (RuntimeConfigError, OSError) as exc:
            self.error = f"{self.path.name}: {exc}"
            kept = "the last good values of the file" if self.from_file else "the defaults"
            log.error("runtime config rejected, keeping %s: %s", kept, self.error)
            return
        if parsed.unknown_keys and parsed.unknown_keys != self.unknown_keys:
            log.warning(
                "runtime config %s: unknown keys ignored: %s "
                "(check the spelling; `mnemobot config docs` lists every key)",
                self.path,
                ", ".join(parsed.unknown_keys),
            )
        if parsed.retired_keys and parsed.retired_keys != self.retired_keys:
            # Named once: a lost tuning is worth a warning, the defaults an earlier
            # version wrote into the file only a note.
            changed = any(key.changed for key in parsed.retired_keys)
            log.log(
                logging.WARNING if changed else logging.INFO,
                "runtime config %s: keys no longer used by this version, ignored (their "
                "values are built in now; you may delete them): %s",
                self.path,
                ", ".join(key.describe() for key in parsed.retired_keys),
            )
        if parsed.config != self._config:
            log.info("runtime config loaded from %s", self.path)
        self._config = parsed.config
        self.unknown_keys = parsed.unknown_keys
        self.retired_keys = parsed.retired_keys
        self.from_file = True
        self.error = None

    def describe_state(self, gettext: Callable[..., str] = _english) -> str:
        """One line for `/status`: whose values are in force, and what is wrong with the file.

        `gettext`: the reader's words for it (the bot's `Words.gettext`); the error itself
        is in English, as the operator who edits the file reads it in the log.
        """
        self.current()
        if self.from_file:
            in_force = gettext("values of {file} in force", file=self.path.name)
        else:
            in_force = gettext("defaults in force")
        if self.error:
            return gettext("INVALID ({error}); {in_force}", error=self.error, in_force=in_force)
        if self._stamp is None and not self.from_file:
            return gettext("no file at {path}; defaults in force", path=self.path)
        if self._stamp is None:
            return gettext("{path} was deleted; its last values in force", path=self.path)
        if self.unknown_keys:
            return gettext(
                "{in_force}; unknown keys ignored: {keys}",
                in_force=in_force,
                keys=", ".join(self.unknown_keys),
            )
        return in_force
