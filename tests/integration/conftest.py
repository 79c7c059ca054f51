"""Fixtures shared by the integration tests that stop and restart their own ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from steward.testing.zookeeper import restart_server, running_ensemble
from steward.zookeeper.managed import ManagedEnsemble


@pytest.fixture(scope="module")
def own_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedEnsemble]:
    """A standalone ZooKeeper private to one test module, which may stop and restart it.

    The session-wide ``zookeeper`` fixture is shared by every test and must never be stopped.
    """
    with running_ensemble(tmp_path_factory.mktemp("own-zookeeper"), servers=1) as ensemble:
        yield ensemble


@pytest.fixture
def stoppable_zookeeper(own_zookeeper: ManagedEnsemble) -> Iterator[ManagedEnsemble]:
    """``own_zookeeper``, serving again after the test whatever the test did to it."""
    yield own_zookeeper
    if not own_zookeeper.status()[0].running:
        restart_server(own_zookeeper, 1)


@pytest.fixture
def frozen_zk(own_zookeeper: ManagedEnsemble) -> Iterator[ManagedEnsemble]:
    """``own_zookeeper`` for tests that freeze it (SIGSTOP), thawed and serving after the
    test whatever the test did. A module whose every session must use it overrides
    ``zk_quorum`` with :func:`frozen_zk`'s connect string."""
    yield own_zookeeper
    if own_zookeeper.status()[0].frozen:
        own_zookeeper.thaw_server(1)
    own_zookeeper.wait_serving(timeout=60.0)
