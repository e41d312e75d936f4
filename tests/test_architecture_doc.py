"""The architecture page names files that exist, and the README links to it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"


def named_paths(text: str) -> set[str]:
    """Every `code` span that is a path: has a slash or ends in .py (no spaces; not a
    slash command like `/status`)."""
    spans = re.findall(r"`([^`\s]+)`", text)
    return {s for s in spans if ("/" in s or s.endswith(".py")) and not s.startswith("/")}


def test_every_file_and_folder_the_architecture_page_names_exists() -> None:
    paths = named_paths(PAGE.read_text())
    assert len(paths) >= 30
    folders = [p.relative_to(ROOT).as_posix() for p in (ROOT / "mnemobot").rglob("*/")]
    missing = []
    for path in sorted(paths):
        # Paths are under mnemobot/ unless they start at the repository's top level; a bare
        # file name is one of the folder the same line names, and a room's folder ending
        # in "/" (`pack/`) one of the room the line is about, so any match will do.
        base = ROOT if (ROOT / path.split("/")[0]).is_dir() else ROOT / "mnemobot"
        if "/" in path:
            found = (base / path.rstrip("/")).exists() or (
                path.endswith("/") and any(f.endswith("/" + path.rstrip("/")) for f in folders)
            )
        else:
            found = any((ROOT / "mnemobot").rglob(path))
        if not found:
            missing.append(path)
    assert missing == []


def test_the_readme_links_the_architecture_page() -> None:
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text()
