from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.processes import ProcessCluster


@pytest.fixture
def process_cluster(tmp_path: Path, zk_quorum: str, cluster_id: str) -> Iterator[ProcessCluster]:
    cluster = ProcessCluster(tmp_path, zk_quorum, cluster_id)
    try:
        yield cluster
    finally:
        cluster.stop()
