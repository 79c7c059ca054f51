"""``steward cluster start|status|stop`` with the real processes, driven through the CLI as a
user would: start, see every process and one leader, submit and follow a job, stop (nothing
left running), start over (the result is still there). The 2+2 variant also kills the leading
JobManager and keeps using the cluster through the standby.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from e2e.cluster.cluster_cli import FAST, LONG_RUNNING, document, ok, steward
from steward.cluster.launcher import live_process
from steward.cluster.workdir import StateDir, load_state
from steward.ha.acl import DigestCredential
from support import wait_until

# Each test is a dozen `steward` processes one after another (0.8 to 1.1 CPU-s each, a Python
# start) and one or two clusters started: the failover test took 46 s at load 6, 82 s at load
# 10 and more than the suite's 300 s at load 16 to 20 (its last call had run 16 s of its 90 s
# when the time ran out); the restart test 195 s at load 15 to 19. No process fenced itself
# in those runs: the time is the CLI's starts.
pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(600)]


def assert_zookeeper_closed(workdir: Path) -> None:
    """Only the credential in .steward/zookeeper.digest reads the cluster's znodes."""
    state_dir = StateDir.of(workdir)
    state = load_state(state_dir)
    assert state is not None
    root = f"/steward/{state.cluster_id}"
    credential = DigestCredential.read(state_dir.zookeeper_digest)
    stranger = KazooClient(hosts=state.quorum)
    owner = KazooClient(hosts=state.quorum, auth_data=credential.auth_data)
    for client in (stranger, owner):
        client.start(timeout=15)
    try:
        with pytest.raises(NoAuthError):
            stranger.get_children(root)
        assert "leader" in owner.get_children(root)
    finally:
        for client in (stranger, owner):
            client.stop()
            client.close()


def nothing_runs(workdir: Path) -> bool:
    state = load_state(StateDir.of(workdir))
    assert state is not None
    return all(live_process(entry) is None for entry in state.processes)


def test_a_one_plus_one_cluster_runs_a_job_and_keeps_its_result_across_a_restart(
    workdir: Path,
) -> None:
    # Given a started cluster of 1 JobManager and 1 TaskManager
    ok(steward(workdir, *FAST, "cluster", "start", "--jobmanagers", "1", "--taskmanagers", "1"))
    # Then status shows every process alive, and the JobManager leads
    status = document(steward(workdir, "cluster", "status", "--json"))
    assert [(p["role"], p["alive"]) for p in status["processes"]] == [
        ("zookeeper", True),
        ("jobmanager", True),
        ("taskmanager", True),
    ]
    assert status["leader"] == "jm-1"
    # And its ZooKeeper state is closed to a client without the credential it made
    assert_zookeeper_closed(workdir)
    # When a job is submitted and followed (no options: the cluster is found from .steward)
    result = document(
        steward(workdir, "submit", str(LONG_RUNNING), "--json", "--", "--ticks", "2",
                "--interval", "0.2")
    )  # fmt: skip
    # Then it finished with its result
    assert result["state"] == "FINISHED"
    assert result["value"] == {"ticks": 2}
    job_id = result["job_id"]
    # And the finished job shows where it ran, and its log is at hand on this machine
    (attempt,) = document(steward(workdir, "status", job_id, "--json"))["attempts"]
    assert (attempt["taskmanager"], attempt["state"]) == ("tm-1", "FINISHED")
    log = ok(steward(workdir, "logs", job_id, "--tail", "50")).stdout
    assert "long_running: stopping after 2 ticks (attempt 1)" in log
    # When the cluster is stopped, nothing it started runs any more
    ok(steward(workdir, "cluster", "stop"))
    assert nothing_runs(workdir)
    assert steward(workdir, "cluster", "status").returncode == 1
    # When it is started again, the result is still there
    ok(steward(workdir, *FAST, "cluster", "start", "--jobmanagers", "1", "--taskmanagers", "1"))
    again = document(steward(workdir, "result", job_id, "--json"))
    assert (again["state"], again["value"]) == ("FINISHED", {"ticks": 2})
    listed = document(steward(workdir, "list", "--json"))
    assert [job["job_id"] for job in listed] == [job_id]
    ok(steward(workdir, "cluster", "stop"))
    assert nothing_runs(workdir)


