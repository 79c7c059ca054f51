"""Running an attempt's driver as its job's ``proxy_user``: the TaskManager's half.

The JobManager stored the job only for a caller ``security.proxy-users`` grants that user to
(:mod:`steward.security.proxy_users`); this TaskManager checks its own configuration again, so
a leader (or anyone who can write a job graph) cannot make it run code as a user its host's
operator did not list. Then, before the lease is taken:

- :func:`resolve` finds the user on this host (uid, gid, supplementary groups). A TaskManager
  that is not root, a user it does not list, a missing user or root itself is a
  :class:`ProxyUserError`: permanent, so the job fails at once, spending no restart (the next
  attempt would fail alike);
- :func:`own_copies` copies the files the job names (``--py-files``, ``--files``,
  ``--archives``, ``--jars``) out of the host cache, which stays this process's alone, into
  the attempt's folder;
- :func:`hand_over` gives the user the unpacked pipeline, those copies and a working folder
  of its own (``<attempt>/work``, the driver's working directory), each mode 0700. The
  attempt's folder itself stays this process's (0711: traversable, not listable), so the
  attempt's log beside them (``runner.log``, which this process writes, serves and archives
  by its path) can be neither replaced nor made a symlink by the user; the folders above are
  0711 too (:mod:`~steward.taskmanager.preparation`);
- :func:`driver_env` is the runner's environment: only the variables a driver needs from the
  TaskManager's (:data:`KEPT`), never one that looks secret, then the job's own ``env``.

The threat model (what the proxy user can and cannot reach) is docs/security.md#proxy-users.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from steward.errors import StewardError
from steward.supervisor.os_user import OsUser
from steward.taskmanager.private_dirs import TRAVERSABLE_DIR_MODE
from steward.wire.redaction import DEFAULT_REGEX
from steward.wire.runner_protocol import LocalDependency

WORKING_FOLDER = "work"
"""A proxy user's driver works in ``<attempt>/work``, its own folder."""
DEPENDENCIES_FOLDER = "dependencies"
"""Where a proxy user's copies of its job's files are: ``<attempt>/dependencies``."""
KEPT = frozenset(
    {"PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH", "STEWARD_LOG_FORMAT", "TERM"}
)
"""The variables of the TaskManager a proxy user's driver gets as they are, besides those
of :data:`KEPT_PREFIXES`."""
KEPT_PREFIXES = ("LC_", "JAVA_", "SPARK_", "PYSPARK_", "HADOOP_CONF", "YARN_CONF")
_SECRET_NAME = re.compile(DEFAULT_REGEX)


class ProxyUserError(StewardError):
    """This TaskManager cannot run the attempt as its job's proxy user."""

    permanent = True


def resolve(user: str, grants: Iterable[tuple[str, str]]) -> OsUser:
    """The OS user ``user`` of this host, if this TaskManager may switch to it."""
    if user not in {granted for granted, _caller in grants}:
        raise ProxyUserError(
            f"this TaskManager does not run jobs as OS user {user!r}: its security.proxy-users"
            " does not list it"
        )
    if os.geteuid() != 0:
        raise ProxyUserError(
            f"this TaskManager runs as uid {os.geteuid()}, not root: it cannot start a driver as"
            f" OS user {user!r}"
        )
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise ProxyUserError(f"no OS user {user!r} on this TaskManager's host") from None
    if entry.pw_uid == 0:
        raise ProxyUserError(f"OS user {user!r} is root: a proxy user never is")
    groups = tuple(os.getgrouplist(user, entry.pw_gid))
    return OsUser(user, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)


def hand_over(attempt_dir: Path, user: OsUser) -> None:
    """Give ``user`` what is in ``attempt_dir`` and a working folder there, each mode 0700;
    ``attempt_dir`` stays ours, traversable (0711), so nothing of ours in it can be swapped."""
    (attempt_dir / WORKING_FOLDER).mkdir(mode=0o700)
    for root, folders, files in os.walk(attempt_dir):
        for name in [*folders, *files]:
            # Symlinks are changed themselves, never what they point to.
            os.chown(Path(root) / name, user.uid, user.gid, follow_symlinks=False)
    attempt_dir.chmod(TRAVERSABLE_DIR_MODE)


def own_copies(dependencies: Sequence[LocalDependency], folder: Path) -> list[LocalDependency]:
    """Copies of ``dependencies`` in ``folder`` (inside the attempt's folder, handed over with
    it): the host cache they were fetched into is this process's alone, and a proxy user's
    driver must read them (and may change its copies, never the cache others share)."""
    folder.mkdir(mode=0o700)
    copies = []
    for index, dependency in enumerate(dependencies):
        # One folder each, the names kept: the runner puts a .py file on the path by its name.
        own = folder / str(index)
        own.mkdir(mode=0o700)
        source, packed = Path(dependency.path), dependency.packed
        target = own / source.name
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copyfile(source, target)
        if packed is not None:
            packed = str(shutil.copyfile(packed, own / f"packed-{Path(packed).name}"))
        copies.append(dependency.model_copy(update={"path": str(target), "packed": packed}))
    return copies


def driver_env(user: OsUser, job_env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a driver run as ``user``: what it needs of this process's, its own
    home and name, then the job's ``env`` (the job's own choice, shown redacted)."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if (name in KEPT or name.startswith(KEPT_PREFIXES)) and not _SECRET_NAME.search(name)
    }
    own = {"HOME": user.home, "USER": user.name, "LOGNAME": user.name}
    return {**kept, **own, **job_env}
