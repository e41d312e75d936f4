"""Lock files that only the bot's user can read, whatever the umask and filelock version.

The bot's files are its user's only (`use_private_modes`), but filelock gives a lock file
its own mode: 0644 by default, and older versions chmod the file to it whatever the umask.
Every lock file is made with an explicit 0600 instead.
"""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock

PRIVATE_FILE_MODE = 0o600


def private_file_lock(path: Path) -> FileLock:
    """An inter-process lock on `path` (created 0600), held by whichever thread took it."""
    return FileLock(path, mode=PRIVATE_FILE_MODE, thread_local=False)
