"""Fixtures of the JobManager integration tests: ``cluster`` (see jobmanager_harness)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from jobmanager_harness import JobManagerCluster


@pytest.fixture
def cluster(zk_quorum: str, cluster_id: str, tmp_path: Path) -> Iterator[JobManagerCluster]:
    """This test's cluster; every JobManager and client it started is stopped after it."""
    with JobManagerCluster(zk_quorum, cluster_id, tmp_path) as made:
        yield made
