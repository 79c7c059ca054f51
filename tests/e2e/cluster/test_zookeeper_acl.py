"""A closed ZooKeeper, end to end (issue 13): a cluster of real processes keeps its state under
the creator ACL of its credential, so a client without it can neither read nor change any of
it; a process without the right credential is refused with a clear error; and a cluster that
ran world-open is migrated when it restarts with a credential, its jobs kept.

The testing kit gives every cluster a credential of its own (``<workdir>/zookeeper.digest``),
so every other end-to-end test runs with ACLs on too.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NotEmptyError
from kazoo.security import OPEN_ACL_UNSAFE

from acl_probes import assert_closed, stranger_client, tree, world_open
from e2e.ticking import write_pipeline
from steward.ha.acl import ACL_KEY, DIGEST_FILE_KEY, create_digest_file
from steward.ha.layout import Layout
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from support import ZK_TEST_ROOT, wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def stranger(zk_quorum: str) -> Iterator[KazooClient]:
    """A kazoo client without the cluster's credential."""
    with stranger_client(zk_quorum) as client:
        yield client


def _admin(cluster: ProcessCluster) -> KazooClient:
    """A kazoo client with the cluster's credential."""
    quorum = cluster.settings["high-availability.zookeeper.quorum"]
    client = KazooClient(hosts=quorum, timeout=10.0, **cluster.zookeeper_access.kazoo_options())
    client.start(timeout=15)
    return client


def _layout(cluster: ProcessCluster) -> Layout:
    return Layout(f"{ZK_TEST_ROOT}/{cluster.settings['high-availability.cluster-id']}")


def _assert_closed_to(stranger: KazooClient, paths: list[str], root: str) -> None:
    for path in paths:
        assert_closed(stranger, path)
        with pytest.raises(NoAuthError):
            stranger.set_acls(path, OPEN_ACL_UNSAFE)
        if path == root:
            # Deleting needs DELETE on the parent, which clusters share (open); but the
            # root is never empty, and everything in it is closed.
            with pytest.raises(NotEmptyError):
                stranger.delete(path)
        else:
            with pytest.raises(NoAuthError):
                stranger.delete(path)


def test_a_client_without_the_credential_can_neither_read_nor_change_the_state(
    process_cluster: ProcessCluster, tmp_path: Path, stranger: KazooClient
) -> None:
    # Given a running cluster with a finished job and a running one
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    pipeline = write_pipeline(tmp_path)
    layout = _layout(process_cluster)
    with process_cluster.client() as client:
        client.submit(pipeline, args=[str(tmp_path / "a.log"), "1", "0.1"], job_id="done")
        assert client.wait("done", timeout=60).state.value == "FINISHED"
        client.submit(pipeline, args=[str(tmp_path / "b.log"), "100000", "0.2"], job_id="busy")
        wait_until(lambda: client.job("busy").state is JobState.RUNNING, 30, "busy running")
    admin = _admin(process_cluster)
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
    _assert_closed_to(stranger, paths, layout.root)
    # And the credential is in no log
    credential = process_cluster.zookeeper_access.credential
    assert credential is not None
    for proc in process_cluster.procs:
        assert credential.password not in proc.log_text(), proc.id
    process_cluster.check_alive()


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
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    # Given a running cluster: its state exists and is protected
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    secret = process_cluster.zookeeper_access.credential
    assert secret is not None
    # A wrong credential
    wrong_file = tmp_path / "wrong.digest"
    wrong = create_digest_file(wrong_file)
    output = _run(process_cluster, "jobmanager", "jm-wrong", **{DIGEST_FILE_KEY: str(wrong_file)})
    assert "protected by another credential" in output
    assert "is not the one that protects it" in output
    assert wrong.password not in output
    assert secret.password not in output
    # No credential at all, with the default client.acl=creator
    output = _run(process_cluster, "taskmanager", "tm-none", **{DIGEST_FILE_KEY: ""})
    assert ACL_KEY in output
    assert DIGEST_FILE_KEY in output
    # A missing file
    output = _run(process_cluster, "taskmanager", "tm-gone", **{DIGEST_FILE_KEY: "/nonexistent"})
    assert "/nonexistent does not exist" in output
    # An open process on a protected cluster
    output = _run(process_cluster, "taskmanager", "tm-open", **{ACL_KEY: "open"})
    assert "protected by another credential" in output
    # And none of them changed the cluster: one TaskManager, the same leader, all alive
    view = process_cluster.cluster_view()
    assert view is not None
    assert [tm["id"] for tm in view["taskmanagers"]] == ["tm-1"]
    process_cluster.check_alive()


def test_a_world_open_cluster_is_migrated_when_it_restarts_with_a_credential(
    process_cluster: ProcessCluster, tmp_path: Path, stranger: KazooClient
) -> None:
    # Given a cluster that ran with world-open state (the old way) and finished a job
    process_cluster.settings[ACL_KEY] = "open"
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    layout = _layout(process_cluster)
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
    admin = _admin(process_cluster)
    try:
        paths = tree(admin, layout.root)
        assert not [path for path in paths if world_open(admin, path)]
    finally:
        admin.stop()
        admin.close()
    _assert_closed_to(stranger, paths, layout.root)
    # And the JobManager or the TaskManager said what it migrated (whichever came first)
    logs = jobmanager.log_text() + process_cluster.procs[-1].log_text()
    assert "zookeeper state was world-open; creator ACL set" in logs
    process_cluster.check_alive()
