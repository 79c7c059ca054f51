"""Small helpers the stores share for reading ZooKeeper through kazoo.

Reads are not fenced (any JobManager may read); they translate kazoo's exceptions into
Steward's (:func:`~steward.ha.kazoo_errors.translate`) so that nothing raw escapes the store
layer: a caller catches :class:`~steward.errors.CoordinationError`.
"""

from __future__ import annotations

import logging
import struct
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, UnimplementedError

from steward.errors import CoordinationError, ZooKeeperUnavailableError
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.store import multiread
from steward.wire.values import check_job_id

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


def read(client: KazooClient, path: str) -> tuple[bytes, Any] | None:
    """``(data, stat)`` of ``path``, or None if it does not exist."""
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None
    except KAZOO_ERRORS as exc:
        raise translate(exc, path) from exc
    return bytes(data or b""), stat


def read_many(client: KazooClient, paths: list[str]) -> list[tuple[bytes, Any] | None]:
    """``read`` of every path in one round trip: ZooKeeper's multiRead
    (:mod:`steward.store.multiread`), one request and one answer for up to
    :data:`MULTIREAD_BATCH` paths (more are split), or, from a server that does not know it
    (older than 3.6), the reads pipelined (:func:`read_pipelined`)."""
    return _read_all(client, paths, multiread.GET_DATA, _found, read_pipelined)


def _read_all(
    client: KazooClient,
    paths: list[str],
    op: int,
    answered: Callable[[str, multiread.Answer], R],
    pipelined: Callable[[KazooClient, list[str]], list[R]],
) -> list[R]:
    """Every path read by multiReads of ``op``, each answer through ``answered``; ``pipelined``
    from a server that does not know multiRead."""
    if not paths:
        return []
    if not multiread_supported(client):
        return pipelined(client, paths)
    answers = _multiread(client, paths, op)
    if answers is None:
        return _after_drop(pipelined, client, paths)
    return [answered(path, answer) for path, answer in zip(paths, answers, strict=True)]


def _multiread(client: KazooClient, paths: list[str], op: int) -> list[multiread.Answer] | None:
    """The answers of multiReads of ``paths`` in batches, all sent before any is awaited;
    None if the server answered UNIMPLEMENTED (it is closing the connection)."""
    groups = multiread.batches(paths, MULTIREAD_BATCH, MULTIREAD_BYTES)
    pending = [(group, multiread.send(client, group, op)) for group in groups]
    answers: list[multiread.Answer] = []
    for group, answer in pending:
        try:
            answers.extend(answer.get())
        except UnimplementedError:
            _multiread_unsupported(client)
            return None
        except KAZOO_ERRORS as exc:
            raise translate(exc, group[0]) from exc
        except (ValueError, struct.error) as exc:  # an answer that does not parse
            raise CoordinationError(f"ZooKeeper's multiRead answer is malformed: {exc}") from exc
    return answers


def _after_drop(
    read: Callable[[KazooClient, list[str]], T], client: KazooClient, paths: list[str]
) -> T:
    """``read(client, paths)`` once the server dropped the connection: an old server closes it
    right after its UNIMPLEMENTED answer (the session survives), so requests sent before it did
    are lost with it; sent again, kazoo holds them until it has reconnected."""
    try:
        return read(client, paths)
    except ZooKeeperUnavailableError:
        return read(client, paths)


def _found(path: str, answer: multiread.Answer) -> tuple[bytes, Any] | None:
    if isinstance(answer, NoNodeError):
        return None
    if isinstance(answer, Exception):
        raise translate(answer, path) from answer
    if isinstance(answer, list):
        raise TypeError(f"multiRead answered children for {path}, not data")
    data, stat = answer
    return data, stat


def _listed(path: str, answer: multiread.Answer) -> list[str]:
    if isinstance(answer, NoNodeError):
        return []
    if isinstance(answer, Exception):
        raise translate(answer, path) from answer
    if not isinstance(answer, list):
        raise TypeError(f"multiRead answered data for {path}, not children")
    return sorted(answer)


