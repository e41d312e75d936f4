"""Logging to stderr (or a file) with secrets redacted, whatever library logs them."""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

REDACTED = "[REDACTED]"
# Shorter strings are too likely to occur by chance to be worth replacing.
MIN_SECRET_CHARS = 6


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret (longest first) replaced by `[REDACTED]`."""
    usable = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
    for secret in usable:
        text = text.replace(secret, REDACTED)
    return text


class RedactSecrets(logging.Filter):
    """Replaces every known secret (bot token, API keys) in a record with `[REDACTED]`.

    httpx logs request URLs at INFO, and Telegram's URLs contain the bot token, so the
    filter sits on the handler and sees every library's records.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s and len(s) >= MIN_SECRET_CHARS]

    def _clean(self, text: str) -> str:
        return redact(text, self.secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        cleaned = self._clean(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        if cleaned != message:
            record.msg = cleaned
            record.args = None
        return True


def _redacting_excepthook(secrets: list[str]) -> Callable[..., None]:
    def excepthook(
        kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(redact(text, secrets))

    return excepthook


class PrivateLogFile(logging.handlers.RotatingFileHandler):
    """A log file readable by its owner only (like every file of the workspace), kept to
    LOG_FILE_BYTES times LOG_FILE_BACKUPS + 1."""

    def _open(self) -> io.TextIOWrapper:
        stream = super()._open()
        os.chmod(self.baseFilename, 0o600)
        return stream


# A week of a busy console's INFO lines is well under a megabyte; three files bound it.
LOG_FILE_BYTES = 5_000_000
LOG_FILE_BACKUPS = 2


def configure_logging(
    level: str,
    secrets: Iterable[str] = (),
    *,
    stderr_level: str | int | None = None,
    log_file: Path | None = None,
) -> None:
    """Records of `level` and above, with secrets redacted, go to stderr (only those of
    `stderr_level` and above, when given) or, with `log_file`, to that file instead."""
    secrets = list(secrets)
    if log_file is not None:
        log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handler: logging.Handler = PrivateLogFile(
            log_file, maxBytes=LOG_FILE_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8"
        )
    else:
        handler = logging.StreamHandler(sys.stderr)
        if stderr_level is not None:
            handler.setLevel(stderr_level)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets(secrets))
    # A crash's traceback bypasses logging; it must not print a token either.
    sys.excepthook = _redacting_excepthook(secrets)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        if isinstance(old, logging.FileHandler):
            old.close()
    root.addHandler(handler)
    root.setLevel(level)
    # Request lines of the HTTP clients are noise at INFO (and carry the bot token in URLs).
    for noisy in ("httpx", "httpx2", "httpcore", "openai", "telegram.ext.Updater"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
