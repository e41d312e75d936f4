"""`mnemobot init`: ask for (or take as flags) the bot token, the model endpoint and model,
and the allowed users; check each against the real servers; write the env file. Without a
bot token (`--console`, or an empty answer at the terminal) it sets up the model alone,
for `mnemobot chat`.

The file (default `~/.mnemobot/.env`, read from any directory) is written atomically with
mode 0600: it holds the bot token and the API key. Keys already in it that init does not
ask about are kept. Without a terminal, every value comes from a flag (or its default),
and a failed check exits 1 without writing anything.

When the model server lists an embedding model (as `doctor` finds one), init asks once
whether to turn recall by meaning on with it (default no; `--embeddings` is yes). That
setting lives in the runtime config of the workspace the bot will use, not in the env
file: init sets `memory.embeddings` there and keeps the file's other keys.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from dotenv import dotenv_values
from pydantic import ValidationError

from mnemobot.bot.cli.embedding_check import embedding_models, offered_settings
from mnemobot.bot.cli.parser import DEFAULT_MODEL, add_init_arguments
from mnemobot.bot.cli.probes import NETWORK_CHECK_SECONDS, ModelsList, ProbeError, list_models
from mnemobot.bot.cli.probes import telegram_username as probe_telegram
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.bot.turn.commands import endpoint_for_display
from mnemobot.config.runtime_store import RuntimeConfigError
from mnemobot.config.settings import (
    AllowedUsers,
    Settings,
    env_file_candidates,
    env_files_found,
    explicit_env_file,
    user_env_file,
)
from mnemobot.config.workspace import WorkspacePaths

DEFAULT_TELEGRAM_API = str(Settings.model_fields["telegram_api_base_url"].default)
# Values written bare; anything else is double-quoted with escapes.
_BARE_VALUE = re.compile(r"^[A-Za-z0-9_:/.,*@+=-]*$")


class InitFailed(Exception):
    """A value is missing or failed its check; the message says which and how to fix it."""


def env_file_target(flag: str | None) -> Path:
    """Where init writes: --env-file, else MNEMOBOT_ENV_FILE, else ~/.mnemobot/.env."""
    if flag:
        return Path(flag).expanduser()
    return explicit_env_file() or user_env_file()


def _env_line(key: str, value: str) -> str:
    if _BARE_VALUE.match(value):
        return f"{key}={value}\n"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{key}="{escaped}"\n'


def write_env_file(path: Path, values: dict[str, str]) -> None:
    """Replace `path` atomically with `values`, readable by its owner only (0600)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # `.env.example` is the repository's, not installed: a pip user has no such file.
    text = "# Written by `mnemobot init`; every variable: docs/configuration.md of mnemobot.\n"
    text += "".join(_env_line(key, value) for key, value in values.items())
    # mkstemp creates the file 0600, so the token is never readable by others, even briefly.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".env.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Asker:
    """Takes each value from its flag, else asks on the terminal, else uses the default."""

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive

    def value(
        self,
        label: str,
        flag_value: str | None,
        default: str | None,
        *,
        flag: str,
        secret: bool = False,
        required: bool = False,
    ) -> str | None:
        if flag_value is not None:
            return flag_value.strip()
        if not self.interactive:
            if required and not default:
                raise InitFailed(f"{label} is needed: pass {flag} (no terminal to ask on)")
            return default
        shown = "set, Enter keeps it" if secret and default else default
        prompt = f"{label}" + (f" [{shown}]" if shown else "") + ": "
        while True:
            answer = (getpass.getpass(prompt) if secret else input(prompt)).strip()
            if answer or default or not required:
                return answer or default
            print(f"  {label} is needed.")

    def confirm(self, prompt: str, flag_value: bool) -> bool:
        """A yes/no question whose default is no; the flag says yes without asking."""
        if flag_value or not self.interactive:
            return flag_value
        return input(f"{prompt} [y/N] ").strip().lower() in ("y", "yes")

    def retry(self, problem: str) -> None:
        """Report a failed check: ask again on a terminal, give up without one."""
        if not self.interactive:
            raise InitFailed(problem)
        print(f"  {problem}")


def _announce(what: str) -> None:
    print(f"... {what} (up to {NETWORK_CHECK_SECONDS:g} s)", flush=True)


