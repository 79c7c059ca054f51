"""The one mapping of kazoo's exceptions to Steward's: total, and each kind to its class.

Code outside ``ha/`` and ``store/`` retries on ``CoordinationError`` where it used to retry on
any kazoo exception, so every kazoo exception must map to one.
"""

from __future__ import annotations

import inspect

import kazoo.exceptions
import pytest
from kazoo.handlers.threading import KazooTimeoutError

from steward.errors import (
    ConcurrentModificationError,
    CoordinationError,
    NodeExistsError,
    NoNodeError,
    ZooKeeperUnavailableError,
)
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate


def _kazoo_exception_classes() -> list[type[Exception]]:
    found = [
        cls
        for _name, cls in inspect.getmembers(kazoo.exceptions, inspect.isclass)
        if issubclass(cls, kazoo.exceptions.KazooException)
    ]
    return [*found, KazooTimeoutError]


@pytest.mark.parametrize("kind", _kazoo_exception_classes(), ids=lambda cls: cls.__name__)
def test_every_kazoo_exception_is_caught_and_becomes_a_coordination_error(
    kind: type[Exception],
) -> None:
    exc = kind.__new__(kind)
    assert isinstance(exc, KAZOO_ERRORS)
    assert isinstance(translate(exc, "/steward/x"), CoordinationError)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (kazoo.exceptions.NodeExistsError(), NodeExistsError),
        (kazoo.exceptions.NoNodeError(), NoNodeError),
        (kazoo.exceptions.BadVersionError(), ConcurrentModificationError),
        (kazoo.exceptions.ConnectionLoss(), ZooKeeperUnavailableError),
        (kazoo.exceptions.ConnectionClosedError(), ZooKeeperUnavailableError),
        (kazoo.exceptions.SessionExpiredError(), ZooKeeperUnavailableError),
        (KazooTimeoutError(), ZooKeeperUnavailableError),
        (kazoo.exceptions.NotEmptyError(), CoordinationError),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else value.__name__,
)
def test_each_kind_maps_to_its_class_and_names_the_path(
    raised: Exception, expected: type[CoordinationError]
) -> None:
    translated = translate(raised, "/steward/jobs/a")
    assert type(translated) is expected
    assert "/steward/jobs/a" in str(translated)
