"""The shipped systemd unit starts the bot: `mnemobot --version`, `doctor` and `run` under the
unit's system-call filter, not only the unit parsed.

systemd builds a unit's filter with libseccomp; so does this test, from the unit's own lines
and the members systemd gives each @set (`systemd-analyze syscall-filter` of the machine's
systemd), by the rules of systemd.exec(5):

- the first `SystemCallFilter=` decides: an allow-list (no "~"; systemd adds `@default` to
  it) or a deny-list ("~"); a later line adds to an allow-list, or with "~" takes away from
  it (the reverse for a deny-list); an empty one starts over;
- a call outside the filter kills the process with SIGSYS, unless `SystemCallErrorNumber=`
  names an errno, which the call then returns;
- `SystemCallArchitectures=native` is libseccomp's default filter (native calls only);
- a name libseccomp does not know on this machine is skipped, as systemd skips it.

Calls systemd's own list does not know are refused like the others (some systemd versions
answer those with ENOSYS): the emulation is never laxer than systemd. The unit's other
sandboxing (namespaces, ProtectSystem=...) needs systemd itself and is not emulated.

Each command runs in a child that loads the filter and then execs the installed `mnemobot`
script, as systemd's executor does before it execs ExecStart.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "deploy" / "mnemobot.service"
MNEMOBOT = Path(sys.executable).parent / "mnemobot"

# Run in the child: load the filter described by the JSON file argv[1], then exec argv[2:].
APPLY_FILTER = """
import json, os, sys
import pyseccomp as seccomp
spec = json.loads(open(sys.argv[1]).read())
refuse = seccomp.KILL_PROCESS if spec["errno"] is None else seccomp.ERRNO(spec["errno"])
listed = seccomp.ALLOW if spec["allowList"] else refuse
rules = seccomp.SyscallFilter(refuse if spec["allowList"] else seccomp.ALLOW)
arch = seccomp.system_arch()
for name in spec["names"]:
    if seccomp.resolve_syscall(arch, name) != -1:
        rules.add_rule(listed, name)
try:
    rules.load()
except OSError as exc:
    sys.exit(f"cannot load a seccomp filter here: {exc}")
os.execv(sys.argv[2], sys.argv[2:])
"""


@dataclass(frozen=True)
class SyscallFilter:
    allow_list: bool
    names: frozenset[str]
    errno: int | None  # None: kill the process (SIGSYS)


def service_lines(unit: Path) -> list[tuple[str, str]]:
    """(key, value) of the unit's [Service] section in order (a key may repeat)."""
    lines, section = [], ""
    for raw in unit.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            key, _, value = line.partition("=")
            lines.append((key.strip(), value.strip()))
    return lines


