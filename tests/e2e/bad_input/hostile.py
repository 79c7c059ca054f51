"""Helpers of the hostile-input and fuzzing tests: credentials, both JobManagers, and what
a cluster has stored (to prove a refused request stored nothing)."""

from __future__ import annotations

import os

import httpx

from steward.testing.processes import ProcessCluster


def auth_headers(cluster: ProcessCluster) -> dict[str, str]:
    """The testing kit's credentials for raw requests (``cluster.headers`` once REST
    authentication exists, else ``$STEWARD_TOKEN``), or nothing."""
    headers = getattr(cluster, "headers", None)
    if isinstance(headers, dict):
        return dict(headers)
    token = os.environ.get("STEWARD_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def each_jobmanager(cluster: ProcessCluster) -> list[str]:
    leader = cluster.leader()
    assert leader is not None
    standby = next(p for p in cluster.jobmanagers() if p.id != leader.id)
    return [leader.address, standby.address]


def stored_state(cluster: ProcessCluster) -> tuple[set[str], set[str]]:
    """The job ids ZooKeeper knows, and every file in blob storage."""
    with cluster.client() as client:
        jobs = {view.job_id for view in client.jobs()}
    storage = cluster.workdir / "storage"
    files = {str(p.relative_to(storage)) for p in storage.rglob("*") if p.is_file()}
    return jobs, files


def assert_refused(response: httpx.Response, status: int, *needles: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    error = response.json()
    assert error["code"] and error["message"], error
    assert "Traceback" not in error["message"], error
    for needle in needles:
        assert needle in error["message"], (needle, error)


def assert_nothing_stored(cluster: ProcessCluster, before: tuple[set[str], set[str]]) -> None:
    """No job and no storage file appeared since ``before`` (:func:`stored_state`); files
    may go (the cleanup of earlier tests' jobs), none may come."""
    jobs, files = stored_state(cluster)
    assert jobs <= before[0], jobs - before[0]
    assert files <= before[1], files - before[1]
