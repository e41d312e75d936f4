"""Where everything lives under the workspace root."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
    def large_tool_results(self) -> Path:
        return self.root / "large_tool_results"

    def create(self) -> None:
        for directory in (self.runtime_config.parent, self.sessions, self.memory, self.files):
            directory.mkdir(parents=True, exist_ok=True)
