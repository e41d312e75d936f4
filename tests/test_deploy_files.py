"""Deployment files, checked statically (no container engine or systemd needed).

What a broken deployment would show first: the image running as root, the workspace not on
a volume, a package left out of the image, compose without the env file or the volume, a
systemd unit that does not parse or does not start `mnemobot run`.
"""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from mnemobot.bot.cli.main import main
from mnemobot.bot.cli.parser import installed_version

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
    assert any('pip install ".' in arguments for name, arguments in instructions if name == "RUN")


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
    assert service["build"]["context"] == "."


def test_the_voice_extra_is_a_build_argument_of_the_image_and_of_compose() -> None:
    """`docker build --build-arg EXTRAS=voice` (or MNEMOBOT_EXTRAS=voice for compose)
    installs faster-whisper in the image; without it, nothing extra."""
    instructions = dockerfile_instructions()
    argument = instructions.index(("ARG", 'EXTRAS=""'))
    [(at, install)] = [
        (i, a) for i, (n, a) in enumerate(instructions) if n == "RUN" and "pip install" in a
    ]
    assert argument < at
    command = install.split(" && ")[0]
    # What /bin/sh makes of the RUN line, with and without the argument.
    for extras, package in (("", "."), ("voice", ".[voice]")):
        expanded = subprocess.run(
            [
                "sh",
                "-c",
                f'EXTRAS={extras}; set -- {command.removeprefix("pip install ")}; printf %s "$1"',
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert expanded == package
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "voice" in pyproject["project"]["optional-dependencies"]
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    assert compose["services"]["mnemobot"]["build"]["args"] == {"EXTRAS": "${MNEMOBOT_EXTRAS:-}"}
    docs = (REPO / "docs" / "deployment.md").read_text()
    assert "--build-arg EXTRAS=voice" in docs and "MNEMOBOT_EXTRAS=voice" in docs


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
    assert pyproject["project"]["license"] == "MIT"
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


def bot_services() -> list[tuple[str, dict[str, object]]]:
    """(compose file, service) for every service built from the repository's Dockerfile."""
    found = []
    for name in ("compose.yaml", "deploy/compose.replicas.yaml"):
        compose = yaml.safe_load((REPO / name).read_text())
        for service in compose["services"].values():
            if "build" in service:
                found.append((name, service))
    return found


def test_the_image_owns_every_folder_compose_mounts_a_volume_on() -> None:
    """A named volume mounted on a folder the image lacks is created root-owned, and the
    unprivileged bot cannot write its workspace."""
    instructions = dockerfile_instructions()
    user = last(instructions, "USER").split(":")[0]
    names = {"10001": "mnemobot", "mnemobot": "mnemobot"}
    runs = " ".join(arguments for name, arguments in instructions if name == "RUN")
    volumes = json.loads(last(instructions, "VOLUME"))
    for file, service in bot_services():
        env = service["environment"]
        for mount in service["volumes"]:
            target = mount.split(":")[1]
            assert f"mkdir {target}" in runs or f"mkdir -p {target}" in runs, (file, target)
            assert f"chown {names[user]}:{names[user]} {target}" in runs, (file, target)
            assert target in volumes, (file, target)
        assert env["BOT_WORKSPACE"] in [m.split(":")[1] for m in service["volumes"]], file


def test_every_variable_compose_reads_is_in_the_env_file_it_reads_and_documented() -> None:
    """Compose fills ${VAR} from the .env beside the compose file on every command (`up`,
    `exec`, `logs`): set only on `up`'s command line, `exec` would fail."""
    for file, service in bot_services():
        text = (REPO / file).read_text()
        assert service["env_file"] == [".env"], file
        variables = set(re.findall(r"\$\{([A-Z_]+)", text))
        header = text.split("\nname:", 1)[0] if "\nname:" in text else text
        for variable in variables:
            # Written into that .env by the recipe at the top, and explained there.
            assert f"{variable}=" in header and f"#   {variable} " in header, (file, variable)
            assert variable in (REPO / "docs" / "deployment.md").read_text(), variable


def test_the_docker_docs_say_where_init_writes_and_how_a_host_model_server_is_reached() -> None:
    docs = (REPO / "docs" / "deployment.md").read_text()
    assert "mnemobot init --env-file .env" in docs
    assert "--host 0.0.0.0" in docs and "OLLAMA_HOST=0.0.0.0" in docs
    assert "host.docker.internal" in docs
