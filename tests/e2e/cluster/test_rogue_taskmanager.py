"""A rogue TaskManager, without the cluster's internal credential, can neither heartbeat nor
receive an attempt (issue 13; the rest of authentication end to end: test_auth.py).
"""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest

from e2e.ticking import write_pipeline
from steward.security.credentials import new_internal_secret, write_secret
from steward.testing.processes import ProcessCluster
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat
from steward.wire.states import AttemptState
from support import wait_until

pytestmark = pytest.mark.zookeeper


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
