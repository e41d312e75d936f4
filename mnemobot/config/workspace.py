"""Where everything lives under the workspace root."""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkspacePaths:
    root: Path

    @property
    def runtime_config(self) -> Path:
        return self.root / "preferences" / "runtime-config.json"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def operator_memory(self) -> Path:
        return self.root / "memory" / "MEMORY.md"

    @property
    def files(self) -> Path:
        return self.root / "files"

    @property
    def delivery(self) -> Path:
        """Durable inbox and outbox journals of the channels."""
        return self.root / "delivery"

    @property
    def run_lock(self) -> Path:
        """Held by the one `mnemobot run` serving this workspace (without Redis)."""
        return self.root / ".run.lock"

    @property
    def memory_command_lock(self) -> Path:
        """Held by a `mnemobot memory` command writing the workspace (import, erase): no
        `run` starts meanwhile, nor a second such command."""
        return self.root / ".memory-command.lock"

    @property
    def large_tool_results(self) -> Path:
        return self.root / "large_tool_results"

    @property
    def private_marker(self) -> Path:
        """Written once every file and folder of the workspace was made its user's only."""
        return self.root / PRIVATE_MARKER

    def create(self) -> None:
        """The workspace's folders; a workspace of an older version (files readable by
        others) is made private first, once."""
        for directory in (self.runtime_config.parent, self.sessions, self.memory, self.files):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.private_marker.exists():
            changed, refused = make_private(self.root)
            if changed:
                log.info(
                    "made %d files and folders of workspace %s readable by their owner only",
                    changed,
                    self.root,
                )
            if refused:
                log.warning(
                    "could not make %d paths of workspace %s private (another owner's?), "
                    "e.g. %s; chmod them go-rwx",
                    len(refused),
                    self.root,
                    refused[0],
                )
            try:
                self.private_marker.write_text(
                    "Every file here is 0600 and every folder 0700: what the bot keeps is "
                    "its user's only.\n"
                )
            except OSError as exc:
                # A full disk: the walk is made again at the next start, nothing is lost.
                log.debug("could not write %s: %s", self.private_marker, exc)


# What the bot keeps holds what people said (conversations, memory, journals): readable by
# the user running it only. `use_private_modes` makes every file this process creates 0600
# and every folder 0700; `make_private` fixes a workspace written before that, once.
PRIVATE_UMASK = 0o077
PRIVATE_MARKER = ".private-modes"


def use_private_modes() -> None:
    """From now on, files and folders this process creates are its user's only."""
    os.umask(PRIVATE_UMASK)


def make_private(root: Path) -> tuple[int, list[Path]]:
    """Take group and other permissions off every file and folder under `root` (and `root`);
    returns how many were changed and those that could not be (another owner's)."""
    changed = 0
    refused: list[Path] = []
    for path in [root, *root.rglob("*")]:
        try:
            status = path.lstat()
            if stat.S_ISLNK(status.st_mode) or not status.st_mode & 0o077:
                continue
            path.chmod(stat.S_IMODE(status.st_mode) & 0o700)
            changed += 1
        except FileNotFoundError:
            continue  # removed while walking (a temp file, a released lock)
        except OSError:
            refused.append(path)
    return changed, refused
