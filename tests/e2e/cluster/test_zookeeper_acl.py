"""A closed ZooKeeper, end to end (issue 13): a cluster of real processes keeps its state under
the creator ACL of its credential, so a client without it can neither read nor change any of
it; a process without the right credential is refused with a clear error; and a cluster that
ran world-open is migrated when it restarts with a credential, its jobs kept
(test_zookeeper_acl_migration.py: it restarts its cluster, so it has one of its own).

The testing kit gives every cluster a credential of its own (``<workdir>/zookeeper.digest``),
so every other end-to-end test runs with ACLs on too.

The two tests here share one cluster (two JobManagers, one TaskManager): neither stops a
member, and the refused processes of one change nothing (it checks that).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from acl_probes import tree, world_open
from e2e.cluster.acl_checks import admin_client, assert_closed_to, cluster_layout
from e2e.module_clusters import module_cluster
from e2e.ticking import write_pipeline
from steward.ha.acl import ACL_KEY, DIGEST_FILE_KEY, create_digest_file
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    with module_cluster(tmp_path_factory, zookeeper, "zookeeper-acl", jobmanagers=2) as cluster:
        yield cluster


def test_a_client_without_the_credential_can_neither_read_nor_change_the_state(
    cluster: ProcessCluster, tmp_path: Path, stranger: KazooClient
) -> None:
    # Given a running cluster with a finished job and a running one
    pipeline = write_pipeline(tmp_path)
    layout = cluster_layout(cluster)
    with cluster.client() as client:
        client.submit(pipeline, args=[str(tmp_path / "a.log"), "1", "0.1"], job_id="done")
        assert client.wait("done", timeout=60).state.value == "FINISHED"
        client.submit(pipeline, args=[str(tmp_path / "b.log"), "100000", "0.2"], job_id="busy")
        wait_until(lambda: client.job("busy").state is JobState.RUNNING, 30, "busy running")
    admin = admin_client(cluster)
    try:
        # (every kind of znode the cluster writes is there)
        wanted = [
            layout.leader_epoch,
            layout.leader_info,
            layout.taskmanager("tm-1"),
            layout.jobgraph("busy"),
            layout.job_status("busy"),
            layout.execution("busy"),
            layout.result("done"),
        ]
        wait_until(lambda: all(admin.exists(path) for path in wanted), 20, "state written")
        paths = tree(admin, layout.root)
        assert len(admin.get_children(layout.leader_latch)) == 2
        assert set(wanted) <= set(paths)
        # Then each of them carries the creator ACL alone
        assert not [path for path in paths if world_open(admin, path)]
    finally:
        admin.stop()
        admin.close()
    # And a client without the credential can neither read nor change any of them
    assert_closed_to(stranger, paths, layout.root)
    # And the credential is in no log
    credential = cluster.zookeeper_access.credential
    assert credential is not None
    for proc in cluster.procs:
        assert credential.password not in proc.log_text(), proc.id


def _run(cluster: ProcessCluster, role: str, proc_id: str, **settings: str) -> str:
    """Run a member with extra settings in the foreground; it must exit 2 at once."""
    extra = {"jobmanager.port": "0"} if role == "jobmanager" else {}
    argv = cluster.command(role, proc_id, {**extra, **settings})
    done = subprocess.run(
        argv, cwd=cluster.workdir, capture_output=True, text=True, timeout=60, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output, output
    return output


def test_a_process_without_the_right_credential_is_refused_clearly(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    # Given a running cluster: its state exists and is protected
    secret = cluster.zookeeper_access.credential
    assert secret is not None
    # A wrong credential
    wrong_file = tmp_path / "wrong.digest"
    wrong = create_digest_file(wrong_file)
    output = _run(cluster, "jobmanager", "jm-wrong", **{DIGEST_FILE_KEY: str(wrong_file)})
    assert "protected by another credential" in output
    assert "is not the one that protects it" in output
    assert wrong.password not in output
    assert secret.password not in output
    # No credential at all, with the default client.acl=creator
    output = _run(cluster, "taskmanager", "tm-none", **{DIGEST_FILE_KEY: ""})
    assert ACL_KEY in output
    assert DIGEST_FILE_KEY in output
    # A missing file
    output = _run(cluster, "taskmanager", "tm-gone", **{DIGEST_FILE_KEY: "/nonexistent"})
    assert "/nonexistent does not exist" in output
    # An open process on a protected cluster
    output = _run(cluster, "taskmanager", "tm-open", **{ACL_KEY: "open"})
    assert "protected by another credential" in output
    # And none of them changed the cluster: one TaskManager, the same leader, all alive
    view = cluster.cluster_view()
    assert view is not None
    assert [tm["id"] for tm in view["taskmanagers"]] == ["tm-1"]
