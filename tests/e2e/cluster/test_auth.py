"""Authentication and roles end to end (issue 13): real JobManagers and TaskManagers.

A stranger's request to any route of any JobManager is answered 401 and changes nothing in
ZooKeeper; roles hold on the leader and through a standby (whose forwarding carries the
caller's own identity); a revoked or expired token is refused by every JobManager; the audit
log has a JSON line per action and never a token. (A rogue TaskManager: test_rogue_taskmanager.py.)

The tests share one cluster: none kills a member, each makes tokens and jobs of its own and
waits for its jobs' cleanup, so the stranger's ZooKeeper snapshot sees no other test's writes.

The testing kit gives every cluster its credentials (steward.testing.credentials), so every
other end-to-end test runs with authentication on too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from acl_probes import started_client
from e2e.module_clusters import module_cluster
from e2e.ticking import write_pipeline
from steward.client import Client
from steward.errors import ApiError
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.states import JobState
from steward.wire.tokens import Role
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

OPERATIONS_EXTRA = [("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/v1/nothing")]
LIMITS = ("per-address", "per-credential")
SAMPLE = {"job_id": "some-job", "sha256": "0" * 64, "token_id": "0123456789ab"}


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    """A leader (jm-1), a standby (jm-2) and one TaskManager, ready. The failure rate limits
    are off: these tests send one wrong token to every route, and would otherwise see the 429
    that tests/integration/jobmanager/test_rate_limits.py is about."""
    no_limits = {f"security.rate-limits.auth-failures.{key}": "0" for key in LIMITS}
    with module_cluster(
        tmp_path_factory, zookeeper, "auth", jobmanagers=2, extra=no_limits
    ) as cluster:
        yield cluster


@pytest.fixture
def two_jobmanagers(cluster: ProcessCluster) -> tuple[Proc, Proc]:
    """The shared cluster's leader and standby, in that order."""
    first, standby = cluster.jobmanagers()
    return first, standby


@pytest.fixture
def zk(cluster: ProcessCluster) -> Iterator[KazooClient]:
    """A kazoo client with the cluster's ZooKeeper credential (to look, never to change)."""
    quorum = cluster.settings["high-availability.zookeeper.quorum"]
    options = cluster.zookeeper_access.kazoo_options()
    with started_client(quorum, **options) as client:
        yield client


def _snapshot(client: KazooClient, root: str) -> dict[str, bytes]:
    tree: dict[str, bytes] = {}
    pending = [root]
    while pending:
        path = pending.pop()
        data, _stat = client.get(path)
        tree[path] = bytes(data or b"")
        pending += [f"{path}/{child}" for child in client.get_children(path)]
    return tree


def _operations(cluster: ProcessCluster, proc: Proc) -> list[tuple[str, str]]:
    """Every (method, path) of the JobManager's OpenAPI document, sample values filled in."""
    document = cluster.get(proc, "/openapi.json")
    operations = list(OPERATIONS_EXTRA)
    for template, methods in document["paths"].items():
        path = template
        for name, value in SAMPLE.items():
            path = path.replace("{" + name + "}", value)
        operations += [(method.upper(), path) for method in methods]
    return operations


def test_a_stranger_gets_401_on_every_route_of_every_jobmanager_and_changes_nothing(
    cluster: ProcessCluster, two_jobmanagers: tuple[Proc, Proc], zk: KazooClient
) -> None:
    root = f"{cluster.settings['high-availability.zookeeper.root']}/" + str(
        cluster.settings["high-availability.cluster-id"]
    )
    with cluster.client() as client:
        client.create_token("someone", Role.SUBMITTER)  # a token exists to be guessed at
    before = _snapshot(zk, root)
    answers = []
    for proc in two_jobmanagers:
        operations = _operations(cluster, proc)
        assert ("POST", "/v1/jobs") in operations and ("DELETE", "/v1/tokens/0123456789ab") in (
            operations
        )
        for method, path in operations:
            for headers in ({}, {"authorization": "Bearer stw_0123456789ab_guess"}):
                answer = httpx.request(
                    method, proc.address + path, headers=headers, content=b"{}", timeout=10
                )
                answers.append((proc.id, method, path, answer.status_code))
                if path in ("/healthz", "/readyz"):
                    assert answer.status_code == 200
                    continue
                assert answer.status_code == 401, (proc.id, method, path, answer.text)
                assert answer.headers["www-authenticate"] == "Bearer"
                assert "some-job" not in answer.text
    assert len(answers) >= 2 * 2 * 12
    assert _snapshot(zk, root) == before
    cluster.check_alive()


