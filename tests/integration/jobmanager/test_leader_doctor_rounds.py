"""The leader examines the cluster by itself every ``jobmanager.doctor.interval`` (what the
doctor alerts of deploy/prometheus/ read), on a real ZooKeeper; a standby does not."""

from __future__ import annotations

import pytest
from jobmanager_harness import JobManagerCluster

from steward.jobmanager.manager import JobManager
from support import wait_until

pytestmark = pytest.mark.zookeeper

ROUNDS = {"jobmanager.doctor.interval": "200ms"}


def examined_at(manager: JobManager) -> float:
    value = manager.metrics.registry.get_sample_value("steward_doctor_last_run_timestamp_seconds")
    return value or 0.0


def test_the_leader_exports_its_own_doctor_rounds_and_a_standby_none(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **ROUNDS)
    standby = cluster.start("jm-2", **ROUNDS)
    cluster.wait_knows_leader(standby, leader)

    first = wait_until(lambda: examined_at(leader), 30, "the leader's first round")
    wait_until(lambda: examined_at(leader) > first, 30, "the leader's next round")

    registry = leader.metrics.registry
    assert registry.get_sample_value("steward_doctor_findings", {"severity": "error"}) == 0
    assert examined_at(standby) == 0  # its turns came (every 200 ms) and it skipped them
