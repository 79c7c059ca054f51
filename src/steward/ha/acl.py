"""Who may read and change a cluster's state in ZooKeeper: digest credentials and ACLs.

Flink's ``high-availability.zookeeper.client.acl`` is the anchor, with the same two values:

- ``creator`` (the default): every session authenticates with the cluster's digest credential
  (``user:password``, read from ``high-availability.zookeeper.digest-file``) and creates every
  znode under ``<root>/<cluster-id>`` with the ACL "all permissions to that credential, nothing
  to anyone else" (ZooKeeper's ``digest`` scheme; the server keeps only
  ``user:base64(sha1(user:password))``). A client without the credential gets ``NoAuth`` for
  every read and write of the cluster's state;
- ``open``: no credential, world-open znodes (ZooKeeper's ``OPEN_ACL_UNSAFE``), as before.

The znodes *above* the cluster's root (``/steward``) are created world-open: clusters with
different credentials share them. A session applies the ACL through kazoo's ``default_acl``,
which covers every create it makes (plain, ``ensure_path``, ephemeral and sequential nodes,
and the creates inside multi-op transactions), so no call site names an ACL.

Existing clusters whose state was created world-open (before this module, or with ``open``)
are migrated by the first process that starts with the credential: :func:`protect_tree` sets
the creator ACL on every world-open znode under the root, children before parents and the
root last, so a protected root means a fully migrated tree (docs/security.md, "ZooKeeper").

The credential's content never reaches a log, an error message or a ``repr``.
"""

from __future__ import annotations

import enum
import logging
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import ACL, OPEN_ACL_UNSAFE, make_digest_acl

from steward.config.settings import ZooKeeperSettings
from steward.errors import ConfigurationError, CoordinationError
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate

log = logging.getLogger(__name__)

ACL_KEY = "high-availability.zookeeper.client.acl"
DIGEST_FILE_KEY = "high-availability.zookeeper.digest-file"
DIGEST_USER = "steward"
"""The user name of the credentials Steward generates (any name works in a file of one's own)."""
DIGEST_FILE_NAME = "zookeeper.digest"
"""The file name ``steward cluster start`` and the testing kit give the credential."""


class AclMode(enum.StrEnum):
    CREATOR = "creator"
    OPEN = "open"