def test_a_two_plus_two_cluster_survives_the_loss_of_its_leader(workdir: Path) -> None:
    # Given a cluster of 2 JobManagers and 2 TaskManagers
    ok(steward(workdir, *FAST, "cluster", "start"))
    status = document(steward(workdir, "cluster", "status", "--json"))
    jobmanagers = [p for p in status["processes"] if p["role"] == "jobmanager"]
    assert len(jobmanagers) == 2
    assert sum(p["leader"] for p in status["processes"]) == 1
    assert sum(p["role"] == "taskmanager" and p["alive"] for p in status["processes"]) == 2
    leader = next(p for p in jobmanagers if p["leader"])
    # And each process goes by its kind's name (ps, top, process accounting)
    kinds = {"jobmanager": "steward-jm", "taskmanager": "steward-tm"}
    for process in (p for p in status["processes"] if p["role"] in kinds):
        assert psutil.Process(process["pid"]).name() == kinds[process["role"]], process
    # And a finished job
    result = document(
        steward(workdir, "submit", str(LONG_RUNNING), "--json", "--", "--ticks", "1",
                "--interval", "0.1")
    )  # fmt: skip
    assert result["state"] == "FINISHED"
    # And steward doctor finds every invariant holding, asking a JobManager or on its own
    assert "every invariant holds" in ok(steward(workdir, "doctor")).stdout
    assert document(steward(workdir, "doctor", "--offline", "--json"))["findings"] == []
    # When a running job's graph is deleted from the storage behind Steward's back
    running = document(
        steward(workdir, "submit", str(LONG_RUNNING), "--detach", "--json", "--", "--ticks",
                "600", "--interval", "0.1")
    )  # fmt: skip
    (blob,) = StateDir.of(workdir).storage.glob(f"**/jobgraphs/{running['job_id']}/*")
    blob.unlink()
    # Then the doctor names it, says what to do, and exits 1
    found = steward(workdir, "doctor")
    assert found.returncode == 1, found.stdout + found.stderr
    assert "job-graph-unreadable" in found.stdout and running["job_id"] in found.stdout
    assert "Do: the job fails at the next recovery" in found.stdout
    ok(steward(workdir, "cancel", running["job_id"]))
    # When the leading JobManager is killed
    psutil.Process(leader["pid"]).send_signal(signal.SIGKILL)
    # Then the standby answers at once, and leads after the session timeout
    listed = document(steward(workdir, "list", "--json"))
    assert {job["job_id"] for job in listed} == {result["job_id"], running["job_id"]}

    def new_leader() -> str | None:
        answer = steward(workdir, "leader", "--json")
        found = json.loads(answer.stdout) if answer.returncode == 0 else None
        return found["id"] if found and found["id"] != leader["id"] else None

    survivor = wait_until(new_leader, 30, interval=0.5, message="a standby takes over")
    assert survivor in {p["id"] for p in jobmanagers}

    # And the leadership history shows both terms, each recorded once its leader recovered
    def both_terms() -> list[dict[str, object]] | None:
        terms = document(steward(workdir, "leader", "--history", "--json"))["history"]
        return terms if len(terms) == 2 else None

    first, second = wait_until(both_terms, 30, interval=0.5, message="the new term recorded")
    assert (first["contender"], second["contender"]) == (leader["id"], survivor)
    assert first["epoch"] < second["epoch"]
    assert second["adopted"] == 0 and second["ready_at"] >= second["granted_at"]
    # And status says a process is down
    down = steward(workdir, "cluster", "status", "--json")
    assert down.returncode == 1
    assert not next(p for p in json.loads(down.stdout)["processes"] if p["pid"] == leader["pid"])[
        "alive"
    ]
    ok(steward(workdir, "cluster", "stop"))
    assert nothing_runs(workdir)
