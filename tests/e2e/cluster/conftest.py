"""Fixtures of the local-cluster tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.cluster.local import LocalCluster


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """An empty folder for ``steward cluster start``; whatever it started is stopped after."""
    folder = tmp_path / "cluster"
    folder.mkdir()
    try:
        yield folder
    finally:
        LocalCluster(folder).stop(timeout=10.0)
