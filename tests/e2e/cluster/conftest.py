"""Fixtures of the local-cluster tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from acl_probes import stranger_client
from steward.cluster.local import LocalCluster
from steward.testing.s3 import S3Server


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """An empty folder for ``steward cluster start``; whatever it started is stopped after."""
    folder = tmp_path / "cluster"
    folder.mkdir()
    try:
        yield folder
    finally:
        LocalCluster(folder).stop(timeout=10.0)


@pytest.fixture
def s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """A real S3-compatible server (moto) of this test's, its credentials in the environment
    that the cluster's processes inherit."""
    with S3Server(tmp_path / "s3") as server:
        for key, value in server.environment().items():
            monkeypatch.setenv(key, value)
        yield server


@pytest.fixture
def stranger(zk_quorum: str) -> Iterator[KazooClient]:
    """A kazoo client without the cluster's credential (for the closed-ZooKeeper tests)."""
    with stranger_client(zk_quorum) as client:
        yield client
