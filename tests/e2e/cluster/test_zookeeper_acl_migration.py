"""A cluster that ran with world-open ZooKeeper state is migrated when it restarts with a
credential, its jobs kept (issue 13; the closed cluster itself: test_zookeeper_acl.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient

from acl_probes import tree, world_open
from e2e.cluster.acl_checks import admin_client, assert_closed_to, cluster_layout
from e2e.ticking import write_pipeline
from steward.ha.acl import ACL_KEY
from steward.testing.processes import ProcessCluster

pytestmark = pytest.mark.zookeeper


def test_a_world_open_cluster_is_migrated_when_it_restarts_with_a_credential(
    process_cluster: ProcessCluster, tmp_path: Path, stranger: KazooClient
) -> None:
    # Given a cluster that ran with world-open state (the old way) and finished a job
    process_cluster.settings[ACL_KEY] = "open"
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    layout = cluster_layout(process_cluster)
    with process_cluster.client() as client:
        pipeline = write_pipeline(tmp_path)
        client.submit(pipeline, args=[str(tmp_path / "t.log"), "1", "0.1"], job_id="before")
        assert client.wait("before", timeout=60).state.value == "FINISHED"
    assert stranger.get(layout.result("before"))[0]  # anyone could read it
    process_cluster.stop()
    process_cluster.forget_stopped()
    # When it starts again with its credential (client.acl=creator, the default)
    del process_cluster.settings[ACL_KEY]
    jobmanager = process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    # Then its jobs are kept and every znode is closed to a client without the credential
    with process_cluster.client() as client:
        assert client.result("before").state.value == "FINISHED"
    admin = admin_client(process_cluster)
    try:
        paths = tree(admin, layout.root)
        assert not [path for path in paths if world_open(admin, path)]
    finally:
        admin.stop()
        admin.close()
    assert_closed_to(stranger, paths, layout.root)
    # And the JobManager or the TaskManager said what it migrated (whichever came first)
    logs = jobmanager.log_text() + process_cluster.procs[-1].log_text()
    assert "zookeeper state was world-open; creator ACL set" in logs
    process_cluster.check_alive()
