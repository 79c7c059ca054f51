"""TLS on the REST API with real processes (issue 13): ``steward cluster start --tls`` serves
HTTPS with a private CA it made, and every client verifies it: the CLI in the folder (no
option), the TaskManagers' heartbeats (a job runs), a standby forwarding a submission to the
leader, the cluster's own probes (start and status see the leader), the testing kit. Plain
HTTP gets nothing; a client with another CA gets one clear line naming ``rest.ssl.ca``; a key
file other users may read is refused at start.
"""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest

from e2e.cluster.cluster_cli import FAST, LONG_RUNNING, document, ok, steward
from steward.config import TlsSettings
from steward.testing.processes import ProcessCluster
from steward.tls.certificates import TlsFiles, ensure_local_tls, local_hosts
from steward.tls.contexts import client_tls
from support import ZK_TEST_ROOT, wait_until

pytestmark = pytest.mark.zookeeper


def test_a_cluster_started_with_tls_serves_and_verifies_https_everywhere(
    workdir: Path, tmp_path: Path, zk_quorum: str, cluster_id: str
) -> None:
    # Given a cluster of 2 JobManagers and 1 TaskManager started with --tls (on the tests'
    # ZooKeeper, in a namespace of its own)
    shared = (
        *("-D", f"high-availability.zookeeper.quorum={zk_quorum}"),
        *("-D", f"high-availability.zookeeper.root={ZK_TEST_ROOT}"),
        *("-D", f"high-availability.cluster-id={cluster_id}"),
    )
    ok(
        steward(
            workdir, *shared, *FAST, "cluster", "start", "--tls", "--jobmanagers", "2",
            "--taskmanagers", "1",
        )
    )  # fmt: skip
    # Then its private CA and certificate are in .steward/tls, the keys the owner's alone
    files = TlsFiles(workdir / ".steward" / "tls")
    for key in (files.key, files.ca_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    # And every JobManager advertises https, and status (its own probes) sees the leader
    status = document(steward(workdir, "cluster", "status", "--json"))
    jobmanagers = [p for p in status["processes"] if p["role"] == "jobmanager"]
    assert all(p["address"].startswith("https://127.0.0.1:") for p in jobmanagers)
    assert status["leader"] in {p["id"] for p in jobmanagers}
    # When a job is submitted from the folder, with no option
    result = document(
        steward(workdir, "submit", str(LONG_RUNNING), "--json", "--", "--ticks", "1",
                "--interval", "0.1")
    )  # fmt: skip
    # Then it FINISHED: the CLI verified the cluster's CA, and the TaskManager heartbeat the
    # leader over TLS (it got the start command and reported the outcome)
    assert (result["state"], result["value"]) == ("FINISHED", {"ticks": 1})
    # When a job is submitted through the standby, which forwards it to the leader over TLS
    standby = next(p for p in jobmanagers if not p["leader"])
    through_standby = document(
        steward(workdir, "-D", f"rest.address={standby['address']}", "submit",
                str(LONG_RUNNING), "--json", "--", "--ticks", "1", "--interval", "0.1")
    )  # fmt: skip
    assert through_standby["state"] == "FINISHED"
    # And its log comes through the standby from the TaskManager's own port, over TLS too
    log = ok(steward(workdir, "-D", f"rest.address={standby['address']}", "logs",
                     through_standby["job_id"]))  # fmt: skip
    assert "long_running" in log.stdout, log.stdout
    # Then plain HTTP to a JobManager's port gets no answer at all
    for process in jobmanagers:
        plain = process["address"].replace("https://", "http://")
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{plain}/healthz", timeout=5)
    # And a client that trusts another CA, or the system's, gets one clear line, at once: not
    # after trying every JobManager again until its 30 s deadline (that would end in "no
    # JobManager answered"). Said by its words, not by a wall-clock bound, which a loaded
    # machine's CLI start alone once passed (20 s).
    other = ensure_local_tls(tmp_path / "other-ca", local_hosts())
    for ca in (str(other.ca), ""):
        refused = steward(workdir, "-D", f"rest.ssl.ca={ca}", "list")
        assert refused.returncode == 2, refused
        assert "no JobManager answered" not in refused.stderr
        assert "cannot verify the TLS certificate of the JobManager" in refused.stderr
        assert "set rest.ssl.ca" in refused.stderr
        assert "Traceback" not in refused.stderr
        (error,) = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert f"{ca or 'system'}" in error


@pytest.fixture
def tls_files(tmp_path: Path) -> TlsFiles:
    return ensure_local_tls(tmp_path / "tls", local_hosts())


def _kit_settings(files: TlsFiles) -> dict[str, str]:
    """The ``rest.ssl.*`` settings of ``files`` as the kit's ``-D`` values."""
    return {
        **{key: str(value) for key, value in files.settings().items()},
        "rest.ssl.enabled": "true",
    }


def test_the_testing_kit_runs_a_tls_cluster_and_verifies_it(
    tmp_path: Path, zk_quorum: str, cluster_id: str, tls_files: TlsFiles
) -> None:
    cluster = ProcessCluster(
        tmp_path / "kit", zk_quorum, cluster_id, extra=_kit_settings(tls_files)
    )
    try:
        jobmanager = cluster.start_jobmanager("jm-1")
        cluster.start_taskmanager("tm-1")
        assert jobmanager.address.startswith("https://")
        # wait_ready asks /readyz and /v1/cluster over https, verifying the cluster's CA
        assert cluster.wait_ready(taskmanagers=1) is jobmanager
        with cluster.client() as client:
            assert [tm.id for tm in client.cluster().taskmanagers] == ["tm-1"]
    finally:
        cluster.stop()


def test_mutual_tls_admits_the_clusters_processes_and_refuses_a_client_without_a_certificate(
    tmp_path: Path, zk_quorum: str, cluster_id: str, tls_files: TlsFiles
) -> None:
    # Given a cluster whose JobManager requires client certificates (rest.ssl.client-auth)
    settings = {**_kit_settings(tls_files), "rest.ssl.client-auth": "require"}
    cluster = ProcessCluster(tmp_path / "kit", zk_quorum, cluster_id, extra=settings)
    pipeline = tmp_path / "quick.py"
    pipeline.write_text("def main(ctx):\n    return {'ok': True}\n")
    try:
        jobmanager = cluster.start_jobmanager("jm-1")
        cluster.start_taskmanager("tm-1")
        cluster.wait_ready(taskmanagers=1)
        # When a job is submitted by a client that presents the cluster's certificate
        with cluster.client() as client:
            job = client.submit(pipeline)
            result = client.wait(job.job_id, timeout=60)
        # Then it ran: the TaskManager's heartbeats presented its certificate too
        assert result.state == "FINISHED"
        # And a client that verifies the JobManager but presents no certificate gets nothing
        anonymous = client_tls(
            TlsSettings(
                enabled=False,
                certificate=None,
                key=None,
                ca=tls_files.ca,
            )
        )
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{jobmanager.address}/healthz", verify=anonymous.context, timeout=5)
    finally:
        cluster.stop()


def test_a_key_file_others_may_read_is_refused_at_start(
    tmp_path: Path, zk_quorum: str, cluster_id: str, tls_files: TlsFiles
) -> None:
    # Given the cluster's key, copied with mode 0644
    readable = tmp_path / "readable-key.pem"
    readable.write_bytes(tls_files.key.read_bytes())
    readable.chmod(0o644)
    settings = {**_kit_settings(tls_files), "rest.ssl.key": str(readable)}
    cluster = ProcessCluster(tmp_path / "kit", zk_quorum, cluster_id, extra=settings)
    try:
        # When a JobManager and a TaskManager start with it
        procs = [cluster.start_jobmanager("jm-1"), cluster.start_taskmanager("tm-1")]
        # Then each exits with one clear line naming the key and the fix
        for proc in procs:
            wait_until(lambda proc=proc: not proc.alive(), 30, f"{proc.id} refuses the key")
            assert proc.popen.returncode == 2, proc.log_text()
            log = proc.log_text()
            assert f"rest.ssl.key: {readable} may be read by any user" in log
            assert f"chmod 600 {readable}" in log
            assert "Traceback" not in log
    finally:
        for proc in cluster.procs:
            proc.signalled = True
        cluster.stop()