def _ask_telegram(
    asker: Asker, args: argparse.Namespace, old: dict[str, str], *, optional: bool = False
) -> dict[str, str]:
    """The bot token (checked) and allowed users; with `optional`, an empty token at the
    terminal sets up the console only: nothing of Telegram is asked (returns {})."""
    api = os.environ.get("TELEGRAM_API_BASE_URL") or old.get("TELEGRAM_API_BASE_URL")
    api = api or DEFAULT_TELEGRAM_API
    where = endpoint_for_display(api)
    token_flag = args.token
    skippable = optional and asker.interactive and not old.get("TELEGRAM_BOT_TOKEN")
    while True:
        token = asker.value(
            "Telegram bot token (from @BotFather; empty: the console only, `mnemobot chat`)"
            if skippable
            else "Telegram bot token (from @BotFather)",
            token_flag,
            old.get("TELEGRAM_BOT_TOKEN"),
            flag="--token, or --console for the model alone" if optional else "--token",
            secret=True,
            required=not skippable,
        )
        token_flag = None
        if not token:
            return {}
        if args.no_check:
            break
        _announce(f"asking {where} whose token this is")
        try:
            username = asyncio.run(probe_telegram(token, api, where))
        except ProbeError as error:
            asker.retry(str(error))
            continue
        print(f"ok  the token belongs to @{username}")
        break
    users_flag = args.allowed_users
    while True:
        raw = asker.value(
            "Telegram user ids allowed to talk to the bot (comma-separated, * for everyone; "
            "not known yet? leave it empty: the bot tells whoever writes to it their id)",
            users_flag,
            old.get("TELEGRAM_ALLOWED_USERS"),
            flag="--allowed-users",
        )
        users_flag = None
        try:
            users = AllowedUsers.parse(raw or "")
        except ValueError as exc:
            asker.retry(f"TELEGRAM_ALLOWED_USERS: {exc}; use ids such as 1234,5678")
            continue
        if not users and not users.everyone:
            print(
                "WARN nobody is allowed yet: the bot answers strangers with their user id; "
                "add yours with `mnemobot init --allowed-users ID`"
            )
        break
    values = {"TELEGRAM_BOT_TOKEN": token, "TELEGRAM_ALLOWED_USERS": raw or ""}
    if api != DEFAULT_TELEGRAM_API:
        # The token was checked against this Bot API server: the bot must use it too.
        values["TELEGRAM_API_BASE_URL"] = api
    return values


def _ask_model(
    asker: Asker, args: argparse.Namespace, old: dict[str, str]
) -> tuple[dict[str, str], ModelsList]:
    """The model settings, and the models the server listed (unknown with --no-check)."""
    flags = {"base": args.base_url, "key": args.api_key, "model": args.model}
    while True:
        base_url = asker.value(
            "Model server base URL (empty for OpenAI)",
            flags["base"],
            old.get("OPENAI_BASE_URL"),
            flag="--base-url",
        )
        if base_url and not base_url.startswith(("http://", "https://")):
            flags["base"] = None
            asker.retry(f"{base_url!r} is not a URL; use e.g. http://127.0.0.1:8000/v1")
            continue
        api_key = asker.value(
            "API key (empty for local servers)",
            flags["key"],
            old.get("OPENAI_API_KEY"),
            flag="--api-key",
            secret=True,
        )
        flags["base"] = flags["key"] = None
        listed = ModelsList(None)
        if not args.no_check:
            where = endpoint_for_display(base_url)
            _announce(f"asking {where} for its models")
            try:
                listed = asyncio.run(list_models(base_url or None, api_key or None, where))
            except ProbeError as error:
                asker.retry(str(error))
                continue
            if listed.models is None:
                print(f"WARN {where} has no models list; the model name cannot be checked")
            else:
                print(f"ok  {where} offers: {listed.describe()}")
        default = old.get("BOT_MODEL") or DEFAULT_MODEL
        if listed.models and default not in listed.models:
            # An embedding model cannot chat: offer the first other one.
            embedders = embedding_models(listed.models)
            default = next((m for m in listed.models if m not in embedders), listed.models[0])
        while True:
            model = asker.value("Model", flags["model"], default, flag="--model", required=True)
            flags["model"] = None
            assert model is not None
            if listed.serves(model) is not False:
                break
            asker.retry(
                f"the server does not serve {model!r}; it offers: {listed.describe()}; "
                "pick one of them (--model)"
            )
        values = {"BOT_MODEL": model}
        if base_url:
            values["OPENAI_BASE_URL"] = base_url
        if api_key:
            values["OPENAI_API_KEY"] = api_key
        return values, listed


def _ask_embeddings(
    asker: Asker, args: argparse.Namespace, listed: ModelsList, chat_model: str
) -> str | None:
    """The embedding model to turn recall by meaning on with, if the server lists one and
    the answer (or --embeddings) is yes."""
    found = [name for name in embedding_models(listed.models or []) if name != chat_model]
    if not found:
        if args.embeddings:
            raise InitFailed(
                "--embeddings: the model server lists no embedding model (a name with embed, "
                "e5, bge, gte, minilm or nomic); set memory.embeddings in the runtime config "
                "by hand (see docs/embeddings.md)"
            )
        return None
    model = found[0]
    if not asker.interactive and not args.embeddings:
        print(
            f"note the model server also serves {model!r}: `mnemobot init --embeddings` turns "
            "on recall by meaning with it"
        )
        return None
    question = (
        f"The model server also serves {model!r}, an embedding model. Turn on recall by "
        "meaning (memory found by what was meant, not only the words said)?"
    )
    return model if asker.confirm(question, args.embeddings) else None


