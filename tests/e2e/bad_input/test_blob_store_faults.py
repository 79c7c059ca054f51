"""The blob store refuses writes (full, read-only): submissions fail clearly, nothing is lost.

The store is a small tmpfs mounted for the test (root ignores file permissions, so a mount is
the honest way to make writes fail); without permission to mount, the test skips.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from e2e.bad_input.conftest import assert_clear_error, run_cli, start_cluster
from steward.ha.layout import Layout
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from support import ZK_TEST_ROOT, wait_until

pytestmark = pytest.mark.zookeeper

LONG = "import time\n\ndef main(ctx):\n    time.sleep(float(ctx.args[0]))\n    return 'done'\n"


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    mountpoint = tmp_path / "store"
    mountpoint.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mountpoint))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the blob store: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


@pytest.fixture
def store_cluster(tmp_path: Path, store: Path, zk_quorum: str) -> Iterator[ProcessCluster]:
    cluster = start_cluster(
        tmp_path / "cluster", zk_quorum, **{"high-availability.storage-dir": f"file://{store}"}
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def _fill(store: Path) -> Path:
    filler = store / "filler"
    with filler.open("wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)
    return filler


def _graph_pointers(cluster: ProcessCluster) -> list[str]:
    root = f"{ZK_TEST_ROOT}/{cluster.settings['high-availability.cluster-id']}"
    client = KazooClient(
        hosts=cluster.settings["high-availability.zookeeper.quorum"],
        **cluster.zookeeper_access.kazoo_options(),
    )
    client.start(timeout=15)
    try:
        path = Layout(root).jobgraphs
        return sorted(client.get_children(path)) if client.exists(path) else []
    finally:
        client.stop()
        client.close()


def _submit_http(cluster: ProcessCluster, job_id: str) -> httpx.Response:
    artifact = {"filename": "long.py", "data_b64": base64.b64encode(LONG.encode()).decode()}
    body = json.dumps({"spec": {"job_id": job_id, "args": ["0"]}, "artifact": artifact})
    leader = cluster.leader()
    assert leader is not None
    return httpx.post(
        f"{leader.address}/v1/jobs", content=body, timeout=60, headers=cluster.headers
    )


def _refused_cleanly(cluster: ProcessCluster, store: Path, job_id: str, tmp_path: Path) -> None:
    response = _submit_http(cluster, job_id)
    # 507, not 503: a client must not retry this for its whole timeout and then blame the
    # cluster; it gets the storage's own error at once.
    assert response.status_code == 507, response.text
    body = response.json()
    assert body["code"] == "storage_unavailable" and "blob" in body["message"], body
    pipeline = tmp_path / "long.py"
    pipeline.write_text(LONG)
    cli = run_cli(cluster, "submit", str(pipeline), "--job-id", job_id, "--detach")
    assert_clear_error(cli, "blob")
    # Nothing half-written: no pointer, no blob or temporary under the job's prefix.
    assert job_id not in _graph_pointers(cluster)
    assert not list((store / "jobgraphs" / job_id).glob("*"))
    cluster.check_alive()


def test_full_then_read_only_store_refuses_submissions_and_loses_nothing(
    store_cluster: ProcessCluster, store: Path, tmp_path: Path
) -> None:
    cluster = store_cluster
    pipeline = tmp_path / "long.py"
    pipeline.write_text(LONG)
    with cluster.client() as client:
        client.submit(pipeline, args=["600"], job_id="running")
        wait_until(lambda: client.job("running").state is JobState.RUNNING, 30)

        # Full.
        filler = _fill(store)
        _refused_cleanly(cluster, store, "while-full", tmp_path)
        filler.unlink()
        client.submit(pipeline, args=["0"], job_id="after-full")
        assert client.wait("after-full", timeout=60).state.value == "FINISHED"

        # Read-only.
        remounted = _mount("-o", "remount,ro", str(store))
        assert remounted.returncode == 0, remounted.stderr
        try:
            _refused_cleanly(cluster, store, "while-ro", tmp_path)
        finally:
            assert _mount("-o", "remount,rw", str(store)).returncode == 0
        client.submit(pipeline, args=["0"], job_id="after-ro")
        assert client.wait("after-ro", timeout=60).state.value == "FINISHED"

        # The job that ran all along was never disturbed.
        view = client.job("running")
        assert view.state is JobState.RUNNING and view.attempt_count == 1, view
        assert "running" in _graph_pointers(cluster)
        client.cancel("running")
    cluster.check_alive()