def systemd_sets() -> dict[str, list[str]]:
    """Every @set systemd knows, with its members (calls and @sets) as it lists them."""
    listed = subprocess.run(
        ["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True
    ).stdout
    sets: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in listed.splitlines():
        line = raw.strip()
        if raw.startswith("@"):
            current = sets.setdefault(line, [])
        elif line and not line.startswith("#") and raw.startswith(" ") and current is not None:
            current.append(line)
    return sets


def members(names: list[str], sets: dict[str, list[str]]) -> set[str]:
    found: set[str] = set()
    for name in names:
        if name.startswith("@"):
            found |= members(sets[name], sets)
        else:
            found.add(name.split(":")[0])  # "call:ERRNO" in a deny-list
    return found


def unit_filter(lines: list[tuple[str, str]], sets: dict[str, list[str]]) -> SyscallFilter:
    allow_list: bool | None = None
    names: set[str] = set()
    refuse_with: int | None = None
    for key, value in lines:
        if key == "SystemCallErrorNumber":
            refuse_with = None if value in ("", "kill") else getattr(errno, value)
        if key != "SystemCallFilter":
            continue
        if not value:
            allow_list, names = None, set()
            continue
        inverted = value.startswith("~")
        listed = members(value.lstrip("~").split(), sets)
        if allow_list is None:
            allow_list = not inverted
            names = listed | (members(["@default"], sets) if allow_list else set())
        elif allow_list != inverted:
            names |= listed
        else:
            names -= listed
    assert allow_list is not None, "the unit has no SystemCallFilter="
    return SyscallFilter(allow_list, frozenset(names), refuse_with)


@pytest.fixture(scope="module")
def unit_syscall_filter() -> SyscallFilter:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed: the unit's @sets cannot be read")
    try:
        import pyseccomp  # noqa: F401  (loads libseccomp)
    except (ImportError, RuntimeError) as exc:
        pytest.skip(f"no libseccomp binding (pip install pyseccomp, libseccomp2): {exc}")
    lines = service_lines(UNIT)
    assert ("SystemCallArchitectures", "native") in lines
    return unit_filter(lines, systemd_sets())


def filtered(spec: SyscallFilter, workdir: Path, *args: str) -> list[str]:
    """The command line that runs `mnemobot ARGS` under `spec`."""
    path = workdir / "filter.json"
    path.write_text(
        json.dumps({"allowList": spec.allow_list, "names": sorted(spec.names), "errno": spec.errno})
    )
    return [sys.executable, "-c", APPLY_FILTER, str(path), str(MNEMOBOT), *args]


def minimal_env(tmp_path: Path, **variables: str) -> dict[str, str]:
    """What systemd gives the unit: its own variables, a PATH, a HOME; nothing of ours."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "BOT_WORKSPACE": str(tmp_path / "workspace"),
        **variables,
    }


def test_the_emulated_filter_refuses_what_the_unit_refuses(
    unit_syscall_filter: SyscallFilter,
) -> None:
    """The emulation reads the unit as systemd does (else the test below proves nothing):
    the service set and @default, less @privileged and @resources (where `mbind` is, which
    numpy's OpenBLAS calls at import)."""
    spec = unit_syscall_filter
    assert spec.allow_list
    assert {"read", "openat", "execve", "socket", "connect", "clone3", "futex"} <= spec.names
    assert not {"mbind", "setrlimit", "chroot", "mount", "reboot"} & spec.names


@pytest.mark.slow
def test_version_doctor_and_run_work_under_the_units_syscall_filter(
    unit_syscall_filter: SyscallFilter, tmp_path: Path
) -> None:
    spec = unit_syscall_filter
    # Where seccomp is off (an old kernel, a container that forbids it), nothing can be shown.
    probe = subprocess.run(
        filtered(SyscallFilter(False, frozenset(), None), tmp_path, "--version"),
        capture_output=True,
        text=True,
        timeout=60,
        env=minimal_env(tmp_path),
    )
    if "cannot load a seccomp filter here" in probe.stderr:
        pytest.skip(probe.stderr.strip())
    assert probe.returncode == 0, probe.stderr

    version = subprocess.run(
        filtered(spec, tmp_path, "--version"),
        capture_output=True,
        text=True,
        timeout=60,
        env=minimal_env(tmp_path),
    )
    assert version.returncode == 0, (version.returncode, version.stderr)
    assert version.stdout.startswith("mnemobot ")

    with FakeOpenAIServer() as model, TelegramServer() as telegram:
        env = minimal_env(
            tmp_path,
            OPENAI_BASE_URL=model.base_url,
            OPENAI_API_KEY="sk-test",
            TELEGRAM_BOT_TOKEN=telegram.token,
            TELEGRAM_API_BASE_URL=telegram.base_url,
            TELEGRAM_ALLOWED_USERS="42",
        )
        doctor = subprocess.run(
            filtered(spec, tmp_path, "doctor"),
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=env["HOME"],
        )
        # Killed by SIGSYS, the process says nothing: -31, "Bad system call" in a shell.
        assert doctor.returncode != -signal.SIGSYS, "doctor was killed by the syscall filter"
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        assert "ok   llm:" in doctor.stdout
        assert "ok   telegram: token valid for @mnemo_test_bot" in doctor.stdout

        # ExecStart itself: the bot starts, answers a message, and stops on SIGTERM.
        log = tmp_path / "run.log"
        with log.open("wb") as output:
            bot = subprocess.Popen(
                filtered(spec, tmp_path, "run"),
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=env["HOME"],
            )
        try:
            telegram.send_text("hello from systemd", chat_id=42)
            deadline = time.monotonic() + 60
            while not telegram.sent_messages(42) and bot.poll() is None:
                assert time.monotonic() < deadline, "no answer within 60 s"
                time.sleep(0.05)
            assert bot.poll() is None, (bot.returncode, log.read_text()[-2000:])
            assert telegram.sent_messages(42)[0]["plain_text"] == "echo: hello from systemd"
            bot.send_signal(signal.SIGTERM)
            assert bot.wait(30) == 0, log.read_text()[-2000:]
        finally:
            if bot.poll() is None:
                os.kill(bot.pid, signal.SIGKILL)
                bot.wait()
