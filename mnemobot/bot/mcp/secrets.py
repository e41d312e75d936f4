"""Secrets of MCP servers: `${VARIABLE}` references in `env`, `headers` and `url`, filled in
from the bot's environment only when a server is started.

The values are read from the process environment over the env files the bot's settings come
from (`~/.mnemobot/.env`, `./.env` or `--env-file`), so a token put where the bot token is
works. They are never written anywhere, and every value handed to a server (filled-in or
literal; of a URL, what was filled in, its query's values and a password) is treated as a
secret: it is taken out of log lines, `/status`, `doctor` and what the model reads.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, urlsplit

from dotenv import dotenv_values

from mnemobot.bot.mcp.config import VARIABLE_REFERENCE, McpServerConfig
from mnemobot.config.settings import env_files_found

# Shorter values are too likely to occur by chance to be worth hiding (as for the bot's
# own tokens in its logs).
MIN_SECRET_CHARS = 6
REDACTED = "[REDACTED]"


class MissingVariables(Exception):
    """A server's config names environment variables that are not set."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        listed = ", ".join(names)
        super().__init__(
            f"environment variable{'s' if len(names) > 1 else ''} {listed} not set; set "
            f"{'them' if len(names) > 1 else 'it'} in the bot's environment or env file"
        )


def bot_environment() -> dict[str, str]:
    """Variables as the bot's settings see them: the env files, then the environment."""
    values: dict[str, str] = {}
    for path in env_files_found():
        try:
            loaded = dotenv_values(path)
        except OSError:
            continue
        values.update({k: v for k, v in loaded.items() if v is not None})
    values.update(os.environ)
    return values


@dataclass(frozen=True, slots=True)
class FilledServer:
    """A server's `env`, `headers` and `url` with every reference filled in."""

    env: dict[str, str]
    headers: dict[str, str]
    url: str | None = None
    # Every value handed over: none of them may show in a log line or a reply.
    secrets: tuple[str, ...] = field(default=())


def fill_server(server: McpServerConfig, environment: Mapping[str, str]) -> FilledServer:
    """`server`'s env, headers and url filled in from `environment`; MissingVariables if
    any reference names a variable that is not set."""
    missing = [name for name in server.referenced_variables() if name not in environment]
    if missing:
        raise MissingVariables(missing)

    def fill(value: str) -> str:
        return VARIABLE_REFERENCE.sub(lambda m: environment[m.group(1)], value)

    env = {key: fill(value) for key, value in server.env.items()}
    headers = {key: fill(value) for key, value in server.headers.items()}
    secrets: list[str] = []
    for value in (*env.values(), *headers.values()):
        secrets.append(value)
        # "Bearer abc...": the token alone may show up too.
        secrets += value.split()
    url = None
    if server.url is not None:
        # Percent-encoded: a token's "+", "/" or "&" must reach the server as written.
        url = VARIABLE_REFERENCE.sub(lambda m: quote(environment[m.group(1)], safe=""), server.url)
        for name in VARIABLE_REFERENCE.findall(server.url):
            secrets += [environment[name], quote(environment[name], safe="")]
        # Not the whole URL: "cannot connect to https://host" should still say where.
        secrets += _url_secrets(url)
    return FilledServer(env, headers, url, tuple(s for s in secrets if len(s) >= MIN_SECRET_CHARS))


def _url_secrets(url: str) -> list[str]:
    """A URL's query values and password: where a key written into a URL sits."""
    parts = urlsplit(url)
    decoded = [value for _, value in parse_qsl(parts.query)]
    # An error may quote the URL as sent, with a value still percent-encoded.
    encoded = [pair.split("=", 1)[1] for pair in parts.query.split("&") if "=" in pair]
    return [*decoded, *encoded, *([parts.password] if parts.password else [])]


# Names of keys that usually hold a secret: a literal value under them is worth a warning.
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "COOKIE")


def literal_secrets(server: McpServerConfig) -> list[str]:
    """Keys of `env` / `headers` / the url's query whose name says secret but whose value
    names no variable, and a password written in the url: a secret written into
    runtime-config.json, which is better kept in the environment."""

    def literal(key: str, value: str) -> bool:
        named_secret = any(word in key.upper() for word in _SECRET_WORDS)
        return named_secret and not VARIABLE_REFERENCE.search(value)

    found = [k for k, v in (*server.env.items(), *server.headers.items()) if literal(k, v)]
    url = urlsplit(server.url or "")
    found += [f"{k} in the url" for k, v in parse_qsl(url.query) if literal(k, v)]
    if url.password and not VARIABLE_REFERENCE.search(url.password):
        found.append("the password in the url")
    return found


def hide_in_logs(secrets: Iterable[str]) -> None:
    """Add `secrets` to what the bot's log handlers redact: the filter `configure_logging`
    puts on them keeps its secrets in a list attribute `secrets`."""
    wanted = [s for s in secrets if len(s) >= MIN_SECRET_CHARS]
    if not wanted:
        return
    for handler in logging.getLogger().handlers:
        for log_filter in handler.filters:
            known = getattr(log_filter, "secrets", None)
            if isinstance(known, list):
                log_filter.secrets = [*known, *(s for s in wanted if s not in known)]  # type: ignore[union-attr]


def without_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (longest first) replaced by [REDACTED]."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
