"""Static settings from the environment and env files.

Where they are read from, strongest first: the process environment; then either the one
file named by `--env-file` / `MNEMOBOT_ENV_FILE`, or `./.env` (the current directory)
over `~/.mnemobot/.env` (written by `mnemobot init`), a key in `./.env` winning.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

HOW_TO_FIX = {
    "TELEGRAM_BOT_TOKEN": "get one from @BotFather and set TELEGRAM_BOT_TOKEN=123456:ABC...",
    "TELEGRAM_API_BASE_URL": "use a URL such as https://api.telegram.org/bot",
    "TELEGRAM_ALLOWED_USERS": "use comma-separated user ids, e.g. 1234,5678, or * for everyone",
    "TELEGRAM_OPERATORS": "use comma-separated user ids, e.g. 1234",
    "OPENAI_BASE_URL": "use the server's base URL, e.g. http://127.0.0.1:8000/v1",
    "BOT_MODEL": "set the chat model name, e.g. BOT_MODEL=gpt-4o-mini",
    "BOT_WORKSPACE": "point it at a writable directory",
    "BOT_LOG_LEVEL": "use one of DEBUG, INFO, WARNING, ERROR",
    "BOT_WEBHOOK_LISTEN": "use host:port, e.g. 0.0.0.0:8443",
    "BOT_REDIS_URL": "use redis://[:password@]host:6379/0 (or rediss:// for TLS), or unset it",
    "BOT_REPLICA_ID": "use letters, digits, _ and - only, e.g. BOT_REPLICA_ID=bot-1",
}


ENV_FILE_VARIABLE = "MNEMOBOT_ENV_FILE"


def user_env_file() -> Path:
    """Where `mnemobot init` writes settings by default, read from any directory."""
    return Path.home() / ".mnemobot" / ".env"


def explicit_env_file() -> Path | None:
    """The file named by `--env-file` / MNEMOBOT_ENV_FILE, if any."""
    named = os.environ.get(ENV_FILE_VARIABLE, "").strip()
    return Path(named).expanduser() if named else None


def env_file_candidates() -> tuple[Path, ...]:
    """The env files settings may come from, weakest first (a later file's key wins)."""
    explicit = explicit_env_file()
    if explicit is not None:
        return (explicit,)
    return (user_env_file(), Path(".env"))


def env_files_found() -> list[Path]:
    """The candidate env files that exist, weakest first, as absolute paths."""
    return [path.resolve() for path in env_file_candidates() if path.is_file()]


class SettingsError(Exception):
    """A setting is missing or invalid; the message is one line a person can act on."""


class AllowedUsers(frozenset[int]):
    """The Telegram user ids allowed to talk to the bot; `everyone` for `*`."""

    everyone: bool = False

    @classmethod
    def parse(cls, raw: str) -> AllowedUsers:
        raw = raw.strip()
        if raw == "*":
            users = cls()
            users.everyone = True
            return users
        ids: list[int] = []
        for part in raw.replace(";", ",").split(","):
            part = part.strip()
            if not part:
                continue
            if not part.lstrip("-").isdigit():
                raise ValueError(f"{part!r} is not a numeric user id")
            ids.append(int(part))
        return cls(ids)

    def allows(self, user_id: int | None) -> bool:
        return self.everyone or (user_id is not None and user_id in self)

    def describe(self) -> str:
        if self.everyone:
            return "everyone"
        return ", ".join(str(i) for i in sorted(self)) or "nobody"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    telegram_bot_token: SecretStr | None = None
    telegram_api_base_url: str = "https://api.telegram.org/bot"
    # Where files from getFile are downloaded; unset: beside TELEGRAM_API_BASE_URL
    # (".../bot" -> ".../file/bot"), as on api.telegram.org and a local Bot API server.
    telegram_api_file_url: str | None = None
    telegram_allowed_users: Annotated[AllowedUsers, NoDecode] = Field(default_factory=AllowedUsers)
    telegram_operators: Annotated[AllowedUsers, NoDecode] = Field(default_factory=AllowedUsers)
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    # The embedding server's key (memory.embeddings); unset, OPENAI_API_KEY is sent when the
    # embeddings come from the chat model's server.
    bot_embeddings_api_key: SecretStr | None = None
    bot_model: str = "gpt-4o-mini"
    # The key of the speech-to-text server (media.transcription.baseUrl). Unset: the chat
    # model's key, but only when transcription goes to the chat model's own server; a key
    # is never sent to another host than the one it was given for.
    bot_transcription_api_key: SecretStr | None = None
    bot_workspace: Path = Path("~/.mnemobot/workspace")
    bot_log_level: str = "INFO"
    bot_webhook_url: str | None = None
    bot_webhook_secret: SecretStr | None = None
    bot_webhook_listen: str = "0.0.0.0:8443"
    # Set: several replicas share sessions, update claims, chat leases and the pending inbox
    # through this Redis. A secret: it may carry a password.
    bot_redis_url: SecretStr | None = None
    # Names this replica's own files (its outbox) on a shared workspace; the host name when
    # unset, so a restarted container with a fixed hostname finds its undelivered replies.
    bot_replica_id: str | None = None
    # The memory page's access tokens (`run --web`, `mnemobot web`): read here so an env
    # file's value counts as it does for every other setting; unset, the page makes one.
    mnemobot_web_token: SecretStr | None = None
    mnemobot_web_tokens: SecretStr | None = None

    @field_validator("telegram_allowed_users", mode="before")
    @classmethod
    def _parse_users(cls, value: object) -> AllowedUsers:
        if isinstance(value, AllowedUsers):
            return value
        return AllowedUsers.parse(str(value or ""))

    @field_validator("telegram_operators", mode="before")
    @classmethod
    def _parse_operators(cls, value: object) -> AllowedUsers:
        if isinstance(value, AllowedUsers) and not value.everyone:
            return value
        if str(value or "").strip() == "*":
            raise ValueError("* is not allowed here: name the operators' user ids")
        return AllowedUsers.parse(str(value or ""))

    def telegram_file_url(self) -> str:
        """The base URL of file downloads (the token is appended by python-telegram-bot)."""
        if self.telegram_api_file_url:
            return self.telegram_api_file_url
        base = self.telegram_api_base_url.rstrip("/")
        root, _, last = base.rpartition("/")
        return f"{root}/file/{last}" if root else f"{base}/file/bot"

    @field_validator("telegram_api_base_url", "telegram_api_file_url", "openai_base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator("bot_model")
    @classmethod
    def _model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("bot_workspace")
    @classmethod
    def _workspace(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("bot_log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError(f"{value!r} is not a logging level")
        return level

    @field_validator("bot_webhook_listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{value!r} is not host:port")
        return value

    @field_validator("bot_redis_url")
    @classmethod
    def _redis_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        if not value.get_secret_value().startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("bot_replica_id")
    @classmethod
    def _replica_id(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", value.strip()):
            raise ValueError(f"{value!r} is not a replica name")
        return value.strip()

    @property
    def operators(self) -> frozenset[int]:
        """The people who run the bot: TELEGRAM_OPERATORS, else the one allowed user.

        Never "the first of several allowed users": an operator can export and erase every
        group's memory, a power nobody should get by the order of a list.
        """
        if self.telegram_operators:
            return frozenset(self.telegram_operators)
        allowed = self.telegram_allowed_users
        return frozenset(allowed) if len(allowed) == 1 and not allowed.everyone else frozenset()

    @property
    def replica_id(self) -> str:
        """This replica's name: BOT_REPLICA_ID, else the host name made file-safe."""
        if self.bot_replica_id:
            return self.bot_replica_id
        return re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname())[:64] or "replica"

    @property
    def webhook_host_port(self) -> tuple[str, int]:
        host, _, port = self.bot_webhook_listen.rpartition(":")
        return host, int(port)


def load_settings() -> Settings:
    """Load settings, turning any validation problem into one actionable SettingsError."""
    explicit = explicit_env_file()
    if explicit is not None and not explicit.is_file():
        raise SettingsError(
            f"{ENV_FILE_VARIABLE} / --env-file names {explicit}, which does not exist; "
            f"fix the path or create it with `mnemobot init --env-file {explicit}`."
        )
    try:
        return Settings(_env_file=env_file_candidates())
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else "settings"
        variable = field.upper()
        reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        fix = HOW_TO_FIX.get(variable, "check its value")
        raise SettingsError(f"{variable} is invalid: {reason}; {fix}.") from None