def test_roles_hold_on_the_leader_and_through_a_standby_with_the_callers_identity(
    cluster: ProcessCluster, two_jobmanagers: tuple[Proc, Proc], tmp_path: Path
) -> None:
    leader, standby = two_jobmanagers
    # The audit lines of this test alone: the shared cluster's logs hold the others' too.
    marks = [len(proc.log_text()) for proc in two_jobmanagers]
    pipeline = write_pipeline(tmp_path)
    truth = str(tmp_path / "truth.log")
    with cluster.client() as admin:
        viewer = admin.create_token("vera", Role.VIEWER).token
        alice = admin.create_token("alice", Role.SUBMITTER).token
        bob = admin.create_token("bob", Role.SUBMITTER).token

    def through_standby(token: str) -> Client:
        return Client([standby.address], timeout=30, token=token)

    with through_standby(viewer) as client:
        assert client.jobs() == []
        with pytest.raises(ApiError) as refused:
            client.submit(pipeline, args=[truth, "1", "0.1"], job_id="by-vera")
        assert refused.value.status == 403
    with through_standby(alice) as client:
        job = client.submit(pipeline, args=[truth, "100000", "0.2"], job_id="alices")
        assert job.submitter == "alice"  # recorded by the leader, from alice's own token
        client.submit(pipeline, args=[truth, "100000", "0.2"], job_id="alices-too")
    with Client([leader.address], timeout=30, token=alice) as client:
        assert client.job("alices").submitter == "alice"
    with through_standby(bob) as client:
        with pytest.raises(ApiError) as refused:
            client.cancel("alices")
        assert refused.value.status == 403
    with through_standby(alice) as client:
        assert client.cancel("alices").state in (JobState.CANCELLING, JobState.CANCELED)
        assert client.wait("alices", timeout=60).state.value == "CANCELED"
    with cluster.client() as admin:
        admin.cancel("alices-too")
        assert admin.wait("alices-too", timeout=60).state.value == "CANCELED"
        assert admin.job("alices-too").submitter == "alice"
        for job_id in ("alices", "alices-too"):
            wait_until(lambda j=job_id: admin.result(j).cleanup == "CLEAN", 30)

    audit = [
        json.loads(line[line.index("{") :])
        for proc, mark in zip(two_jobmanagers, marks, strict=True)
        for line in proc.log_text()[mark:].splitlines()
        if "steward.audit" in line
    ]
    actions = [(a["audit"], a["who"], a["outcome"], a["target"].get("job_id")) for a in audit]
    assert ("job.submit", "alice", "ok", "alices") in actions
    assert ("job.cancel", "bob", "denied", "alices") in actions
    assert ("job.cancel", "alice", "ok", "alices") in actions
    assert ("job.cancel", "admin", "ok", "alices-too") in actions
    assert [a for a in actions if a[0] == "token.create"] == [
        ("token.create", "admin", "ok", None)
    ] * 3
    logs = "".join(proc.log_text() for proc in cluster.procs)
    for token in (viewer, alice, bob, cluster.headers["authorization"][7:]):
        assert token.split("_", 2)[2] not in logs
    cluster.check_alive()


def test_a_revoked_or_expired_token_is_refused_by_every_jobmanager(
    cluster: ProcessCluster, two_jobmanagers: tuple[Proc, Proc]
) -> None:
    with cluster.client() as admin:
        revoked = admin.create_token("leaver", Role.VIEWER)
        # Long enough to be seen working on both JobManagers first on a loaded machine (3 s
        # ran out there once, at a load of 20), short enough not to stretch the test.
        expiring = admin.create_token("temp", Role.VIEWER, expires_in=10.0)

    def status(proc: Proc, token: str) -> int:
        headers = {"authorization": f"Bearer {token}"}
        return httpx.get(proc.address + "/v1/jobs", headers=headers, timeout=10).status_code

    for proc in two_jobmanagers:
        assert status(proc, expiring.token) == 200
    for proc in two_jobmanagers:
        assert status(proc, revoked.token) == 200
    with cluster.client() as admin:
        admin.revoke_token(revoked.info.id)
        assert revoked.info.id not in {t.id for t in admin.tokens()}
    for proc in two_jobmanagers:
        # Within the authenticator's cache time (2 s) on every JobManager.
        wait_until(lambda p=proc: status(p, revoked.token) == 401, 10, message="revoked")
        wait_until(lambda p=proc: status(p, expiring.token) == 401, 20, message="expired")
