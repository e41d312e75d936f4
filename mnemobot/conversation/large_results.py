"""Tool results too large for the conversation, kept whole on disk and read back in pages."""

from __future__ import annotations

import re
from pathlib import Path

from mnemobot.base.atomic_file import write_atomic

EXCERPT_CHARS = 2_000
_SAFE = re.compile(r"[^A-Za-z0-9_.:@-]")


class LargeResultStore:
    """`<workspace>/large_tool_results/<session>/<call-id>[-N].txt`.

    Some servers reuse tool-call ids across turns (`call_0`, or none at all), so a name
    that is taken gets a counter: an older message never points at a newer result.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, session_key: str, result_id: str) -> Path:
        return self.root / _SAFE.sub("_", session_key) / f"{_SAFE.sub('_', result_id)}.txt"

    def _free_result_id(self, session_key: str, call_id: str) -> str:
        base = _SAFE.sub("_", call_id) or "result"
        candidate, counter = base, 1
        while self.path_for(session_key, candidate).exists():
            counter += 1
            candidate = f"{base}-{counter}"
        return candidate

    def evict(self, session_key: str, call_id: str, text: str) -> str:
        """Store `text` whole; return what the conversation keeps instead."""
        result_id = self._free_result_id(session_key, call_id)
        path = self.path_for(session_key, result_id)
        write_atomic(path, text.encode())
        relative = f"large_tool_results/{path.parent.name}/{path.name}"
        return (
            f"[This tool result was {len(text):,} characters, too large to keep in the "
            f"conversation. Whole text saved as {relative}; read it in pages with the "
            f"read_tool_result tool, result_id={result_id!r}.]\n"
            f"--- first {EXCERPT_CHARS} characters ---\n{text[:EXCERPT_CHARS]}\n"
            f"--- last {EXCERPT_CHARS} characters ---\n{text[-EXCERPT_CHARS:]}"
        )

    def read_page(self, session_key: str, result_id: str, offset: int, limit: int) -> str | None:
        path = self.path_for(session_key, result_id)
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None
        page = text[offset : offset + limit]
        end = offset + len(page)
        footer = (
            f"\n[characters {offset}-{end} of {len(text)}; next page: offset={end}]"
            if end < len(text)
            else f"\n[characters {offset}-{end} of {len(text)}; end of result]"
        )
        return page + footer