@dataclass(frozen=True)
class DigestCredential:
    """A ZooKeeper ``digest`` credential; its password never appears in a repr or a log."""

    user: str
    password: str = field(repr=False)

    @classmethod
    def read(cls, path: Path) -> DigestCredential:
        """Read ``user:password`` (one line) from ``path``; a clear error otherwise.

        A file that others may read is used, with a warning: it is the operator's choice
        (a Kubernetes secret is mounted 0644 by default), but ``chmod 600`` is the advice.
        """
        try:
            text = path.read_text(encoding="utf-8")
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            raise ConfigurationError(
                f"{DIGEST_FILE_KEY}: {path} does not exist (it holds the cluster's ZooKeeper"
                " credential as user:password; `steward cluster start` writes"
                f" .steward/{DIGEST_FILE_NAME})",
                key=DIGEST_FILE_KEY,
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(
                f"{DIGEST_FILE_KEY}: cannot read {path}: {type(exc).__name__}",
                key=DIGEST_FILE_KEY,
            ) from None
        lines = [line for line in text.splitlines() if line.strip()]
        user, colon, password = (lines[0].strip() if len(lines) == 1 else "").partition(":")
        if not colon or not user or not password:
            raise ConfigurationError(
                f"{DIGEST_FILE_KEY}: {path} must hold one line user:password (a non-empty"
                " user without ':' and a non-empty password)",
                key=DIGEST_FILE_KEY,
            )
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning(
                "the zookeeper credential file may be read by others path=%s mode=%o"
                " (chmod 600 it)",
                path,
                mode,
            )
        return cls(user, password)

    @property
    def auth_data(self) -> list[tuple[str, str]]:
        """Kazoo's ``auth_data``: sent to the server at every (re)connect."""
        return [("digest", f"{self.user}:{self.password}")]

    @property
    def acl(self) -> list[ACL]:
        """All permissions to this credential and to nobody else."""
        return [make_digest_acl(self.user, self.password, all=True)]


def create_digest_file(path: Path) -> DigestCredential:
    """The credential in ``path``; a new random one (written mode 0600) if there is none.

    An existing file is kept as it is: the state in ZooKeeper is protected by it.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        content = f"{DIGEST_USER}:{secrets.token_urlsafe(32)}\n".encode()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # written meanwhile by another start: read that one
        else:
            with os.fdopen(fd, "wb") as file:
                file.write(content)
            log.info("zookeeper credential created path=%s", path)
    return DigestCredential.read(path)


@dataclass(frozen=True)
class ZooKeeperAccess:
    """How a session authenticates and which ACL its creates get."""

    mode: AclMode
    credential: DigestCredential | None = None

    @classmethod
    def for_process(cls, settings: ZooKeeperSettings) -> ZooKeeperAccess:
        """A JobManager's or TaskManager's access: ``creator`` needs the credential file."""
        mode = AclMode(settings.client_acl)
        if mode is AclMode.OPEN:
            log.warning(
                "zookeeper state is world-open (%s=open): anyone who reaches ZooKeeper can read"
                " and change this cluster's state",
                ACL_KEY,
            )
            return OPEN
        if not settings.digest_file:
            raise ConfigurationError(
                f"{ACL_KEY}=creator (the default) needs the cluster's ZooKeeper credential:"
                f" set {DIGEST_FILE_KEY} to a file holding user:password (mode 0600; `steward"
                f" cluster start` writes .steward/{DIGEST_FILE_NAME}), or set {ACL_KEY}=open to"
                " run with world-open state",
                key=DIGEST_FILE_KEY,
            )
        return cls(mode, DigestCredential.read(Path(settings.digest_file)))

    @classmethod
    def for_client(cls, settings: ZooKeeperSettings) -> ZooKeeperAccess:
        """A client's access (leader lookup): the credential if one is configured, else none
        (it can then read only clusters with ``open`` state)."""
        if settings.digest_file and AclMode(settings.client_acl) is AclMode.CREATOR:
            return cls(AclMode.CREATOR, DigestCredential.read(Path(settings.digest_file)))
        return OPEN

    def kazoo_options(self) -> dict[str, Any]:
        """``auth_data`` and ``default_acl`` for a :class:`KazooClient`."""
        if self.credential is None:
            return {}
        return {"auth_data": self.credential.auth_data, "default_acl": self.credential.acl}


OPEN = ZooKeeperAccess(AclMode.OPEN)


def protected_error(root: str, access: ZooKeeperAccess, *, also: str = "") -> ConfigurationError:
    """The error for a cluster state this access may not read (``also``: a further way out)."""
    if access.credential is None:
        hint = (
            f"this process has none ({ACL_KEY}=open, or no {DIGEST_FILE_KEY}); set"
            f" {DIGEST_FILE_KEY} to the cluster's credential file (.steward/{DIGEST_FILE_NAME}"
            f" of the folder where `steward cluster start` ran) and {ACL_KEY}=creator"
        )
    else:
        hint = (
            f"the credential in {DIGEST_FILE_KEY} is not the one that protects it; use the"
            " cluster's own file"
        )
    return ConfigurationError(
        f"the ZooKeeper state of this cluster ({root}) is protected by another credential:"
        f" {hint}{also}",
        key=DIGEST_FILE_KEY,
    )


def open_parents(client: KazooClient, root: str) -> None:
    """Create the znodes above ``root`` world-open (clusters with other credentials share them)."""
    parent = root.rsplit("/", 1)[0]
    if parent:
        try:
            client.ensure_path(parent, acl=OPEN_ACL_UNSAFE)
        except KAZOO_ERRORS as exc:
            raise translate(exc, parent) from exc


def check_readable(client: KazooClient, root: str, access: ZooKeeperAccess) -> None:
    """Raise a clear :class:`ConfigurationError` if ``access`` may not read ``root``."""
    try:
        client.get_children(root)
    except NoNodeError:
        return
    except NoAuthError:
        raise protected_error(root, access) from None
    except KAZOO_ERRORS as exc:
        raise translate(exc, root) from exc


@dataclass(frozen=True)
class Migration:
    """What :func:`protect_tree` did."""

    protected: int
    """World-open znodes that got the creator ACL."""
    already: int
    """Znodes that had it."""


def protect_tree(client: KazooClient, root: str, credential: DigestCredential) -> Migration:
    """Give every world-open znode under ``root`` (and ``root``) the creator ACL.

    Nothing to do if ``root`` is protected already (it is set last). Children are set before
    their parents, so a run cut short is finished by the next one. Znodes that vanish
    meanwhile (ephemeral ones) are skipped.
    """
    try:
        if not _world_open(_acls(client, root)):
            return Migration(0, 1)
    except NoNodeError:
        return Migration(0, 0)
    except KAZOO_ERRORS as exc:
        raise translate(exc, root) from exc
    acl = credential.acl
    protected = already = 0
    for path in _post_order(client, root):
        try:
            current = _acls(client, path)
            if _world_open(current):
                client.set_acls(path, acl)
                protected += 1
            else:
                already += 1
        except NoNodeError:
            continue
        except NoAuthError:
            raise CoordinationError(
                f"cannot migrate {path} to the cluster's ACL: another credential protects it"
            ) from None
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
    log.warning(
        "zookeeper state was world-open; creator ACL set root=%s protected=%d already=%d",
        root,
        protected,
        already,
    )
    return Migration(protected, already)


def _acls(client: KazooClient, path: str) -> Sequence[ACL]:
    acls, _stat = client.get_acls(path)
    return list(acls)


def _world_open(acls: Sequence[ACL]) -> bool:
    return any(acl.id.scheme == "world" and acl.id.id == "anyone" for acl in acls)


def _post_order(client: KazooClient, root: str) -> list[str]:
    """Every znode under ``root``, each after all of its descendants; ``root`` last."""
    order: list[str] = []
    stack: list[tuple[str, bool]] = [(root, False)]
    while stack:
        path, expanded = stack.pop()
        if expanded:
            order.append(path)
            continue
        stack.append((path, True))
        try:
            children = client.get_children(path)
        except NoNodeError:
            continue
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
        stack.extend((f"{path}/{child}", False) for child in children)
    return order
