"""A new leader spends its first moments on recovery alone (issue 22, the crash failover floor).

With a handful of jobs, a crash failover's recovery is a few ZooKeeper round trips, and each is
stretched by whatever else the new leader does at the same moment: the term's other threads
(a cleanup's fenced writes queue ahead of recovery's reads in the one session; the
notifications' HTTP client loads the CA certificates holding the interpreter's lock) start
once the term is ready, and recovery reads its independent listings at once, not one after
the other.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, dispatcher_of
from kazoo.client import KazooClient

from steward.jobmanager.leader.cleanup import Cleanup
from steward.jobmanager.leader.delivery import Delivery
from steward.testing.waiting import wait_until

pytestmark = pytest.mark.zookeeper

TOGETHER = ("/dirty-results", "/executions", "/jobgraphs")
"""The listings that depend on nothing but the members read before them."""


def test_recovery_lists_results_leases_and_graphs_at_once(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, "job-1")
    leader.stop()
    # Each listing waits here until the other two are asked too: read one after the other,
    # the first gives up after the timeout and recovery does not list all three together.
    arrived = threading.Barrier(len(TOGETHER), timeout=10.0)
    met: list[str] = []
    real = KazooClient.get_children

    def listing(client: KazooClient, path: str, *args: Any, **kwargs: Any) -> Any:
        name = threading.current_thread().name
        if "recover" in name and path.endswith(TOGETHER) and len(met) < len(TOGETHER):
            arrived.wait()
            met.append(path)
        return real(client, path, *args, **kwargs)

    monkeypatch.setattr(KazooClient, "get_children", listing)
    # The listing read from ZooKeeper (a warm standby's leases come from its copy).
    successor = cluster.start_leader("jm-2", **{"jobmanager.warm-standby": False})

    assert sorted(p.rsplit("/", 1)[1] for p in met) == ["dirty-results", "executions", "jobgraphs"]
    assert dispatcher_of(successor).recovery_summary["jobs"] == 1


def test_cleanup_and_notifications_start_once_the_term_is_ready(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: dict[str, bool] = {}
    real_cleanup, real_delivery = Cleanup.run, Delivery.run

    def cleanup(self: Cleanup) -> None:
        started["cleanup"] = self._term.ready.is_set()
        real_cleanup(self)

    def delivery(self: Delivery) -> None:
        started["notifications"] = self._term.ready.is_set()
        real_delivery(self)

    monkeypatch.setattr(Cleanup, "run", cleanup)
    monkeypatch.setattr(Delivery, "run", delivery)
    cluster.start_leader("jm-1")

    wait_until(lambda: len(started) == 2, 10.0, "the term's threads start")
    assert started == {"cleanup": True, "notifications": True}
