"""Helpers of the store contract tests (fixtures are in this folder's conftest.py)."""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass

from steward.ha.election import LeaderElection, Leadership
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.wire.jobs import Artifact, ArtifactKind, JobGraph, JobSpec


@dataclass
class Contender:
    """A JobManager's ZooKeeper side as far as the stores care: its session and its term."""

    session: Session
    election: LeaderElection
    leadership: Leadership

    @property
    def fence(self) -> Fence:
        return self.leadership.fence


def make_graph(job_id: str, code: str = "def main(ctx):\n    return 1\n") -> JobGraph:
    data = code.encode()
    return JobGraph(
        spec=JobSpec(job_id=job_id, name=f"pipeline {job_id}", args=["--n", "3"]),
        artifact=Artifact(
            filename="pipeline.py",
            kind=ArtifactKind.PYTHON_FILE,
            sha256=hashlib.sha256(data).hexdigest(),
            data_b64=base64.b64encode(data).decode(),
        ),
        submitted_at=time.time(),
    )


def blob_keys(blobs: BlobStore, prefix: str) -> list[str]:
    return [info.key for info in blobs.list(prefix)]


def znode_snapshot(session: Session, path: str) -> dict[str, tuple[bytes, int]]:
    """``{path: (data, mzxid)}`` of ``path`` and every znode below it."""
    client = session.client
    snapshot: dict[str, tuple[bytes, int]] = {}
    pending = [path]
    while pending:
        current = pending.pop()
        stat = client.exists(current)
        if stat is None:
            continue
        data, stat = client.get(current)
        snapshot[current] = (bytes(data or b""), stat.mzxid)
        pending.extend(f"{current}/{child}" for child in client.get_children(current))
    return snapshot
