"""No cyclic collection while a new leader lists its jobs or flushes its recovered records.

A full collection scans the whole heap a standby built (76 ms at 5,000 jobs, more at 10,000),
and a takeover's growing heap is what starts one: in the listing, or in the flush of the
records written before "ready", it was time before the term is ready (issue 22). Recovery
holds the collector off around each of its bounded steps (the chunks' adoption already was);
the collector is on again once the term is ready.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from adoption_harness import leased_jobs
from jobmanager_harness import JobManagerCluster, dispatcher_of

from steward.jobmanager.leader.records import Records
from steward.store.job_graphs import JobGraphStore
from steward.store.leases import ExecutionLeases

pytestmark = pytest.mark.zookeeper

JOBS = 6


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def _noting(monkeypatch: pytest.MonkeyPatch, owner: type, name: str, seen: dict[str, bool]) -> None:
    """Note whether the collector was on whenever ``owner.name`` ran."""
    real: Callable[..., Any] = getattr(owner, name)

    def noted(self: object, *args: Any, **kwargs: Any) -> Any:
        seen[f"{owner.__name__}.{name}"] = gc.isenabled()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, noted)


def test_no_collection_while_the_jobs_are_listed_or_their_records_flushed(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leased_jobs(cluster, [f"job-{i}" for i in range(JOBS)])
    seen: dict[str, bool] = {}
    _noting(monkeypatch, JobGraphStore, "job_ids", seen)
    _noting(monkeypatch, ExecutionLeases, "all", seen)
    _noting(monkeypatch, Records, "flush_deferred", seen)

    # The listing read from ZooKeeper (a warm standby's leases come from its copy).
    successor = cluster.start_leader("jm-2", **{"jobmanager.warm-standby": False})

    assert dispatcher_of(successor).recovery_summary["adopted"] == JOBS
    assert seen == {
        "JobGraphStore.job_ids": False,
        "ExecutionLeases.all": False,
        "Records.flush_deferred": False,
    }
    assert gc.isenabled()