def _turn_on_embeddings(env_files: tuple[Path, ...], model: str) -> None:
    """Set memory.embeddings in the runtime config of the workspace these env files give
    the bot (BOT_WORKSPACE, else the default); a failure is a warning: the env file is
    written, and the setting can be made by hand."""
    try:
        workspace = Settings(_env_file=env_files).bot_workspace
        workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
        store = open_runtime_config(WorkspacePaths(workspace).runtime_config)
        store.set_keys(("memory", "embeddings"), offered_settings(model))
    except (ValidationError, RuntimeConfigError, OSError) as exc:
        problem = str(exc).splitlines()[0][:200]
        print(
            f"WARN recall by meaning not turned on ({problem}); set memory.embeddings "
            f"{json.dumps(offered_settings(model))} in the runtime config by hand"
        )
        return
    print(f"ok  recall by meaning on with {model!r} in {store.path}")


def run_init(
    args: argparse.Namespace, *, telegram: bool | None = None, then: str | None = None
) -> int:
    """Ask, check, write. With `telegram` False only the model is asked about (`mnemobot
    chat` needs no bot token), True the bot token is needed (`run`), None as the command
    says (`init --console`: the model alone; at a terminal an empty token skips Telegram);
    `then` names what the command that offered init does next (instead of the hint to run
    doctor and run)."""
    target = env_file_target(args.env_file)
    interactive = sys.stdin.isatty() and not args.non_interactive
    old = {k: v for k, v in dotenv_values(target).items() if v is not None}
    if target.exists():
        print(f"Updating {target} (keys not asked about are kept).")
    asker = Asker(interactive)
    try:
        values = dict(old)
        # Cleared first: init's answers decide whether these keys are set at all.
        for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
            values.pop(key, None)
        if telegram is None and not getattr(args, "console", False):
            values.update(_ask_telegram(asker, args, old, optional=True))
        elif telegram:
            values.update(_ask_telegram(asker, args, old))
        model_values, listed = _ask_model(asker, args, old)
        values.update(model_values)
        embedding_model = _ask_embeddings(asker, args, listed, model_values["BOT_MODEL"])
    except InitFailed as exc:
        print(f"mnemobot: {exc}; nothing was written.", file=sys.stderr)
        return 1
    except (EOFError, KeyboardInterrupt):
        print("\nmnemobot: init cancelled; nothing was written.", file=sys.stderr)
        return 130
    write_env_file(target, values)
    print(f"Wrote {target} (readable by you only).")
    if embedding_model is not None:
        # The workspace as `run` will see it: what `--env-file` (or the usual files) give.
        _turn_on_embeddings((target,) if args.env_file else env_file_candidates(), embedding_model)
    local = Path(".env").resolve()
    reads_local = not args.env_file and explicit_env_file() is None and local.is_file()
    if reads_local and local != target.resolve():
        print(f"Note: {local} is read too, and its values win over {target}.")
    if then is not None:
        print(then, flush=True)
        return 0
    where = f" --env-file {target}" if args.env_file else ""
    if "TELEGRAM_BOT_TOKEN" not in values:
        print(
            f"Next: `mnemobot{where} chat` talks to the bot here (`mnemobot{where} doctor` "
            f"checks everything); for Telegram, `mnemobot{where} init` again with a bot token."
        )
        return 0
    print(f"Next: `mnemobot{where} doctor`, then `mnemobot{where} run`.")
    return 0


def offer_init(
    hint: str,
    ask: Callable[[str], str] = input,
    *,
    telegram: bool = True,
    then: str | None = None,
) -> int:
    """What `run` and `chat` do when a setting they need is missing: on a terminal with no
    settings at all, offer to set up now; otherwise print the one-line `hint`. Returns the
    exit code: 0 only when init wrote the settings, and the command may go on (`then`
    says how)."""
    if env_files_found():
        print(hint, file=sys.stderr)
        return 2
    if not sys.stdin.isatty():
        print(
            f"{hint} No settings file found: `mnemobot init` sets everything up.", file=sys.stderr
        )
        return 2
    try:
        answer = ask("No settings found. Set them up now with `mnemobot init`? [Y/n] ")
    except (EOFError, KeyboardInterrupt):
        answer = "n"
    if answer.strip().lower() not in ("", "y", "yes"):
        print(hint, file=sys.stderr)
        return 2
    return run_init(build_parser_for_init().parse_args([]), telegram=telegram, then=then)


def build_parser_for_init() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnemobot init")
    add_init_arguments(parser)
    return parser
