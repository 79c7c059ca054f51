"""The archives a submission names (``--archives``), checked before the job is stored: a
hostile one (paths out of its folder, links out, devices, a bomb, not an archive at all) is
refused with 400 and nothing stored, instead of failing the job on its TaskManager.

:func:`steward.artifacts.archives.inspect` reads each archive once (a zip's directory; a tar's
headers, decompressing it as a stream: 0.2 s for a 300 MB packed environment here), writing
nothing. Archives are content-addressed, so one found safe is not read again by this JobManager: the
second job of a packed environment costs nothing here. The TaskManager applies the same rules
again when it unpacks (and counts the bytes a zip really inflates).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from steward.artifacts.archives import ArchiveRejectedError, inspect
from steward.store.contents import ContentStore
from steward.wire.jobs import Dependency, DependencyKind

from .errors import ApiError

_REMEMBERED = 4096
_safe: OrderedDict[str, None] = OrderedDict()
_lock = threading.Lock()


def check_archives(contents: ContentStore, dependencies: Iterable[Dependency]) -> None:
    """400 ``bad_archive`` for the first archive of ``dependencies`` that cannot be unpacked
    safely; a storage error propagates (503: retrying may help)."""
    for dependency in dependencies:
        if dependency.kind is not DependencyKind.ARCHIVE or _known_safe(dependency.sha256):
            continue
        try:
            with contents.open(dependency.sha256) as source:
                inspect(source, dependency.filename)
        except ArchiveRejectedError as exc:
            raise ApiError(400, "bad_archive", str(exc)) from None
        _remember(dependency.sha256)


def _known_safe(sha256: str) -> bool:
    with _lock:
        if sha256 in _safe:
            _safe.move_to_end(sha256)
            return True
        return False


def _remember(sha256: str) -> None:
    with _lock:
        _safe[sha256] = None
        while len(_safe) > _REMEMBERED:
            _safe.popitem(last=False)
