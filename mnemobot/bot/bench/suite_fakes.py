"""Where the test suite's fake servers are, for the benches that drive them.

The fake Bot API and fake LLM live in `tests/fakes/` of a checkout, not in the installed
package: a bench that needs them says so in one line when they are missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def require_test_fakes(bench: str) -> Path:
    """Make `tests.fakes` importable (or say why it cannot be); returns the checkout."""
    if not (REPO / "tests" / "fakes" / "openai_server.py").exists():
        raise RuntimeError(
            f"bench {bench} needs the fake servers of the test suite (tests/fakes); "
            "run it from a checkout of the repository"
        )
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return REPO
