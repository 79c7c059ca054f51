"""A TaskManager's folders are its user's alone: jobs' code, settings and data live there.

Everything a TaskManager keeps on its host (its own folder ``<taskmanager.workdir>/<id>``, the
attempts' folders under it and the host's dependency cache ``<taskmanager.workdir>/.cache``)
is made mode 0700 by :func:`private_dir`, so another user of the host can neither list nor read
what is inside, whatever mode the files themselves have. ``taskmanager.workdir`` itself is left
as it is: it may be a shared folder. A TaskManager that runs drivers as other users
(``security.proxy-users``) makes its own folder and the jobs' folders 0711 instead
(:data:`TRAVERSABLE_DIR_MODE`): a proxy user's driver must reach its attempt's folder by its
path, and still lists nothing; every attempt's folder stays 0700, its owner's alone.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
TRAVERSABLE_DIR_MODE = 0o711


def private_dir(path: Path, mode: int = PRIVATE_DIR_MODE) -> Path:
    """Create ``path`` (and missing parents) and make it ``mode`` (0700); returns ``path``.

    A folder that already exists is tightened too when this user owns it, unless it is a
    shared folder with the sticky bit (``/tmp``: never ours to close). Missing parents are
    created with the default mode: callers pass the folders Steward owns.
    """
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    status = path.stat()
    shared = status.st_mode & stat.S_ISVTX
    if status.st_uid == os.getuid() and not shared and status.st_mode & 0o777 != mode:
        path.chmod(mode)
    return path
