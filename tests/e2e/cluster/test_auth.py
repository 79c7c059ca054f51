"""Authentication and roles end to end (issue 13): real JobManagers and TaskManagers.

A stranger's request to any route of any JobManager is answered 401 and changes nothing in
ZooKeeper; roles hold on the leader and through a standby (whose forwarding carries the
caller's own identity); a revoked or expired token is refused by every JobManager; a rogue
TaskManager without the cluster's internal credential can neither heartbeat nor receive an
attempt; the audit log has a JSON line per action and never a token.

The testing kit gives every cluster its credentials (steward.testing.credentials), so every
other end-to-end test runs with authentication on too.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from acl_probes import started_client
from e2e.ticking import write_pipeline
from steward.client import Client
from steward.errors import ApiError
from steward.security.credentials import new_internal_secret, write_secret
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat
from steward.wire.states import AttemptState, JobState
from steward.wire.tokens import Role
from support import wait_until

pytestmark = pytest.mark.zookeeper

OPERATIONS_EXTRA = [("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/v1/nothing")]
SAMPLE = {"job_id": "some-job", "sha256": "0" * 64, "token_id": "0123456789ab"}


@pytest.fixture
def two_jobmanagers(process_cluster: ProcessCluster) -> tuple[Proc, Proc]:
    """A leader and a standby (in that order) and one TaskManager, ready. The failure rate
    limits are off: these tests send one wrong token to every route, and would otherwise see
    the 429 that tests/integration/jobmanager/test_rate_limits.py is about."""
    for key in ("per-address", "per-credential"):
        process_cluster.settings[f"security.rate-limits.auth-failures.{key}"] = "0"
    first = process_cluster.start_jobmanager("jm-1")
    leader = process_cluster.wait_ready(taskmanagers=0)
    assert leader.id == first.id
    standby = process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    wait_until(lambda: _readyz(standby), 30, message="the standby is ready")
    return first, standby


@pytest.fixture
def zk(process_cluster: ProcessCluster) -> Iterator[KazooClient]:
    """A kazoo client with the cluster's ZooKeeper credential (to look, never to change)."""
    quorum = process_cluster.settings["high-availability.zookeeper.quorum"]
    options = process_cluster.zookeeper_access.kazoo_options()
    with started_client(quorum, **options) as client:
        yield client


def _readyz(proc: Proc) -> bool:
    try:
        return httpx.get(proc.address + "/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


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
    process_cluster: ProcessCluster, two_jobmanagers: tuple[Proc, Proc], zk: KazooClient
) -> None:
    root = f"{process_cluster.settings['high-availability.zookeeper.root']}/" + str(
        process_cluster.settings["high-availability.cluster-id"]
    )
    with process_cluster.client() as client:
        client.create_token("someone", Role.SUBMITTER)  # a token exists to be guessed at
    before = _snapshot(zk, root)
    answers = []
    for proc in two_jobmanagers:
        operations = _operations(process_cluster, proc)
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
    process_cluster.check_alive()


def test_roles_hold_on_the_leader_and_through_a_standby_with_the_callers_identity(
    process_cluster: ProcessCluster, two_jobmanagers: tuple[Proc, Proc], tmp_path: Path
) -> None:
    leader, standby = two_jobmanagers
    pipeline = write_pipeline(tmp_path)
    truth = str(tmp_path / "truth.log")
    with process_cluster.client() as admin:
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
    with process_cluster.client() as admin:
        admin.cancel("alices-too")
        assert admin.wait("alices-too", timeout=60).state.value == "CANCELED"
        assert admin.job("alices-too").submitter == "alice"

    audit = [
        json.loads(line[line.index("{") :])
        for proc in two_jobmanagers
        for line in proc.log_text().splitlines()
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
    logs = "".join(proc.log_text() for proc in process_cluster.procs)
    for token in (viewer, alice, bob, process_cluster.headers["authorization"][7:]):
        assert token.split("_", 2)[2] not in logs
    process_cluster.check_alive()


def test_a_revoked_or_expired_token_is_refused_by_every_jobmanager(
    process_cluster: ProcessCluster, two_jobmanagers: tuple[Proc, Proc]
) -> None:
    with process_cluster.client() as admin:
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
    with process_cluster.client() as admin:
        admin.revoke_token(revoked.info.id)
        assert revoked.info.id not in {t.id for t in admin.tokens()}
    for proc in two_jobmanagers:
        # Within the authenticator's cache time (2 s) on every JobManager.
        wait_until(lambda p=proc: status(p, revoked.token) == 401, 10, message="revoked")
        wait_until(lambda p=proc: status(p, expiring.token) == 401, 20, message="expired")


def test_a_rogue_taskmanager_cannot_heartbeat_nor_receive_an_attempt(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    leader = process_cluster.start_jobmanager("jm-1")
    process_cluster.wait_ready(taskmanagers=0)
    wrong = tmp_path / "wrong.token"
    write_secret(wrong, new_internal_secret())
    rogue = process_cluster.start_taskmanager(
        "tm-rogue", slots=1, settings={"security.internal.token-file": str(wrong)}
    )
    wait_until(
        lambda: "heartbeat rejected" in rogue.log_text() and "status=401" in rogue.log_text(),
        30,
        message="the rogue's heartbeats are refused",
    )
    # A user's token does not make a heartbeat either.
    beat = Heartbeat(taskmanager="tm-rogue", address="http://x", slots=1, epoch=1)
    as_admin = httpx.post(
        leader.address + HEARTBEAT_PATH,
        content=beat.to_json(),
        headers=process_cluster.headers,
        timeout=10,
    )
    assert as_admin.status_code == 403

    truth = tmp_path / "truth.log"
    with process_cluster.client() as client:
        client.submit(write_pipeline(tmp_path), args=[str(truth), "1", "0.1"], job_id="kept")
        # Scheduling has had every chance: several heartbeat intervals of the rogue.
        rejected = rogue.log_text().count("heartbeat rejected")
        wait_until(
            lambda: rogue.log_text().count("heartbeat rejected") >= rejected + 5,
            30,
            message="more refused heartbeats",
        )
        assert "kept" not in rogue.log_text()
        assert not truth.exists()
        assert not list((tmp_path / "work" / "tm-rogue").glob("kept*"))

        rogue.signal(signal.SIGTERM)
        wait_until(lambda: not rogue.alive(), 20, message="rogue stopped")
        process_cluster.start_taskmanager("tm-good")
        result = client.wait("kept", timeout=90)
        assert result.state.value == "FINISHED"
        attempts = client.job("kept").attempts
        # An attempt placed on the rogue (its start command never collected) never started.
        assert [a.taskmanager for a in attempts if a.started_at is not None] == ["tm-good"]
        assert all(
            a.state is not AttemptState.FINISHED for a in attempts if a.taskmanager != "tm-good"
        )
    process_cluster.check_alive()
