"""A TaskManager's folders are its user's alone: jobs' code, settings and data live there.

Everything a TaskManager keeps on its host (its work directory, the attempts' folders under it
and the host's dependency cache) is created mode 0700 by :func:`private_dir`, so another user
of the host can neither list nor read what is inside, whatever mode the files themselves have.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make it mode 0700; returns ``path``.

    A folder that already exists is tightened too when this user owns it (another user's
    folder, e.g. a shared parent, is left alone: chmod would fail, and it is not ours).
    """
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    status = path.stat()
    if status.st_uid == os.getuid() and status.st_mode & 0o777 != PRIVATE_DIR_MODE:
        path.chmod(PRIVATE_DIR_MODE)
    return path
