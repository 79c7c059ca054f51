"""The one place kazoo's exceptions become Steward's (docs/architecture.md, "Errors").

Every module of ``ha/`` and ``store/`` that calls kazoo catches :data:`KAZOO_ERRORS` and raises
:func:`translate`'s answer from it, so the original stays the ``__cause__`` and nothing outside
those two layers ever sees (or imports) a kazoo exception: it catches
:class:`~steward.errors.CoordinationError` or one of its subclasses instead. The mapping is
total: every kazoo error becomes a ``CoordinationError``, so a caller that retried on "any
kazoo error" retries on ``CoordinationError`` exactly as before.
"""

from __future__ import annotations

from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    SessionExpiredError,
)
from kazoo.exceptions import NodeExistsError as KazooNodeExists
from kazoo.exceptions import NoNodeError as KazooNoNode
from kazoo.handlers.threading import KazooTimeoutError

from steward.errors import (
    ConcurrentModificationError,
    CoordinationError,
    NodeExistsError,
    NoNodeError,
    ZooKeeperUnavailableError,
)

KAZOO_ERRORS: tuple[type[Exception], ...] = (KazooException, KazooTimeoutError)
"""What a kazoo call can raise: its exception tree, and the timeout of an async result's
``get(timeout=...)`` (which is not a ``KazooException``)."""


def translate(exc: BaseException, path: str) -> CoordinationError:
    """Map a kazoo exception about ``path`` to Steward's exception tree.

    ``NodeExistsError``, ``NoNodeError``, ``ConcurrentModificationError`` (a version check
    failed), ``ZooKeeperUnavailableError`` (connection lost or closed, session expired, a
    timeout: retryable), and ``CoordinationError`` for anything else.
    """
    if isinstance(exc, KazooNodeExists):
        return NodeExistsError(path)
    if isinstance(exc, KazooNoNode):
        return NoNodeError(path)
    if isinstance(exc, BadVersionError):
        return ConcurrentModificationError(f"znode {path} changed concurrently")
    if isinstance(exc, ConnectionLoss | ConnectionClosedError | KazooTimeoutError):
        return ZooKeeperUnavailableError(f"lost the ZooKeeper connection (at {path})")
    if isinstance(exc, SessionExpiredError):
        return ZooKeeperUnavailableError(f"the ZooKeeper session expired (at {path})")
    return CoordinationError(f"ZooKeeper failed on {path}: {exc!r}")
