"""The README a newcomer reads: short, two commands to a first reply, links that work, and
the test command CI runs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start\n", 1)[1].split("\n## ")[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_quick_start_is_two_commands_in_a_fresh_environment_and_ci_runs_its_test() -> None:
    # Debian 12's pip refuses to install outside a virtual environment.
    environment, install_and_run, test = quick_start_commands()
    assert environment.startswith("python3 -m venv ") and "/bin/activate" in environment
    assert install_and_run == "pip install . && mnemobot run"
    assert test == "pip install -e '.[test]' -e ./tooling && pytest"
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert test in ci, ".ci/run must run the README's test command as written"


def test_the_quick_start_says_the_python_it_needs_and_what_the_tests_weigh() -> None:
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires.startswith(">=")
    section = README.split("## Quick start\n", 1)[1].split("\n## ")[0]
    assert f"Python {requires[2:]} or newer" in section
    assert re.search(r"about [\d,]+ MB more", section), "say what the test extra weighs"


def test_the_quick_start_has_a_local_model_recipe_with_its_window() -> None:
    section = README.split("### A local model in five minutes\n", 1)[1].split("\n## ")[0]
    commands = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert re.search(r"^llama-server .* -c \d+ ", commands, flags=re.M)
    assert "OLLAMA_CONTEXT_LENGTH=" in commands
    assert "mnemobot init --console" in commands and "mnemobot chat" in commands


def test_the_readme_stays_short() -> None:
    # Under ten minutes of reading at 200 words a minute; the reference material lives
    # under docs/.
    assert len(README.splitlines()) < 250
    assert len(README.split()) < 2000


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{page.name}: {target}"
            if anchor and file.suffix == ".md":
                headings = {
                    re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                    for h in re.findall(r"^#+ (.+)$", file.read_text(), flags=re.M)
                }
                assert anchor in headings, f"{page.name}: {target}"


def test_the_readme_names_every_command_and_what_chat_needs() -> None:
    for command in ("mnemobot init", "mnemobot memory chats", "mnemobot config docs"):
        assert f"`{command}" in README, command
    assert "It still needs\na model server" in README
