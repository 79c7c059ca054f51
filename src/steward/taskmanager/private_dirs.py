"""A TaskManager's folders are its user's alone: jobs' code, settings and data live there.

Everything a TaskManager keeps on its host (its own folder ``<taskmanager.workdir>/<id>``, the
attempts' folders under it and the host's dependency cache ``<taskmanager.workdir>/.cache``)
is made mode 0700 by :func:`private_dir`, so another user of the host can neither list nor read
what is inside, whatever mode the files themselves have. ``taskmanager.workdir`` itself is left
as it is: it may be a shared folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make it mode 0700; returns ``path``.

    A folder that already exists is tightened too when this user owns it, unless it is a
    shared folder with the sticky bit (``/tmp``: never ours to close). Missing parents are
    created with the default mode: callers pass the folders Steward owns.
    """
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    status = path.stat()
    shared = status.st_mode & stat.S_ISVTX
    if status.st_uid == os.getuid() and not shared and status.st_mode & 0o777 != PRIVATE_DIR_MODE:
        path.chmod(PRIVATE_DIR_MODE)
    return path
