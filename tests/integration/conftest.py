"""Fixtures shared by the integration tests that stop and restart their own ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from steward.testing.zookeeper import restart_server, start_ensemble
from steward.zookeeper.managed import ManagedEnsemble


@pytest.fixture(scope="module")
def own_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedEnsemble]:
    """A standalone ZooKeeper private to one test module, which may stop and restart it.

    The session-wide ``zookeeper`` fixture is shared by every test and must never be stopped.
    """
    ensemble = start_ensemble(tmp_path_factory.mktemp("own-zookeeper"), servers=1)
    try:
        yield ensemble
    finally:
        ensemble.stop()


@pytest.fixture
def stoppable_zookeeper(own_zookeeper: ManagedEnsemble) -> Iterator[ManagedEnsemble]:
    """``own_zookeeper``, serving again after the test whatever the test did to it."""
    yield own_zookeeper
    if not own_zookeeper.status()[0].running:
        restart_server(own_zookeeper, 1)
