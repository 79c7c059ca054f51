"""A one-off, read-only look at who contends and who leads, for clients outside the cluster.

:class:`~steward.ha.retrieval.LeaderRetrieval` follows the leader for a long-lived process;
a client (``steward submit``, ``steward.Client``) only needs the JobManagers' REST addresses
once, so it opens a short-lived session, reads ``leader/info`` and the contenders' latch nodes,
and closes it. Unlike :class:`~steward.ha.session.Session` it creates nothing: a typo in the
cluster id must not leave an empty cluster tree behind.

A cluster whose state is protected (:mod:`steward.ha.acl`) answers only a session holding its
credential (``access``); without it the lookup fails with a :class:`ConfigurationError` saying
so, rather than reporting "no JobManager".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from steward.errors import CorruptStateError, ZooKeeperUnavailableError
from steward.ha.acl import OPEN, ZooKeeperAccess, protected_error
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.ha.layout import Layout
from steward.wire.records import ContenderInfo, LeaderInfo

log = logging.getLogger(__name__)
# Kazoo logs every failed connection attempt as a warning; a lookup that fails is reported
# once, as an exception, so the command that asked prints one line instead of a page.
_kazoo_log = logging.getLogger(f"{__name__}.kazoo")
_kazoo_log.setLevel(logging.ERROR)

_Info = TypeVar("_Info", LeaderInfo, ContenderInfo)


@dataclass(frozen=True)
class JobManagerDirectory:
    """What ZooKeeper says about the JobManagers of one cluster, at one moment."""

    leader: LeaderInfo | None
    contenders: tuple[ContenderInfo, ...]

    @property
    def addresses(self) -> list[str]:
        """REST addresses, the leader's first, each once."""
        found = [self.leader.address] if self.leader else []
        found += [contender.address for contender in self.contenders]
        return list(dict.fromkeys(address for address in found if address))


def read_directory(
    quorum: str, root: str, *, timeout: float, access: ZooKeeperAccess = OPEN
) -> JobManagerDirectory:
    """Read ``leader/info`` and ``leader/latch/*`` of the cluster at ``root``.

    Raises :class:`ZooKeeperUnavailableError` if no connection is made within ``timeout``,
    :class:`ConfigurationError` if ``access`` may not read the cluster's state. Unreadable
    nodes are skipped (logged): a client should still find the others.
    """
    client = KazooClient(
        hosts=quorum,
        timeout=max(timeout, 1.0),
        read_only=True,
        logger=_kazoo_log,
        **access.kazoo_options(),
    )
    try:
        client.start(timeout=timeout)
    except KazooTimeoutError as exc:
        client.close()
        raise ZooKeeperUnavailableError(
            f"could not connect to ZooKeeper at {quorum} within {timeout:g}s"
        ) from exc
    try:
        layout = Layout(root)
        leader = _decode(LeaderInfo, _get(client, layout.leader_info))
        names = _children(client, layout.leader_latch)
        latches = (_get(client, f"{layout.leader_latch}/{name}") for name in names)
        contenders = tuple(c for c in (_decode(ContenderInfo, data) for data in latches) if c)
        return JobManagerDirectory(leader, contenders)
    except NoAuthError:
        raise protected_error(
            root, access, also="; or set rest.address to the JobManagers' URLs"
        ) from None
    finally:
        client.stop()
        client.close()


def _get(client: KazooClient, path: str) -> bytes | None:
    try:
        data, _stat = client.get(path)
    except NoNodeError:
        return None
    except NoAuthError:
        raise  # read_directory says what it means
    except KAZOO_ERRORS as exc:
        raise translate(exc, path) from exc
    return bytes(data or b"")


def _children(client: KazooClient, path: str) -> list[str]:
    try:
        return sorted(client.get_children(path))
    except NoNodeError:
        return []
    except NoAuthError:
        raise  # read_directory says what it means
    except KAZOO_ERRORS as exc:
        raise translate(exc, path) from exc


def _decode(kind: type[_Info], data: bytes | None) -> _Info | None:
    if not data:
        return None
    try:
        return kind.from_json(data)
    except CorruptStateError as exc:
        log.warning("unreadable %s ignored: %s", kind.kind_name, exc)
        return None