def read_pipelined(client: KazooClient, paths: list[str]) -> list[tuple[bytes, Any] | None]:
    """``read`` of every path, the requests pipelined (all sent, then every answer awaited):
    one round trip's latency for all of them instead of one each, but one request each."""
    pending = [client.get_async(path) for path in paths]
    found: list[tuple[bytes, Any] | None] = []
    for path, answer in zip(paths, pending, strict=True):
        try:
            data, stat = answer.get()
        except NoNodeError:
            found.append(None)
            continue
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
        found.append((bytes(data or b""), stat))
    return found


MULTIREAD_BATCH = 100
"""Paths in one multiRead at most (:data:`READ_BATCH`'s reason: the server answers a session's
requests in order, and a multiRead of 100 is one request it answers at once)."""

MULTIREAD_BYTES = 256 * 1024
"""Bytes of one multiRead request at most: the server refuses a packet over its
``jute.maxbuffer`` (1 MB by default) and closes the connection."""

_UNSUPPORTED: weakref.WeakSet[KazooClient] = weakref.WeakSet()


def multiread_supported(client: KazooClient) -> bool:
    """False once ``client``'s server answered a multiRead UNIMPLEMENTED (older than 3.6)."""
    return client not in _UNSUPPORTED


def _multiread_unsupported(client: KazooClient) -> None:
    if client not in _UNSUPPORTED:
        _UNSUPPORTED.add(client)
        log.warning(
            "the ZooKeeper server does not know multiRead (older than 3.6): reading one znode"
            " a request from now on"
        )


READ_BATCH = 100
"""Reads in flight at once in :func:`read_batched`: one round trip per batch. Bounded because
ZooKeeper answers a session's requests in order: the liveness probe's round trip
(``ha/liveness.py``) waits behind every read sent before it, and a batch of 1,000 on a starved
server (load 40 on 2 cores) kept it unanswered past ``failover_after``: the connection was
dropped, the batch failed, and the retry met the same fate. 100 keeps that wait short and the
reads still pipelined (10,000 jobs: 100 round trips, not 10,000)."""


def read_batched(
    client: KazooClient, paths: list[str], batch: int = READ_BATCH
) -> Iterator[tuple[bytes, Any] | None]:
    """:func:`read_many` of ``paths``, ``batch`` requests in flight at a time, in order."""
    for start in range(0, len(paths), batch):
        yield from read_many(client, paths[start : start + batch])


def children_many(client: KazooClient, paths: list[str]) -> list[list[str]]:
    """``children`` of every path, in multiReads like :func:`read_many` (pipelined
    ``get_children`` from a server older than 3.6)."""
    return _read_all(client, paths, multiread.GET_CHILDREN, _listed, children_pipelined)


def children_pipelined(client: KazooClient, paths: list[str]) -> list[list[str]]:
    """``children`` of every path, the requests pipelined like :func:`read_pipelined`."""
    pending = [client.get_children_async(path) for path in paths]
    found: list[list[str]] = []
    for path, answer in zip(paths, pending, strict=True):
        try:
            found.append(sorted(answer.get()))
        except NoNodeError:
            found.append([])
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
    return found


def children(client: KazooClient, path: str) -> list[str]:
    """Sorted child names of ``path``; an absent parent has none."""
    try:
        return sorted(client.get_children(path))
    except NoNodeError:
        return []
    except KAZOO_ERRORS as exc:
        raise translate(exc, path) from exc


def job_children(client: KazooClient, path: str) -> list[str]:
    """Child names of ``path`` that are valid job ids; a stray znode is logged and skipped.

    A node someone created by hand (or a future version's helper node) must never stop a
    leader from recovering every real job (rule 6).
    """
    names = []
    for name in children(client, path):
        try:
            names.append(check_job_id(name))
        except ValueError:
            log.warning("ignoring a znode that is not a job id path=%s/%s", path, name)
    return names
