"""Deployment files, checked statically (no container engine or systemd needed).

What a broken deployment would show first: the image running as root, the workspace not on
a volume, a package left out of the image, compose without the env file or the volume, a
systemd unit that does not parse or does not start `mnemobot run`.
"""

from __future__ import annotations

import configparser
import json
import tomllib
from pathlib import Path

import pytest
import yaml

from mnemobot.bot.cli.main import installed_version, main

REPO = Path(__file__).resolve().parents[1]


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order; continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (REPO / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        keyword, _, arguments = line.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def last(instructions: list[tuple[str, str]], keyword: str) -> str:
    found = [arguments for name, arguments in instructions if name == keyword]
    assert found, f"the Dockerfile has no {keyword}"
    return found[-1]


def test_dockerfile_runs_mnemobot_as_a_non_root_user_on_a_data_volume() -> None:
    instructions = dockerfile_instructions()
    assert instructions[0][0] == "FROM"
    assert instructions[0][1].startswith("python:3.11-slim")
    user = last(instructions, "USER").split(":")[0]
    assert user not in ("root", "0")
    assert json.loads(last(instructions, "VOLUME")) == ["/data"]
    env = " ".join(arguments for name, arguments in instructions if name == "ENV")
    assert "BOT_WORKSPACE=/data" in env
    command = json.loads(last(instructions, "ENTRYPOINT")) + json.loads(last(instructions, "CMD"))
    assert command == ["mnemobot", "run"]
    # The user is switched to only after everything is installed as root.
    names = [name for name, _ in instructions]
    assert max(i for i, name in enumerate(names) if name == "RUN") < names.index("USER")
    assert any("pip install ." in arguments for name, arguments in instructions if name == "RUN")


def test_the_image_gets_every_package_pip_installs() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    # The top-level folder of every package pattern: "mnemobot", "mnemobot.*" -> mnemobot.
    packages = {
        p.split(".")[0].rstrip("*")
        for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    copied = {
        arguments.split()[0]
        for name, arguments in dockerfile_instructions()
        if name == "COPY" and not arguments.startswith("--")
    }
    assert packages <= copied
    assert {"pyproject.toml", "README.md", "LICENSE"} <= set(
        " ".join(a for n, a in dockerfile_instructions() if n == "COPY").split()
    )
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", ".git", ".env"} <= set(ignored)


def test_compose_uses_the_env_file_the_volume_and_a_restart_policy() -> None:
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    service = compose["services"]["mnemobot"]
    assert service["env_file"] == [".env"]
    assert service["environment"]["BOT_WORKSPACE"] == "/data"
    volume, _, target = service["volumes"][0].partition(":")
    assert target == "/data"
    assert volume in compose["volumes"]
    assert service["restart"] in ("unless-stopped", "always", "on-failure")
    assert service["build"] == "."


def test_systemd_unit_parses_and_runs_mnemobot_hardened() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    unit.read_string((REPO / "deploy" / "mnemobot.service").read_text())
    service = unit["Service"]
    assert service["ExecStart"].split()[0].endswith("/mnemobot")
    assert service["ExecStart"].split()[1:] == ["run"]
    assert service["User"] not in ("", "root")
    assert service["EnvironmentFile"].startswith("/etc/")
    assert service["Restart"] == "on-failure"
    assert service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict"
    assert service["Environment"] == f"BOT_WORKSPACE=/var/lib/{service['StateDirectory']}"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_license_is_the_mit_license_pyproject_declares() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == {"text": "MIT"}
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "the mnemobot authors" in text
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert f"## [{pyproject['project']['version']}]" in changelog


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"mnemobot {installed_version()}"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert installed_version() == pyproject["project"]["version"]
