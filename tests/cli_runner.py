"""`mnemobot ARGS` for tests: in this process when the command allows it, else as a child.

A child Python pays about three seconds of CPU for its imports (openai alone is one) on the
CI machine's two cores, and the suite runs a hundred CLI commands: most of its time. So the
commands that need no process of their own (`memory`, `doctor`, `config`, `chat`, `init`,
help) run `main()` here, in a thread (it calls `asyncio.run`, and an async test's loop is
running in this one), with what the process would have had of its own: the environment,
working directory, stdin, stdout and stderr, umask, logging, excepthook, GC and switch
interval, each put back afterwards. `run`, `bench` and `eval` (signal handlers, children,
long runs) still get a process, as does anything a test wants killed.

Tests run one at a time per xdist worker, so swapping process-wide state for one command
is safe; the fake servers' threads touch none of it.
"""

from __future__ import annotations

import gc
import io
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

# Commands that install signal handlers, start children or run for minutes.
OWN_PROCESS_COMMANDS = frozenset({"run", "bench", "eval"})

# One command at a time owns this process's state; a second one running at the same time
# (a test starting two consoles on one chat) gets a process of its own.
_IN_PROCESS = threading.Lock()


def command_of(args: Sequence[str]) -> str | None:
    """The subcommand of `args`, skipping `--env-file PATH` before it."""
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--env-file":
            if rest:
                rest.pop(0)
            continue
        if word.startswith("--env-file="):
            continue
        return word
    return None


def run_cli(
    args: Sequence[str],
    env: dict[str, str],
    *,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`python -m mnemobot ARGS` with exactly `env` as its environment."""
    if command_of(args) not in OWN_PROCESS_COMMANDS and _IN_PROCESS.acquire(blocking=False):
        try:
            return _in_process(list(args), env, cwd, input, timeout)
        finally:
            _IN_PROCESS.release()
    return subprocess.run(
        [sys.executable, "-m", "mnemobot", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        check=False,
    )


def _in_process(
    args: list[str], env: dict[str, str], cwd: Path | None, input: str | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    from mnemobot.bot.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code: list[int] = []

    def command() -> None:
        try:
            code.append(main(args))
        except SystemExit as exc:
            # argparse's errors and --version end this way, as they would end a process.
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            code.append(exc.code if isinstance(exc.code, int) else int(exc.code is not None))

    with _own_process_state(env, cwd, input), redirect_stdout(out), redirect_stderr(err):
        runner = threading.Thread(target=command, name="mnemobot-cli", daemon=True)
        runner.start()
        runner.join(timeout)
    if runner.is_alive():
        raise subprocess.TimeoutExpired(
            ["mnemobot", *args], timeout, out.getvalue(), err.getvalue()
        )
    if not code:
        raise AssertionError(f"mnemobot {' '.join(args)} raised; stderr:\n{err.getvalue()}")
    return subprocess.CompletedProcess(["mnemobot", *args], code[0], out.getvalue(), err.getvalue())


@contextmanager
def _own_process_state(env: dict[str, str], cwd: Path | None, input: str | None) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    saved_stdin = sys.stdin
    saved_hook = sys.excepthook
    saved_threshold = gc.get_threshold()
    saved_switch = sys.getswitchinterval()
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    saved_levels = {
        name: logger.level
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    sys.stdin = io.StringIO(input or "")
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        os.umask(saved_umask)
        sys.stdin = saved_stdin
        sys.excepthook = saved_hook
        gc.unfreeze()
        gc.set_threshold(*saved_threshold)
        sys.setswitchinterval(saved_switch)
        for handler in root.handlers[:]:
            if handler not in saved_handlers:
                root.removeHandler(handler)
        for handler in saved_handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(saved_level)
        for name, logger in list(logging.root.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                logger.setLevel(saved_levels.get(name, logging.NOTSET))
